// cothread UDP: round trips with the sender's address, a receive that
// waits, connected sockets, cut and empty datagrams, deadlines, a stop
// during a receive, a second receiver, IPv6.
#include <cothread/endpoint.h>
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/timer.h>
#include <cothread/udp.h>

#include <chrono>
#include <cstddef>
#include <stop_token>
#include <string>
#include <system_error>
#include <vector>

#include "check.h"

using namespace std::chrono_literals;
using cothread::endpoint;
using cothread::task;
using cothread::udp_socket;
using steady = std::chrono::steady_clock;

static std::span<const std::byte> bytes(const std::string &s) { return std::as_bytes(std::span(s)); }
static std::string text(std::span<const std::byte> b) { return std::string(reinterpret_cast<const char *>(b.data()), b.size()); }

static task<void> send_later(udp_socket *s, endpoint to, std::string msg) {
    co_await cothread::sleep_for(10ms);
    co_await s->send_to(bytes(msg), to);
}

static task<int> round_trip(endpoint any) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    udp_socket a = udp_socket::bind(lp, any);
    udp_socket b = udp_socket::bind(lp, any);
    endpoint at = a.local_endpoint();
    CHECK(at.port() != 0);
    std::size_t n = co_await b.send_to(bytes("ping"), at);
    CHECK_EQ(n, std::size_t(4));
    std::vector<std::byte> buf(64);
    auto [got, from] = co_await a.recv_from(buf, 5s);
    CHECK_EQ(text(std::span(buf).first(got)), std::string("ping"));
    CHECK(from == b.local_endpoint());
    co_await a.send_to(bytes("pong"), from);
    auto [got2, from2] = co_await b.recv_from(buf, 5s);
    CHECK_EQ(text(std::span(buf).first(got2)), std::string("pong"));
    CHECK(from2 == at);

    // A receive that waits for a datagram sent later.
    lp.spawn_detached(send_later(&b, at, "later"));
    auto t0 = steady::now();
    auto [got3, from3] = co_await a.recv_from(buf, 5s);
    CHECK(steady::now() - t0 >= 5ms);
    CHECK_EQ(text(std::span(buf).first(got3)), std::string("later"));
    CHECK(from3 == b.local_endpoint());

    // Connected: send and recv talk to the peer.
    a.connect(b.local_endpoint());
    b.connect(at);
    co_await a.send(bytes("one"));
    n = co_await b.recv(buf, 5s);
    CHECK_EQ(text(std::span(buf).first(n)), std::string("one"));
    co_await b.send(bytes("two"));
    n = co_await a.recv(buf, 5s);
    CHECK_EQ(text(std::span(buf).first(n)), std::string("two"));

    // A datagram longer than the buffer is cut; an empty one is fine.
    co_await a.send(bytes(std::string(100, 'x')));
    std::byte small[10];
    n = co_await b.recv(small, 5s);
    CHECK_EQ(n, std::size_t(10));
    n = co_await a.send(std::span<const std::byte>());
    CHECK_EQ(n, std::size_t(0));
    n = co_await b.recv(buf, 5s);
    CHECK_EQ(n, std::size_t(0));
    co_return 1;
}

static void test_round_trip_v4() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, round_trip(endpoint::v4("127.0.0.1", 0))), 1);
}

static void test_round_trip_v6() {
    cothread::loop lp;
    try {
        udp_socket probe = udp_socket::bind(lp, endpoint::v6("::1", 0));
    } catch (const std::system_error &e) {
        std::printf("  no IPv6 here (%s): skipped\n", e.what());
        return;
    }
    CHECK_EQ(cothread::sync_wait(lp, round_trip(endpoint::v6("::1", 0))), 1);
}

// An unbound socket gets a port at its first send.
static task<int> open_then_send() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    udp_socket a = udp_socket::bind(lp, endpoint::v4("127.0.0.1", 0));
    udp_socket b = udp_socket::open(lp, AF_INET);
    co_await b.send_to(bytes("hi"), a.local_endpoint());
    CHECK(b.local_endpoint().port() != 0);
    std::byte buf[8];
    auto [n, from] = co_await a.recv_from(buf, 5s);
    CHECK_EQ(n, std::size_t(2));
    CHECK_EQ(from.port(), b.local_endpoint().port());
    co_return 1;
}

static void test_open() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, open_then_send()), 1);
}

// Deadlines, the error_code form, and a second receiver.
static task<int> deadlines() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    udp_socket a = udp_socket::bind(lp, endpoint::v4("127.0.0.1", 0));
    std::byte buf[8];
    auto t0 = steady::now();
    bool timed_out = false;
    try {
        co_await a.recv_from(buf, 20ms);
    } catch (const std::system_error &e) {
        timed_out = e.code() == std::errc::timed_out;
    }
    CHECK(timed_out);
    CHECK(steady::now() - t0 >= 20ms);
    std::error_code ec;
    auto [n, from] = co_await a.recv_from(buf, 1ms, ec);
    CHECK(ec == std::errc::timed_out);
    CHECK_EQ(n, std::size_t(0));
    CHECK_EQ(from.family(), AF_UNSPEC);
    co_await a.recv(buf, -1ms, ec);
    CHECK(ec == std::errc::invalid_argument);
    co_return 1;
}

static void test_deadlines() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, deadlines()), 1);
}

static task<void> waiting_receiver(udp_socket *a, std::error_code *ec, std::size_t *n) {
    std::byte buf[8];
    *n = co_await a->recv(buf, 5s, *ec);
}

static task<int> second_receiver() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    udp_socket a = udp_socket::bind(lp, endpoint::v4("127.0.0.1", 0));
    udp_socket b = udp_socket::open(lp, AF_INET);
    std::error_code first_ec;
    std::size_t first_n = 99;
    cocls::future<void> first = lp.spawn(waiting_receiver(&a, &first_ec, &first_n));
    co_await cothread::yield();  // the first starts when this task suspends
    std::byte buf[8];
    std::error_code ec;
    co_await a.recv(buf, 5s, ec);
    CHECK(ec == std::errc::device_or_resource_busy);
    co_await b.send_to(bytes("abc"), a.local_endpoint());
    co_await first;
    CHECK(!first_ec);
    CHECK_EQ(first_n, std::size_t(3));
    co_return 1;
}

static void test_second_receiver() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, second_receiver()), 1);
}

// A stop during a receive ends it with operation_canceled.
static task<void> stopped(udp_socket *a, bool *canceled) {
    std::byte buf[8];
    try {
        co_await a->recv_from(buf);
    } catch (const std::system_error &e) {
        *canceled = e.code() == std::errc::operation_canceled;
    }
}

static task<void> stopper(std::stop_source *src) {
    co_await cothread::sleep_for(10ms);
    src->request_stop();
}

static void test_stop() {
    cothread::loop lp;
    udp_socket a = udp_socket::bind(lp, endpoint::v4("127.0.0.1", 0));
    std::stop_source src;
    bool canceled = false;
    lp.spawn_detached(stopped(&a, &canceled), src.get_token());
    lp.spawn_detached(stopper(&src));
    lp.run();
    CHECK(canceled);
}

int main() {
    RUN(test_round_trip_v4);
    RUN(test_round_trip_v6);
    RUN(test_open);
    RUN(test_deadlines);
    RUN(test_second_receiver);
    RUN(test_stop);
    return 0;
}
