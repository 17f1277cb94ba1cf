// cothread sockets given bad input: closed and moved-from sockets, a close
// while another task reads, negative deadlines, empty buffers, a second
// reader or writer (busy, and the first still completes), one reader plus
// one writer at once (full duplex), a socket of another loop, bad endpoints.
#include <cothread/endpoint.h>
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>
#include <cothread/udp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "check.h"
#include "tcp_pair.h"

using namespace std::chrono_literals;
using cothread::endpoint;
using cothread::task;
using cothread::tcp_listener;
using cothread::tcp_socket;

// Closed (by close(), or under us through the C ABI) and moved-from sockets.
static task<int> closed_and_moved() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto [c, a] = co_await connected();
    std::byte b[4];
    std::error_code ec;

    tcp_socket moved = std::move(c);
    co_await c.read(b, ec);
    CHECK(ec == std::errc::bad_file_descriptor);
    std::size_t n = co_await c.write(std::as_bytes(std::span(b)), ec);
    CHECK(ec == std::errc::bad_file_descriptor);
    CHECK_EQ(n, std::size_t(0));
    CHECK_THROWS(c.local_endpoint(), std::system_error);
    CHECK_THROWS(c.shutdown_write(), std::system_error);
    bool threw = false;
    try {
        co_await c.read(b);
    } catch (const std::system_error &e) {
        threw = e.code() == std::errc::bad_file_descriptor;
    }
    CHECK(threw);

    moved.close();
    moved.close();  // twice is fine
    co_await moved.read(b, ec);
    CHECK(ec == std::errc::bad_file_descriptor);

    // Closed through the C ABI: the key is refused.
    CHECK_EQ(cot_tcp_close(a.native_loop(), a.native()), 0);
    co_await a.read(b, ec);
    CHECK(ec == std::errc::bad_file_descriptor);
    co_await a.write(std::as_bytes(std::span(b)), ec);
    CHECK(ec == std::errc::bad_file_descriptor);
    a = tcp_socket();  // the key is closed already: nothing to close

    tcp_listener l;
    tcp_socket none = co_await l.accept(ec);
    CHECK(ec == std::errc::bad_file_descriptor);
    CHECK(!none);
    cothread::udp_socket u;
    co_await u.recv(b, cothread::deadline::never(), ec);
    CHECK(ec == std::errc::bad_file_descriptor);
    (void)lp;
    co_return 1;
}

static void test_closed_and_moved() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, closed_and_moved()), 1);
}

// Another task's read is pending when the socket closes: it ends with an
// error at the next turn.
static task<void> pending_reader(tcp_socket *s, std::error_code *ec, bool *ended) {
    std::byte b[4];
    co_await s->read(b, *ec);
    *ended = true;
}

static task<int> close_while_reading() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto [c, a] = co_await connected();
    std::error_code ec;
    bool ended = false;
    cocls::future<void> f = lp.spawn(pending_reader(&c, &ec, &ended));
    co_await cothread::yield();  // it starts and parks in the read
    CHECK(!ended);
    c.close();
    CHECK(!ended);  // never inside close
    co_await f;
    CHECK(ended);
    CHECK(ec == std::errc::operation_canceled);
    co_return 1;
}

static void test_close_while_reading() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, close_while_reading()), 1);
}

// Negative deadlines and empty buffers: invalid_argument, nothing started.
static task<int> invalid() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto [c, a] = co_await connected();
    std::byte b[4];
    std::error_code ec;
    co_await c.read(b, -1ms, ec);
    CHECK(ec == std::errc::invalid_argument);
    co_await c.write(std::as_bytes(std::span(b)), -1ms, ec);
    CHECK(ec == std::errc::invalid_argument);
    tcp_listener l = tcp_listener::bind(lp, endpoint::v4("127.0.0.1", 0));
    co_await l.accept(-1ms, ec);
    CHECK(ec == std::errc::invalid_argument);
    tcp_socket s = co_await tcp_socket::connect(lp, l.local_endpoint(), -1ms, ec);
    CHECK(ec == std::errc::invalid_argument);
    CHECK(!s);
    bool threw = false;
    try {
        co_await c.read(b, -5s);
    } catch (const std::system_error &e) {
        threw = e.code() == std::errc::invalid_argument;
    }
    CHECK(threw);

    co_await c.read(std::span<std::byte>(), ec);
    CHECK(ec == std::errc::invalid_argument);
    co_await c.write(std::span<const std::byte>(), ec);
    CHECK(ec == std::errc::invalid_argument);
    co_await c.read_exact(std::span<std::byte>(), 1s, ec);
    CHECK(ec == std::errc::invalid_argument);
    cothread::udp_socket u = cothread::udp_socket::bind(lp, endpoint::v4("127.0.0.1", 0));
    co_await u.recv(std::span<std::byte>(), 1s, ec);
    CHECK(ec == std::errc::invalid_argument);

    // Nothing was started: the socket works.
    co_await a.write(std::string("ok"));
    std::size_t n = co_await c.read(b, 5s);
    CHECK_EQ(n, std::size_t(2));
    co_return 1;
}

static void test_invalid() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, invalid()), 1);
}

// Two readers: the second is busy, the first gets the data.
static task<int> two_readers() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto [c, a] = co_await connected();
    std::error_code first_ec;
    bool first_ended = false;
    cocls::future<void> f = lp.spawn(pending_reader(&c, &first_ec, &first_ended));
    co_await cothread::yield();
    std::byte b[4];
    std::error_code ec;
    co_await c.read(b, 1s, ec);
    CHECK(ec == std::errc::device_or_resource_busy);
    bool threw = false;
    try {
        co_await c.read(b);
    } catch (const std::system_error &e) {
        threw = e.code() == std::errc::device_or_resource_busy;
    }
    CHECK(threw);
    co_await a.write(std::string("abc"));
    co_await f;
    CHECK(first_ended);
    CHECK(!first_ec);
    co_return 1;
}

static void test_two_readers() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, two_readers()), 1);
}

// Two writers: the first waits (the peer does not read), the second is busy;
// then the peer reads everything and the first completes.
static task<void> big_writer(tcp_socket *s, std::size_t size, std::size_t *wrote) {
    std::vector<std::byte> data(size, std::byte(1));
    *wrote = co_await s->write(data, 30s);
}

static task<void> drain_all(tcp_socket *s, std::size_t *got) {
    std::vector<std::byte> buf(64 * 1024);
    for (;;) {
        std::size_t n = co_await s->read(buf, 30s);
        if (n == 0) break;
        *got += n;
    }
}

static task<int> two_writers() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto [c, a] = co_await connected();
    std::size_t size = 16 << 20, wrote = 0, got = 0;
    cocls::future<void> w = lp.spawn(big_writer(&c, size, &wrote));
    co_await cothread::yield();  // it fills the socket and waits
    std::error_code ec;
    std::byte x[1] = {std::byte('x')};
    std::size_t n = co_await c.write(x, 1s, ec);
    CHECK(ec == std::errc::device_or_resource_busy);
    CHECK_EQ(n, std::size_t(0));
    CHECK_EQ(wrote, std::size_t(0));
    cocls::future<void> r = lp.spawn(drain_all(&a, &got));
    co_await w;
    CHECK_EQ(wrote, size);
    c.shutdown_write();
    co_await r;
    CHECK_EQ(got, size);
    co_return 1;
}

static void test_two_writers() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, two_writers()), 1);
}

// One reader and one writer on each end at once: 8 MiB each way.
static task<int> full_duplex() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto [c, a] = co_await connected();
    std::size_t size = 8 << 20, wc = 0, wa = 0, gc = 0, ga = 0;
    cocls::future<void> f1 = lp.spawn(big_writer(&c, size, &wc));
    cocls::future<void> f2 = lp.spawn(big_writer(&a, size, &wa));
    cocls::future<void> f3 = lp.spawn(drain_all(&c, &gc));
    cocls::future<void> f4 = lp.spawn(drain_all(&a, &ga));
    co_await f1;
    co_await f2;
    c.shutdown_write();
    a.shutdown_write();
    co_await f3;
    co_await f4;
    CHECK_EQ(wc, size);
    CHECK_EQ(wa, size);
    CHECK_EQ(gc, size);
    CHECK_EQ(ga, size);
    co_return 1;
}

static void test_full_duplex() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, full_duplex()), 1);
}

// A socket used by a task of another loop: invalid_argument.
static task<int> use_from(tcp_listener *l) {
    std::error_code ec;
    tcp_socket s = co_await l->accept(1s, ec);
    CHECK(ec == std::errc::invalid_argument);
    co_return 1;
}

static void test_other_loop() {
    cothread::loop lp1, lp2;
    tcp_listener l = tcp_listener::bind(lp1, endpoint::v4("127.0.0.1", 0));
    CHECK_EQ(cothread::sync_wait(lp2, use_from(&l)), 1);
}

static void test_endpoints() {
    CHECK_THROWS(endpoint::v4("999.1.1.1", 1), std::system_error);
    CHECK_THROWS(endpoint::v4("::1", 1), std::system_error);
    CHECK_THROWS(endpoint::v6("127.0.0.1", 1), std::system_error);
    CHECK_THROWS(endpoint::unix_path(""), std::system_error);
    CHECK_THROWS(endpoint::unix_path(std::string(200, 'p')), std::system_error);
    CHECK_THROWS(endpoint::unix_path(std::string("a\0b", 3)), std::system_error);
    CHECK_THROWS(endpoint(nullptr, 4), std::system_error);
    endpoint e = endpoint::v4("1.2.3.4", 80);
    CHECK(e == endpoint::v4("1.2.3.4", 80));
    CHECK(!(e == endpoint::v4("1.2.3.4", 81)));
    CHECK(!(e == endpoint::v6("::1", 80)));
    CHECK(endpoint::unix_path("/tmp/x") == endpoint::unix_path("/tmp/x"));
    CHECK_EQ(endpoint::unix_path("/tmp/x").to_string(), std::string("/tmp/x"));
    CHECK_EQ(endpoint().family(), AF_UNSPEC);
    CHECK_EQ(endpoint().to_string(), std::string());
    // A listener on an address in use, a connect to a bad family.
    cothread::loop lp;
    tcp_listener l = tcp_listener::bind(lp, endpoint::v4("127.0.0.1", 0));
    bool in_use = false;
    try {
        cothread::udp_socket u = cothread::udp_socket::bind(lp, endpoint::v4("127.0.0.1", 0));
        tcp_listener l2 = tcp_listener::bind(lp, l.local_endpoint());
    } catch (const std::system_error &e) {
        in_use = e.code() == std::errc::address_in_use;
    }
    CHECK(in_use);
    auto bad_family = [](cothread::loop *lp) -> task<int> {
        std::error_code ec;
        tcp_socket s = co_await tcp_socket::connect(*lp, endpoint(), 1s, ec);
        CHECK(ec);
        CHECK(!s);
        co_return 1;
    };
    CHECK_EQ(cothread::sync_wait(lp, bad_family(&lp)), 1);
}

// The handle every socket class shares (detail/socket_handle.h): a move
// leaves no socket behind, a move-assign closes the socket it replaces, and
// closing twice is fine; for udp_socket and tcp_listener as for tcp_socket.
template <typename S>
static void check_handle_moves(S first, S second) {
    cot_loop *lp = first.native_loop();
    std::uint64_t k1 = first.native(), k2 = second.native();
    CHECK(first && second && k1 != k2);
    S moved = std::move(first);
    CHECK(!first);
    CHECK_EQ(first.native(), std::uint64_t(0));
    CHECK(first.native_loop() == nullptr);
    CHECK_THROWS(first.local_endpoint(), std::system_error);
    CHECK_EQ(moved.native(), k1);
    CHECK(moved.local_endpoint().port() != 0);
    moved = std::move(second);  // closes k1
    CHECK_EQ(moved.native(), k2);
    CHECK(!second);
    sockaddr_storage ss;
    std::uint32_t len = sizeof ss;
    auto name = std::is_same_v<S, cothread::udp_socket> ? &cot_udp_getsockname : &cot_tcp_getsockname;
    CHECK_EQ(name(lp, k2, reinterpret_cast<sockaddr *>(&ss), &len), 0);  // the kind is right
    CHECK(name(lp, k1, reinterpret_cast<sockaddr *>(&ss), &len) < 0);    // k1 was closed
    moved.close();
    moved.close();
    CHECK(!moved);
    CHECK_THROWS(moved.local_endpoint(), std::system_error);
}

static void test_handle_moves() {
    cothread::loop lp;
    endpoint any = endpoint::v4("127.0.0.1", 0);
    check_handle_moves(cothread::udp_socket::bind(lp, any), cothread::udp_socket::bind(lp, any));
    check_handle_moves(cothread::tcp_listener::bind(lp, any), cothread::tcp_listener::bind(lp, any));
}

int main() {
    RUN(test_closed_and_moved);
    RUN(test_close_while_reading);
    RUN(test_invalid);
    RUN(test_two_readers);
    RUN(test_two_writers);
    RUN(test_full_duplex);
    RUN(test_other_loop);
    RUN(test_endpoints);
    RUN(test_handle_moves);
    return 0;
}
