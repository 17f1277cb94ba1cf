// Sockets made by hand, adopted from their descriptors (tcp_listener(lp, fd),
// tcp_socket(lp, fd), udp_socket(lp, fd)) and given back (release()): a
// SO_REUSEPORT listener accepting and echoing, a connected socket, a
// released descriptor used with plain read/write, descriptors refused (a
// pipe, a file, the other socket type, -1, a closed one) and left as they
// were, a release refused while an operation waits, and listeners and UDP
// sockets bound with reuse_port sharing a port.
#include <cothread/endpoint.h>
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>
#include <cothread/udp.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>
#include <system_error>
#include <utility>

#include "check.h"

using namespace std::chrono_literals;
using cothread::endpoint;
using cothread::task;
using cothread::tcp_listener;
using cothread::tcp_socket;
using cothread::udp_socket;

static bool nonblocking(int fd) { return (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0; }
static bool is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

// The code `f` throws, or none.
template <typename F>
static std::error_code error_of(F f) {
    try {
        f();
    } catch (const std::system_error &e) {
        return e.code();
    }
    return {};
}

// A plain TCP listener on 127.0.0.1 and a free port, with SO_REUSEPORT.
static int plain_listener() {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    CHECK(fd >= 0);
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one), 0);
    endpoint ep = endpoint::v4("127.0.0.1", 0);
    CHECK_EQ(bind(fd, ep.data(), ep.size()), 0);
    CHECK_EQ(listen(fd, 8), 0);
    return fd;
}

// Reads exactly `n` bytes from `fd`, blocking or not: poll(2) waits.
static std::string read_all(int fd, std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t got = 0; got < n;) {
        pollfd p{fd, POLLIN, 0};
        CHECK_EQ(poll(&p, 1, 5000), 1);
        ssize_t r = read(fd, s.data() + got, n - got);
        CHECK(r > 0);
        got += static_cast<std::size_t>(r);
    }
    return s;
}

static task<void> echo_one(tcp_socket s) {
    std::byte buf[64];
    std::size_t n = co_await s.read(buf, 5s);
    co_await s.write(std::span(buf).first(n), 5s);
}

static task<std::string> serve_and_ask(tcp_listener &l) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    tcp_socket c = co_await tcp_socket::connect(lp, l.local_endpoint(), 5s);
    lp.spawn_detached(echo_one(co_await l.accept(5s)));
    co_await c.write("hello", 5s);
    std::string back(5, '\0');
    co_await c.read_exact(std::as_writable_bytes(std::span(back)), 5s);
    co_return back;
}

static void test_adopted_listener() {
    cothread::loop lp;
    int fd = plain_listener();
    CHECK(!nonblocking(fd));
    tcp_listener l(lp, fd);
    CHECK(l);
    CHECK(nonblocking(fd));
    CHECK(l.local_endpoint().port() != 0);
    CHECK(cothread::sync_wait(lp, serve_and_ask(l)) == "hello");
    l.close();
    CHECK(!is_open(fd));  // adopted: closed with the listener
}

// A connected socket adopted reads and writes; released, its descriptor
// works with plain read/write and the caller closes it.
static task<void> talk(tcp_socket &s, int peer) {
    co_await s.write("ping", 5s);
    CHECK(read_all(peer, 4) == "ping");
    CHECK_EQ(write(peer, "pong", 4), 4);
    std::string got(4, '\0');
    co_await s.read_exact(std::as_writable_bytes(std::span(got)), 5s);
    CHECK(got == "pong");
}

static void test_adopted_connection_then_release() {
    cothread::loop lp;
    int l = plain_listener();
    sockaddr_storage at;
    socklen_t len = sizeof at;
    CHECK_EQ(getsockname(l, reinterpret_cast<sockaddr *>(&at), &len), 0);
    int mine = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_EQ(connect(mine, reinterpret_cast<sockaddr *>(&at), len), 0);
    int peer = accept(l, nullptr, nullptr);
    CHECK(peer >= 0);
    close(l);

    tcp_socket s(lp, mine);
    cothread::sync_wait(lp, talk(s, peer));
    int fd = s.release();
    CHECK_EQ(fd, mine);
    CHECK(!s);  // empty, as moved-from
    CHECK(error_of([&] { (void)s.release(); }) == std::errc::bad_file_descriptor);
    CHECK(error_of([&] { s.peer_endpoint(); }) == std::errc::bad_file_descriptor);
    s.close();  // closes nothing now
    CHECK_EQ(write(fd, "plain", 5), 5);
    CHECK(read_all(peer, 5) == "plain");
    CHECK_EQ(write(peer, "back", 4), 4);
    CHECK(read_all(fd, 4) == "back");
    CHECK_EQ(close(fd), 0);  // the caller's to close
    close(peer);
}

static task<void> udp_round(udp_socket &u) {
    std::byte buf[16];
    auto [n, from] = co_await u.recv_from(buf, 5s);
    CHECK_EQ(n, std::size_t(5));
    co_await u.send_to(std::span(buf).first(n), from, 5s);
}

static void test_adopted_udp_then_release() {
    cothread::loop lp;
    int mine = socket(AF_INET, SOCK_DGRAM, 0), peer = socket(AF_INET, SOCK_DGRAM, 0);
    endpoint ep = endpoint::v4("127.0.0.1", 0);
    CHECK_EQ(bind(mine, ep.data(), ep.size()), 0);
    udp_socket u(lp, mine);
    CHECK(nonblocking(mine));
    endpoint at = u.local_endpoint();
    CHECK_EQ(sendto(peer, "dgram", 5, 0, at.data(), at.size()), 5);
    cothread::sync_wait(lp, udp_round(u));
    CHECK(read_all(peer, 5) == "dgram");

    int fd = u.release();
    CHECK_EQ(fd, mine);
    CHECK(!u);
    CHECK_EQ(sendto(peer, "plain", 5, 0, at.data(), at.size()), 5);
    CHECK(read_all(fd, 5) == "plain");
    CHECK_EQ(close(fd), 0);
    close(peer);
}

// A refused descriptor is the caller's still: open, blocking as it was.
static void still_mine(int fd) {
    CHECK(is_open(fd));
    CHECK(!nonblocking(fd));
    CHECK_EQ(close(fd), 0);
}

static void test_refused_descriptors() {
    cothread::loop lp;
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK(error_of([&] { tcp_socket s(lp, p[0]); }) == std::errc::not_a_socket);
    CHECK(error_of([&] { tcp_listener l(lp, p[0]); }) == std::errc::not_a_socket);
    CHECK(error_of([&] { udp_socket u(lp, p[1]); }) == std::errc::not_a_socket);
    still_mine(p[0]);
    still_mine(p[1]);

    std::FILE *f = std::tmpfile();
    CHECK(f != nullptr);
    CHECK(error_of([&] { tcp_socket s(lp, fileno(f)); }) == std::errc::not_a_socket);
    CHECK(is_open(fileno(f)));
    std::fclose(f);

    int dgram = socket(AF_INET, SOCK_DGRAM, 0), stream = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(error_of([&] { tcp_socket s(lp, dgram); }) == std::errc::invalid_argument);
    CHECK(error_of([&] { tcp_listener l(lp, dgram); }) == std::errc::invalid_argument);
    CHECK(error_of([&] { udp_socket u(lp, stream); }) == std::errc::invalid_argument);
    still_mine(dgram);
    still_mine(stream);

    CHECK(error_of([&] { tcp_socket s(lp, -1); }) == std::errc::bad_file_descriptor);
    CHECK(error_of([&] { udp_socket u(lp, -1); }) == std::errc::bad_file_descriptor);
    int closed = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_EQ(close(closed), 0);
    CHECK(error_of([&] { tcp_listener l(lp, closed); }) == std::errc::bad_file_descriptor);

    tcp_socket empty;
    CHECK(error_of([&] { (void)empty.release(); }) == std::errc::bad_file_descriptor);
}

// A release while a read waits throws busy and leaves the socket and the
// read alone; once the read ended, it works.
static task<void> reader(tcp_socket *s, bool *parked, std::size_t *got) {
    std::byte b[8];
    *parked = true;  // the read below finds nothing: it waits
    *got = co_await s->read(b, 5s);
}

static task<int> release_while_reading(tcp_socket &s, int peer) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    bool parked = false;
    std::size_t got = 0;
    lp.spawn_detached(reader(&s, &parked, &got));
    while (!parked) co_await cothread::yield();
    CHECK(error_of([&] { (void)s.release(); }) == std::errc::device_or_resource_busy);
    CHECK(s);
    CHECK_EQ(write(peer, "x", 1), 1);
    while (got == 0) co_await cothread::yield();
    CHECK_EQ(got, std::size_t(1));
    co_return s.release();
}

static void test_release_while_reading() {
    cothread::loop lp;
    int fds[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    tcp_socket s(lp, fds[0]);
    CHECK_EQ(cothread::sync_wait(lp, release_while_reading(s, fds[1])), fds[0]);
    CHECK(!s);
    CHECK_EQ(close(fds[0]), 0);
    close(fds[1]);
}

// The options of bind: listeners with reuse_port share one port, and a
// socket without it is refused there; the same for UDP. Two listeners of
// one loop: the kernel gives each connection to one of them.
static task<std::string> ask_either(tcp_listener &a, tcp_listener &b) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    tcp_socket c = co_await tcp_socket::connect(lp, a.local_endpoint(), 5s);
    co_await c.write("hello", 5s);
    // The connection waits in one queue: a try of each finds it.
    for (int i = 0; i < 500; i++) {
        for (tcp_listener *l : {&a, &b}) {
            std::error_code ec;
            tcp_socket s = co_await l->accept(std::chrono::nanoseconds(0), ec);
            if (!ec) {
                lp.spawn_detached(echo_one(std::move(s)));
                std::string back(5, '\0');
                co_await c.read_exact(std::as_writable_bytes(std::span(back)), 5s);
                co_return back;
            }
            CHECK(ec == std::errc::timed_out);
        }
        co_await cothread::sleep_for(1ms);
    }
    co_return "";
}

static void test_reuse_port() {
    cothread::loop lp;
    tcp_listener a = tcp_listener::bind(lp, endpoint::v4("127.0.0.1", 0), {.backlog = 8, .reuse_port = true});
    endpoint at = a.local_endpoint();
    tcp_listener b = tcp_listener::bind(lp, at, {.reuse_port = true});
    CHECK(b.local_endpoint() == at);
    CHECK(error_of([&] { (void)tcp_listener::bind(lp, at); }) == std::errc::address_in_use);
    CHECK(error_of([&] { (void)tcp_listener::bind(lp, at, {.reuse_address = false}); }) == std::errc::address_in_use);
    CHECK(cothread::sync_wait(lp, ask_either(a, b)) == "hello");

    udp_socket u = udp_socket::bind(lp, endpoint::v4("127.0.0.1", 0), {.reuse_port = true});
    udp_socket v = udp_socket::bind(lp, u.local_endpoint(), {.reuse_port = true});
    CHECK(v.local_endpoint() == u.local_endpoint());
    CHECK(error_of([&] { (void)udp_socket::bind(lp, u.local_endpoint()); }) == std::errc::address_in_use);
}

int main() {
    RUN(test_adopted_listener);
    RUN(test_adopted_connection_then_release);
    RUN(test_adopted_udp_then_release);
    RUN(test_refused_descriptors);
    RUN(test_release_while_reading);
    RUN(test_reuse_port);
    std::puts("test_adopt: ok");
    return 0;
}
