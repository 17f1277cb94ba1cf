// tcp_socket and tcp_listener: TCP (IPv4, IPv6) and Unix stream sockets of a
// cothread::loop, awaited by its tasks. Each operation tries the
// non-blocking call first and suspends only if it would block
// (detail/op.h). Errors throw std::system_error in cothread::category();
// each awaitable operation has a form with a trailing std::error_code& that
// throws nothing; `.stop_on(tok)` gives one operation a stop token of its
// own (detail/op.h). One read and one write may wait at once (full duplex); a
// second reader or writer gets std::errc::device_or_resource_busy. A
// moved-from, closed or released socket gives std::errc::bad_file_descriptor.
// Sockets are move-only and close when destroyed: destroy them on the loop's
// thread, before the loop. A socket made elsewhere is adopted by a
// constructor from its descriptor; release() gives the descriptor back.
#ifndef COTHREAD_TCP_H_INCLUDED
#define COTHREAD_TCP_H_INCLUDED

#include <cothread.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <system_error>
#include <utility>

#include "deadline.h"
#include "detail/op.h"
#include "detail/socket_handle.h"
#include "endpoint.h"
#include "error.h"
#include "loop.h"
#include "task.h"

namespace cothread {

class tcp_socket;

namespace detail {

inline void check(int r) {
    if (r < 0) throw_error(r);
}

class tcp_read_op : public op<tcp_read_op, std::size_t> {
public:
    tcp_read_op(cot_loop *lp, cot_tcp s, std::span<std::byte> b, deadline dl, std::error_code *ec) noexcept
        : op(lp, op_kind::tcp, COT_READABLE, dl, ec), m_buf(b) {
        m_key = s;
    }
    // A socket the last receive left empty is not tried: that recv would
    // most likely fail; the read waits for readiness instead.
    std::int64_t try_now() noexcept {
        if (cot_tcp_drained(m_lp, m_key) == 1) return COT_EAGAIN;
        return cot_tcp_try_read(m_lp, m_key, m_buf.data(), m_buf.size());
    }
    int start(std::uint64_t ns) noexcept {
        return cot_tcp_read(m_lp, m_key, m_buf.data(), m_buf.size(), ns, &on_socket, this);
    }
    std::size_t done() noexcept { return static_cast<std::size_t>(m_res); }
    std::size_t failed() noexcept { return 0; }

private:
    std::span<std::byte> m_buf;
};

// Writes all: what the try sends now, then the rest through
// cot_tcp_write_nocopy, from the caller's buffer, which lives until the
// co_await ends anyway: nothing is copied. On error the count is what the
// try sent.
class tcp_write_op : public op<tcp_write_op, std::size_t> {
public:
    tcp_write_op(cot_loop *lp, cot_tcp s, std::span<const std::byte> b, deadline dl, std::error_code *ec) noexcept
        : op(lp, op_kind::tcp, COT_WRITABLE, dl, ec), m_buf(b) {
        m_key = s;
    }
    std::int64_t try_now() noexcept {
        std::int64_t r = cot_tcp_try_write(m_lp, m_key, m_buf.data(), m_buf.size());
        if (r < 0) return r;
        m_sent = static_cast<std::size_t>(r);
        return m_sent == m_buf.size() ? r : COT_EAGAIN;
    }
    int start(std::uint64_t ns) noexcept {
        return cot_tcp_write_nocopy(m_lp, m_key, m_buf.data() + m_sent, m_buf.size() - m_sent, ns, &on_socket, this);
    }
    std::size_t done() noexcept { return m_buf.size(); }
    std::size_t failed() noexcept { return m_sent; }

private:
    std::span<const std::byte> m_buf;
    std::size_t m_sent = 0;
};

class tcp_connect_op;
class tcp_accept_op;

}  // namespace detail

namespace detail {
// What tcp_socket and tcp_listener hold: a cot_tcp.
using tcp_handle = socket_handle<&cot_tcp_open, &cot_tcp_release, &cot_tcp_close, &cot_tcp_getsockname>;
}  // namespace detail

// close(), release(), operator bool, native(), native_loop(),
// local_endpoint() and the moves come from detail::socket_handle.
class tcp_socket : public detail::tcp_handle {
public:
    /// No socket (operations give bad_file_descriptor).
    tcp_socket() noexcept = default;
    /// Adopts `key`, a cot_tcp of `lp` (connected).
    tcp_socket(cot_loop *lp, cot_tcp key) noexcept : socket_handle(lp, key) {}

    /// Takes the connection out of its loop, with the bytes it buffered,
    /// for another loop to import (cot_tcp_import; loop_group's hand_off
    /// moves a connection in one call). On its loop's thread. Empty after. Throws,
    /// changing nothing, device_or_resource_busy while an operation waits
    /// on it, bad_file_descriptor if empty. Nodiscard: free it with
    /// cot_tcp_exported_free if it is not imported.
    [[nodiscard]] cot_tcp_exported *export_native() {
        cot_tcp_exported *ex = nullptr;
        detail::check(cot_tcp_export(loop_or_throw(), m_key, &ex));
        forget();
        return ex;
    }
    /// Adopts descriptor `fd`, a connected stream socket (TCP or Unix), made
    /// non-blocking; the socket closes it, or release() gives it back.
    /// Throws not_a_socket, invalid_argument (a socket of another type) or
    /// bad_file_descriptor; then `fd` stays the caller's.
    explicit tcp_socket(loop &lp, int fd) : socket_handle(lp.native(), adopt(lp.native(), fd)) {}

    /// `co_await tcp_socket::connect(lp, ep)`: a connected socket.
    static detail::tcp_connect_op connect(loop &lp, const endpoint &ep, deadline dl = deadline::never());
    static detail::tcp_connect_op connect(loop &lp, const endpoint &ep, std::error_code &ec);
    static detail::tcp_connect_op connect(loop &lp, const endpoint &ep, deadline dl, std::error_code &ec);

    /// What comes, at most buf.size() bytes; 0 at the end of the stream.
    detail::tcp_read_op read(std::span<std::byte> buf, deadline dl = deadline::never()) noexcept {
        return {m_lp, m_key, buf, dl, nullptr};
    }
    detail::tcp_read_op read(std::span<std::byte> buf, std::error_code &ec) noexcept {
        return {m_lp, m_key, buf, deadline::never(), &ec};
    }
    detail::tcp_read_op read(std::span<std::byte> buf, deadline dl, std::error_code &ec) noexcept {
        return {m_lp, m_key, buf, dl, &ec};
    }
    detail::tcp_read_op read(std::span<char> buf, deadline dl = deadline::never()) noexcept {
        return read(std::as_writable_bytes(buf), dl);
    }
    detail::tcp_read_op read(std::span<char> buf, std::error_code &ec) noexcept {
        return read(std::as_writable_bytes(buf), ec);
    }
    detail::tcp_read_op read(std::span<char> buf, deadline dl, std::error_code &ec) noexcept {
        return read(std::as_writable_bytes(buf), dl, ec);
    }

    /// Fills `buf` (reads until full, all before `dl`); returns buf.size().
    /// The end of the stream first is std::errc::broken_pipe; the
    /// error_code form returns the count read before the error.
    task<std::size_t> read_exact(std::span<std::byte> buf, deadline dl = deadline::never()) {
        return read_exact_impl(buf, dl, nullptr);
    }
    task<std::size_t> read_exact(std::span<std::byte> buf, deadline dl, std::error_code &ec) {
        return read_exact_impl(buf, dl, &ec);
    }

    /// Writes all of `buf`; returns buf.size(). The error_code form returns
    /// the count surely sent before the error.
    detail::tcp_write_op write(std::span<const std::byte> buf, deadline dl = deadline::never()) noexcept {
        return {m_lp, m_key, buf, dl, nullptr};
    }
    detail::tcp_write_op write(std::span<const std::byte> buf, std::error_code &ec) noexcept {
        return {m_lp, m_key, buf, deadline::never(), &ec};
    }
    detail::tcp_write_op write(std::span<const std::byte> buf, deadline dl, std::error_code &ec) noexcept {
        return {m_lp, m_key, buf, dl, &ec};
    }
    detail::tcp_write_op write(std::string_view s, deadline dl = deadline::never()) noexcept {
        return write(std::as_bytes(std::span(s)), dl);
    }
    detail::tcp_write_op write(std::string_view s, std::error_code &ec) noexcept {
        return write(std::as_bytes(std::span(s)), ec);
    }
    detail::tcp_write_op write(std::string_view s, deadline dl, std::error_code &ec) noexcept {
        return write(std::as_bytes(std::span(s)), dl, ec);
    }

    /// Ends the writing side now (the peer reads the end of the stream).
    void shutdown_write() { detail::check(cot_tcp_shutdown(loop_or_throw(), m_key)); }
    void set_nodelay(bool on) { detail::check(cot_tcp_nodelay(loop_or_throw(), m_key, on ? 1 : 0)); }
    endpoint peer_endpoint() const { return detail::name_of(m_lp, m_key, &cot_tcp_getpeername); }

private:
    task<std::size_t> read_exact_impl(std::span<std::byte> buf, deadline dl, std::error_code *ec) {
        // One deadline for all the reads: a duration becomes a time point now.
        if (m_lp && !dl.is_never()) {
            std::uint64_t ns = 0;
            cot_loop_update_time(m_lp);
            if (dl.timeout_ns(m_lp, ns) == 0)
                dl = deadline(deadline::clock::time_point(std::chrono::nanoseconds(cot_loop_now(m_lp) + ns)));
        }
        std::size_t got = 0;
        std::error_code e;
        do {  // once for an empty buffer: the read refuses it
            std::size_t n = co_await read(buf.subspan(got), dl, e);
            if (!e && n == 0) e = make_error(COT_EPIPE);
            if (e) {
                if (!ec) throw std::system_error(e);
                *ec = e;
                co_return got;
            }
            got += n;
        } while (got < buf.size());
        if (ec) ec->clear();
        co_return got;
    }
};

namespace detail {

// Makes the socket at start; the awaiter owns it until await_resume.
class tcp_connect_op : public op<tcp_connect_op, tcp_socket> {
public:
    tcp_connect_op(cot_loop *lp, const endpoint &ep, deadline dl, std::error_code *ec) noexcept
        : op(lp, op_kind::tcp, COT_WRITABLE, dl, ec), m_ep(ep) {}
    tcp_connect_op(tcp_connect_op &&) = default;  // before the await: no socket yet
    ~tcp_connect_op() {
        if (m_key) cot_tcp_close(m_lp, m_key);
    }
    std::int64_t try_now() noexcept { return COT_EAGAIN; }
    int start(std::uint64_t ns) noexcept {
        if (int e = cot_tcp_init(m_lp, m_ep.family(), &m_key)) return e;
        int e = cot_tcp_connect(m_lp, m_key, m_ep.data(), m_ep.size(), ns, &on_socket, this);
        if (e) close();
        return e;
    }
    tcp_socket done() noexcept { return tcp_socket(m_lp, std::exchange(m_key, 0)); }
    tcp_socket failed() noexcept {
        close();
        return {};
    }

private:
    void close() noexcept {
        if (m_key) cot_tcp_close(m_lp, std::exchange(m_key, 0));
    }
    endpoint m_ep;
};

class tcp_accept_op : public op<tcp_accept_op, tcp_socket> {
public:
    tcp_accept_op(cot_loop *lp, cot_tcp s, deadline dl, std::error_code *ec) noexcept
        : op(lp, op_kind::tcp, COT_READABLE, dl, ec) {
        m_key = s;
    }
    std::int64_t try_now() noexcept { return cot_tcp_try_accept(m_lp, m_key, &m_client); }
    int start(std::uint64_t ns) noexcept { return cot_tcp_accept(m_lp, m_key, ns, &on_accept, this); }
    tcp_socket done() noexcept { return tcp_socket(m_lp, m_client); }
    tcp_socket failed() noexcept { return {}; }

private:
    static void on_accept(cot_loop *, cot_tcp, int status, cot_tcp client, void *data) {
        auto *self = static_cast<tcp_accept_op *>(data);
        self->m_client = client;
        self->finish(status);
    }
    cot_tcp m_client = 0;
};

}  // namespace detail

inline detail::tcp_connect_op tcp_socket::connect(loop &lp, const endpoint &ep, deadline dl) {
    return {lp.native(), ep, dl, nullptr};
}
inline detail::tcp_connect_op tcp_socket::connect(loop &lp, const endpoint &ep, std::error_code &ec) {
    return {lp.native(), ep, deadline::never(), &ec};
}
inline detail::tcp_connect_op tcp_socket::connect(loop &lp, const endpoint &ep, deadline dl, std::error_code &ec) {
    return {lp.native(), ep, dl, &ec};
}

/// How tcp_listener::bind makes its socket:
/// `tcp_listener::bind(lp, ep, {.reuse_port = true})`.
struct listen_options {
    /// The queue of connections not accepted yet.
    int backlog = 511;
    /// SO_REUSEADDR (IP only): a restarted server binds its port at once,
    /// whatever connections of the last run linger.
    bool reuse_address = true;
    /// SO_REUSEPORT: several listeners bind the same port, each with it
    /// set, and the kernel spreads the connections among them: one
    /// listener per loop, each loop on its own thread.
    bool reuse_port = false;
};

class tcp_listener : public detail::tcp_handle {
public:
    tcp_listener() noexcept = default;
    /// Adopts descriptor `fd`, a listening stream socket (bound with options
    /// of your own), as tcp_socket(lp, fd) does.
    explicit tcp_listener(loop &lp, int fd) : socket_handle(lp.native(), adopt(lp.native(), fd)) {}

    /// Binds `ep` (SO_REUSEADDR for IP; port 0 picks one) and listens.
    /// Throws on failure (address_in_use, ...).
    static tcp_listener bind(loop &lp, const endpoint &ep, int backlog = 511) {
        listen_options o;
        o.backlog = backlog;
        return bind(lp, ep, o);
    }
    /// Binds `ep` with `opt`'s options set first, and listens. Throws on
    /// failure (address_in_use: the port is taken by a socket without
    /// reuse_port, or `opt` lacks it).
    static tcp_listener bind(loop &lp, const endpoint &ep, const listen_options &opt) {
        tcp_listener l;
        l.m_lp = lp.native();
        detail::check(cot_tcp_init(l.m_lp, ep.family(), &l.m_key));
        if (opt.reuse_address && (ep.family() == AF_INET || ep.family() == AF_INET6)) {
            int one = 1;
            detail::check(cot_tcp_setopt(l.m_lp, l.m_key, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
        }
        if (opt.reuse_port) detail::check(cot_tcp_reuseport(l.m_lp, l.m_key, 1));
        detail::check(cot_tcp_bind(l.m_lp, l.m_key, ep.data(), ep.size()));
        detail::check(cot_tcp_listen(l.m_lp, l.m_key, opt.backlog));
        return l;
    }

    /// `co_await l.accept()`: the next connection.
    detail::tcp_accept_op accept(deadline dl = deadline::never()) noexcept { return {m_lp, m_key, dl, nullptr}; }
    detail::tcp_accept_op accept(std::error_code &ec) noexcept { return {m_lp, m_key, deadline::never(), &ec}; }
    detail::tcp_accept_op accept(deadline dl, std::error_code &ec) noexcept { return {m_lp, m_key, dl, &ec}; }
};

}  // namespace cothread

#endif
