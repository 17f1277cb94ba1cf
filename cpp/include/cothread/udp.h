// udp_socket: a UDP socket (IPv4, IPv6) of a cothread::loop, awaited by its
// tasks. recv_from / send_to take a datagram from anyone / to anyone; after
// connect(ep), recv / send talk to that peer only. Each operation tries the
// non-blocking call first (detail/op.h); errors throw std::system_error in
// cothread::category(), or fill a trailing std::error_code&. One receive and
// one send may wait at once; a second gets device_or_resource_busy.
// Move-only; closes when destroyed (on the loop's thread, before the loop).
// A socket made elsewhere is adopted by udp_socket(lp, fd); release() gives
// the descriptor back.
#ifndef COTHREAD_UDP_H_INCLUDED
#define COTHREAD_UDP_H_INCLUDED

#include <cothread.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <type_traits>
#include <utility>

#include "deadline.h"
#include "detail/op.h"
#include "detail/socket_handle.h"
#include "endpoint.h"
#include "error.h"
#include "loop.h"

namespace cothread {

namespace detail {

inline socklen_t size_of_family(int family) noexcept {
    return family == AF_INET6 ? sizeof(sockaddr_in6) : family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_storage);
}

// recv_from (From: a pair with the sender) or recv (the length only). A
// datagram longer than the buffer is cut to it.
template <bool From>
class udp_recv_op : public op<udp_recv_op<From>, std::conditional_t<From, std::pair<std::size_t, endpoint>, std::size_t>> {
    using base = op<udp_recv_op<From>, std::conditional_t<From, std::pair<std::size_t, endpoint>, std::size_t>>;

public:
    using result = std::conditional_t<From, std::pair<std::size_t, endpoint>, std::size_t>;
    udp_recv_op(cot_loop *lp, cot_udp s, std::span<std::byte> b, deadline dl, std::error_code *ec) noexcept
        : base(lp, op_kind::udp, COT_READABLE, dl, ec), m_buf(b) {
        this->m_key = s;
    }
    std::int64_t try_now() noexcept {
        sockaddr_storage ss;
        std::int64_t r = cot_udp_try_recv(this->m_lp, this->m_key, m_buf.data(), m_buf.size(), From ? &ss : nullptr);
        if constexpr (From) {
            if (r >= 0) m_from = endpoint(reinterpret_cast<sockaddr *>(&ss), size_of_family(ss.ss_family));
        }
        return r;
    }
    int start(std::uint64_t ns) noexcept {
        return cot_udp_recv(this->m_lp, this->m_key, m_buf.data(), m_buf.size(), ns, &on_recv, this);
    }
    result done() noexcept {
        if constexpr (From) return {static_cast<std::size_t>(this->m_res), m_from};
        else return static_cast<std::size_t>(this->m_res);
    }
    result failed() noexcept { return {}; }

private:
    static void on_recv(cot_loop *, cot_udp, std::int64_t n, const sockaddr *from, std::uint32_t len, void *data) {
        auto *self = static_cast<udp_recv_op *>(data);
        if constexpr (From) {
            if (n >= 0 && from) self->m_from = endpoint(from, len);
        }
        self->finish(n);
    }
    std::span<std::byte> m_buf;
    endpoint m_from;
};

// One datagram, to `to` (or, with no address, the connected peer).
class udp_send_op : public op<udp_send_op, std::size_t> {
public:
    udp_send_op(cot_loop *lp, cot_udp s, std::span<const std::byte> b, const endpoint *to, deadline dl,
                std::error_code *ec) noexcept
        : op(lp, op_kind::udp, COT_WRITABLE, dl, ec), m_buf(b) {
        m_key = s;
        if (to) m_to = *to;
    }
    std::int64_t try_now() noexcept {
        return cot_udp_try_send(m_lp, m_key, data(), m_buf.size(), to(), m_to.size());
    }
    int start(std::uint64_t ns) noexcept {
        return cot_udp_send(m_lp, m_key, data(), m_buf.size(), to(), m_to.size(), ns, &on_socket, this);
    }
    std::size_t done() noexcept { return static_cast<std::size_t>(m_res); }
    std::size_t failed() noexcept { return 0; }

private:
    // An empty datagram is fine; the C calls want a pointer all the same.
    const void *data() const noexcept {
        static const std::byte none{};
        return m_buf.empty() ? &none : m_buf.data();
    }
    const sockaddr *to() const noexcept { return m_to.size() ? m_to.data() : nullptr; }
    std::span<const std::byte> m_buf;
    endpoint m_to;
};

}  // namespace detail

/// How udp_socket::bind makes its socket:
/// `udp_socket::bind(lp, ep, {.reuse_port = true})`.
struct udp_options {
    /// SO_REUSEADDR: share the port with other sockets that set it (for
    /// multicast receivers).
    bool reuse_address = false;
    /// SO_REUSEPORT: several sockets bind the same port, each with it set,
    /// and the kernel spreads the datagrams among them by their sender: one
    /// socket per loop, each loop on its own thread.
    bool reuse_port = false;
};

// close(), release(), operator bool, native(), native_loop(),
// local_endpoint() and the moves come from detail::socket_handle.
class udp_socket
    : public detail::socket_handle<&cot_udp_open, &cot_udp_release, &cot_udp_close, &cot_udp_getsockname> {
public:
    udp_socket() noexcept = default;
    /// Adopts descriptor `fd`, a datagram socket, made non-blocking; the
    /// socket closes it, or release() gives it back. Throws not_a_socket,
    /// invalid_argument (a socket of another type) or bad_file_descriptor;
    /// then `fd` stays the caller's.
    explicit udp_socket(loop &lp, int fd) : socket_handle(lp.native(), adopt(lp.native(), fd)) {}

    /// An unbound socket of `family` (AF_INET, AF_INET6): the first send
    /// binds it to a free port.
    static udp_socket open(loop &lp, int family) {
        udp_socket u;
        int r = cot_udp_init(lp.native(), family, &u.m_key);
        if (r < 0) throw_error(r);
        u.m_lp = lp.native();
        return u;
    }
    /// A socket bound to `ep` (port 0 picks one).
    static udp_socket bind(loop &lp, const endpoint &ep) { return bind(lp, ep, udp_options{}); }
    /// A socket bound to `ep`, `opt`'s options set first.
    static udp_socket bind(loop &lp, const endpoint &ep, const udp_options &opt) {
        udp_socket u = open(lp, ep.family());
        int one = 1, r = 0;
        if (opt.reuse_address) r = cot_udp_setopt(u.m_lp, u.m_key, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (r == 0 && opt.reuse_port) r = cot_udp_reuseport(u.m_lp, u.m_key, 1);
        if (r == 0) r = cot_udp_bind(u.m_lp, u.m_key, ep.data(), ep.size());
        if (r < 0) throw_error(r);
        return u;
    }

    /// Sets the peer of send / recv (does not wait).
    void connect(const endpoint &ep) {
        int r = cot_udp_connect(loop_or_throw(), m_key, ep.data(), ep.size());
        if (r < 0) throw_error(r);
    }

    /// `auto [n, from] = co_await u.recv_from(buf)`: one datagram.
    detail::udp_recv_op<true> recv_from(std::span<std::byte> buf, deadline dl = deadline::never()) noexcept {
        return {m_lp, m_key, buf, dl, nullptr};
    }
    detail::udp_recv_op<true> recv_from(std::span<std::byte> buf, deadline dl, std::error_code &ec) noexcept {
        return {m_lp, m_key, buf, dl, &ec};
    }
    /// One datagram from the connected peer: its length.
    detail::udp_recv_op<false> recv(std::span<std::byte> buf, deadline dl = deadline::never()) noexcept {
        return {m_lp, m_key, buf, dl, nullptr};
    }
    detail::udp_recv_op<false> recv(std::span<std::byte> buf, deadline dl, std::error_code &ec) noexcept {
        return {m_lp, m_key, buf, dl, &ec};
    }
    /// One datagram to `to`: its length.
    detail::udp_send_op send_to(std::span<const std::byte> buf, const endpoint &to, deadline dl = deadline::never()) noexcept {
        return {m_lp, m_key, buf, &to, dl, nullptr};
    }
    detail::udp_send_op send_to(std::span<const std::byte> buf, const endpoint &to, deadline dl, std::error_code &ec) noexcept {
        return {m_lp, m_key, buf, &to, dl, &ec};
    }
    /// One datagram to the connected peer.
    detail::udp_send_op send(std::span<const std::byte> buf, deadline dl = deadline::never()) noexcept {
        return {m_lp, m_key, buf, nullptr, dl, nullptr};
    }
    detail::udp_send_op send(std::span<const std::byte> buf, deadline dl, std::error_code &ec) noexcept {
        return {m_lp, m_key, buf, nullptr, dl, &ec};
    }
};

}  // namespace cothread

#endif
