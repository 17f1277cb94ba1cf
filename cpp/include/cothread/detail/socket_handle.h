// detail::socket_handle<Open, Release, Close, Sockname>: what tcp_socket,
// tcp_listener and udp_socket share. It owns one socket key of a loop
// (cot_tcp or cot_udp) and closes it with `Close` when destroyed or assigned
// over; `Open` adopts a descriptor, `Release` gives it back. Move-only; a
// moved-from, closed or released handle has no loop and key 0, so its
// operations give EBADF. Closing twice is fine.
#ifndef COTHREAD_DETAIL_SOCKET_HANDLE_H_INCLUDED
#define COTHREAD_DETAIL_SOCKET_HANDLE_H_INCLUDED

#include <cothread.h>
#include <sys/socket.h>

#include <cstdint>
#include <utility>

#include "../endpoint.h"
#include "../error.h"

namespace cothread::detail {

/// The address a getsockname / getpeername of the C ABI gives.
template <typename F>
endpoint name_of(cot_loop *lp, std::uint64_t key, F get) {
    if (!lp) throw_error(COT_EBADF);
    sockaddr_storage ss;
    std::uint32_t len = sizeof ss;
    if (int r = get(lp, key, reinterpret_cast<sockaddr *>(&ss), &len); r < 0) throw_error(r);
    return endpoint(reinterpret_cast<sockaddr *>(&ss), len);
}

template <int (*Open)(cot_loop *, int, std::uint64_t *), int (*Release)(cot_loop *, std::uint64_t, int *),
          int (*Close)(cot_loop *, std::uint64_t), int (*Sockname)(cot_loop *, std::uint64_t, sockaddr *, std::uint32_t *)>
class socket_handle {
public:
    socket_handle(socket_handle &&o) noexcept
        : m_lp(std::exchange(o.m_lp, nullptr)), m_key(std::exchange(o.m_key, 0)) {}
    socket_handle &operator=(socket_handle &&o) noexcept {
        if (this != &o) {
            close();
            m_lp = std::exchange(o.m_lp, nullptr);
            m_key = std::exchange(o.m_key, 0);
        }
        return *this;
    }
    ~socket_handle() { close(); }

    /// Closes now; operations waiting on it end with an error at the loop's
    /// next turn. Closing twice is fine.
    void close() noexcept {
        if (m_key) Close(m_lp, m_key);
        m_lp = nullptr;
        m_key = 0;
    }

    /// Gives the descriptor back, open and out of the loop: the caller's to
    /// use and close. The handle is empty after. Throws, changing nothing,
    /// device_or_resource_busy while an operation waits on it, and
    /// bad_file_descriptor if it is empty. Nodiscard: a descriptor dropped
    /// is leaked.
    [[nodiscard]] int release() {
        int fd = -1;
        if (int r = Release(loop_or_throw(), m_key, &fd); r < 0) throw_error(r);
        m_lp = nullptr;
        m_key = 0;
        return fd;
    }

    /// The address it is bound to.
    endpoint local_endpoint() const { return name_of(m_lp, m_key, Sockname); }

    /// Lets go of the key without closing it: for a key the C API took over
    /// (a handoff). The handle is empty after.
    void forget() noexcept {
        m_lp = nullptr;
        m_key = 0;
    }

    explicit operator bool() const noexcept { return m_key != 0; }
    std::uint64_t native() const noexcept { return m_key; }
    cot_loop *native_loop() const noexcept { return m_lp; }

protected:
    socket_handle() noexcept = default;
    /// Adopts `key` of `lp` (key 0: none).
    socket_handle(cot_loop *lp, std::uint64_t key) noexcept : m_lp(key ? lp : nullptr), m_key(key) {}

    /// The key of descriptor `fd`, adopted by `lp`; throws (not_a_socket,
    /// invalid_argument for another type, bad_file_descriptor), leaving `fd`
    /// the caller's.
    static std::uint64_t adopt(cot_loop *lp, int fd) {
        std::uint64_t key = 0;
        if (int r = Open(lp, fd, &key); r < 0) throw_error(r);
        return key;
    }

    cot_loop *loop_or_throw() const {
        if (!m_lp) throw_error(COT_EBADF);
        return m_lp;
    }

    cot_loop *m_lp = nullptr;   // null: no socket
    std::uint64_t m_key = 0;
};

}  // namespace cothread::detail

#endif
