// endpoint: a socket address (IPv4, IPv6 or a Unix path) held by value in a
// sockaddr_storage, for the socket calls (data(), size()). Built from text
// (endpoint::v4("127.0.0.1", 80), v6("::1", 80), unix_path("/tmp/s")) or
// from what the system returned (endpoint(addr, len)). A bad address throws
// std::system_error with std::errc::invalid_argument.
#ifndef COTHREAD_ENDPOINT_H_INCLUDED
#define COTHREAD_ENDPOINT_H_INCLUDED

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <system_error>

namespace cothread {

class endpoint {
public:
    /// No address (family() == AF_UNSPEC).
    endpoint() noexcept { std::memset(&m_addr, 0, sizeof m_addr); }

    /// A copy of `len` bytes of `addr` (what accept, getsockname, ... gave).
    endpoint(const sockaddr *addr, socklen_t len) : endpoint() {
        if (!addr || len > sizeof m_addr) invalid();
        std::memcpy(&m_addr, addr, len);
        m_len = len;
    }

    /// An IPv4 address in dotted form ("0.0.0.0": any).
    static endpoint v4(std::string_view host, std::uint16_t port) {
        endpoint e;
        auto *a = e.as<sockaddr_in>();
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        if (inet_pton(AF_INET, std::string(host).c_str(), &a->sin_addr) != 1) invalid();
        e.m_len = sizeof(sockaddr_in);
        return e;
    }

    /// An IPv6 address in text form ("::": any).
    static endpoint v6(std::string_view host, std::uint16_t port) {
        endpoint e;
        auto *a = e.as<sockaddr_in6>();
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        if (inet_pton(AF_INET6, std::string(host).c_str(), &a->sin6_addr) != 1) invalid();
        e.m_len = sizeof(sockaddr_in6);
        return e;
    }

    /// A Unix socket's path (not `unix`: g++ defines that macro in GNU mode).
    /// Empty or too long (107 bytes and more) is refused.
    static endpoint unix_path(std::string_view path) {
        endpoint e;
        auto *a = e.as<sockaddr_un>();
        if (path.empty() || path.size() >= sizeof a->sun_path || path.find('\0') != path.npos) invalid();
        a->sun_family = AF_UNIX;
        std::memcpy(a->sun_path, path.data(), path.size());
        e.m_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
        return e;
    }

    int family() const noexcept { return m_addr.ss_family; }

    /// The port (host order); 0 for a Unix path.
    std::uint16_t port() const noexcept {
        switch (family()) {
        case AF_INET: return ntohs(as<sockaddr_in>()->sin_port);
        case AF_INET6: return ntohs(as<sockaddr_in6>()->sin6_port);
        default: return 0;
        }
    }

    /// "1.2.3.4:80", "[::1]:80", the path, or "" for no address.
    std::string to_string() const {
        char text[INET6_ADDRSTRLEN] = {};
        std::string out;
        switch (family()) {
        case AF_INET:
            inet_ntop(AF_INET, &as<sockaddr_in>()->sin_addr, text, sizeof text);
            out.append(text);
            break;
        case AF_INET6:
            inet_ntop(AF_INET6, &as<sockaddr_in6>()->sin6_addr, text, sizeof text);
            out.append(1, '[').append(text).append(1, ']');
            break;
        case AF_UNIX: return std::string(path());
        default: return out;
        }
        // append, not operator+: g++ 12 warns falsely (-Wrestrict) on the latter
        out.append(1, ':').append(std::to_string(port()));
        return out;
    }

    const sockaddr *data() const noexcept { return reinterpret_cast<const sockaddr *>(&m_addr); }
    socklen_t size() const noexcept { return m_len; }

    /// Same family, address and port (IPv6: and scope); same path.
    friend bool operator==(const endpoint &a, const endpoint &b) noexcept {
        if (a.family() != b.family()) return false;
        switch (a.family()) {
        case AF_INET: {
            auto *x = a.as<sockaddr_in>(), *y = b.as<sockaddr_in>();
            return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
        }
        case AF_INET6: {
            auto *x = a.as<sockaddr_in6>(), *y = b.as<sockaddr_in6>();
            return x->sin6_port == y->sin6_port && x->sin6_scope_id == y->sin6_scope_id &&
                   std::memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0;
        }
        case AF_UNIX: return a.path() == b.path();
        default: return true;
        }
    }

private:
    [[noreturn]] static void invalid() { throw std::system_error(std::make_error_code(std::errc::invalid_argument)); }

    template <typename T>
    T *as() noexcept {
        return reinterpret_cast<T *>(&m_addr);
    }
    template <typename T>
    const T *as() const noexcept {
        return reinterpret_cast<const T *>(&m_addr);
    }

    // The path up to its NUL or the end of the address (an unnamed socket: "").
    std::string_view path() const noexcept {
        auto *a = as<sockaddr_un>();
        std::size_t off = offsetof(sockaddr_un, sun_path);
        std::size_t max = m_len > off ? m_len - off : 0;
        return std::string_view(a->sun_path, strnlen(a->sun_path, max));
    }

    sockaddr_storage m_addr;
    socklen_t m_len = 0;
};

}  // namespace cothread

#endif
