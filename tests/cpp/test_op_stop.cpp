// An operation's own stop token (`.stop_on(tok)`): it stops that operation
// only, the root and the socket go on; a token stopped before the call ends
// every kind of operation at once (tcp, udp, resolve; throwing and
// error_code forms) without touching the socket; a stop from another thread;
// a stop that races with the operation's own completion never cancels the
// next operation on the socket; the root's token still applies.
#include <cothread/endpoint.h>
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/resolve.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>
#include <cothread/udp.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "check.h"
#include "tcp_pair.h"

using namespace std::chrono_literals;
using cothread::endpoint;
using cothread::task;
using cothread::tcp_listener;
using cothread::tcp_socket;
using cothread::udp_socket;

struct reader_result {
    bool canceled = false;
    std::size_t got = 0;
    bool root_alive = false;  // after the cancel: a sleep still works
};

// Reads once under `tok`; after a cancel, the socket reads again (no token).
static task<void> reader(tcp_socket *s, std::stop_token tok, reader_result *r) {
    std::byte b[16];
    try {
        r->got = co_await s->read(b, 5s).stop_on(tok);
        co_return;
    } catch (const std::system_error &e) {
        r->canceled = e.code() == std::errc::operation_canceled;
    }
    co_await cothread::sleep_for(1ms);  // the root was not stopped
    r->root_alive = true;
    r->got = co_await s->read(b, 5s);
}

// Two tasks read two sockets, each under its own token; one token fires:
// only that read ends (operation_canceled), then reads the byte written later.
static task<void> stop_one_writer(tcp_socket *a1, tcp_socket *a2, std::stop_source *src) {
    co_await cothread::sleep_for(10ms);
    src->request_stop();
    co_await cothread::sleep_for(10ms);
    co_await a2->write(bytes("b"));
    co_await a1->write(bytes("a"));
}

static void test_stop_one_of_two() {
    cothread::loop lp;
    auto [c1, a1] = cothread::sync_wait(lp, connected());
    auto [c2, a2] = cothread::sync_wait(lp, connected());
    std::stop_source s1, s2;
    reader_result r1, r2;
    lp.spawn_detached(reader(&c1, s1.get_token(), &r1));
    lp.spawn_detached(reader(&c2, s2.get_token(), &r2));
    lp.spawn_detached(stop_one_writer(&a1, &a2, &s1));
    lp.run();
    CHECK(r1.canceled);
    CHECK(r1.root_alive);
    CHECK_EQ(r1.got, std::size_t(1));
    CHECK(!r2.canceled);
    CHECK_EQ(r2.got, std::size_t(1));
    CHECK(!s2.stop_requested());
}

// A token stopped before the call: every operation ends with
// operation_canceled at once, and starts nothing.
static task<int> stopped_before() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    std::stop_source src;
    src.request_stop();
    std::stop_token tok = src.get_token();
    auto [c, a] = co_await connected();
    co_await a.write(bytes("data"));
    co_await cothread::sleep_for(5ms);  // the bytes are there: a read would not wait
    std::byte b[16];
    CHECK_THROWS(co_await c.read(b).stop_on(tok), std::system_error);
    std::error_code ec;
    std::size_t n = co_await c.read(b, ec).stop_on(tok);
    CHECK(ec == std::errc::operation_canceled);
    CHECK_EQ(n, std::size_t(0));
    n = co_await c.write(bytes("x"), 1s, ec).stop_on(tok);
    CHECK(ec == std::errc::operation_canceled);
    CHECK_EQ(n, std::size_t(0));
    n = co_await c.read(b, ec);  // the data was left alone
    CHECK(!ec);
    CHECK_EQ(n, std::size_t(4));
    // A token that cannot stop changes nothing.
    n = co_await c.write(bytes("y")).stop_on(std::stop_token{});
    CHECK_EQ(n, std::size_t(1));
    n = co_await a.read(b, 5s).stop_on(std::stop_source().get_token());
    CHECK_EQ(n, std::size_t(1));

    tcp_listener l = tcp_listener::bind(lp, endpoint::v4("127.0.0.1", 0));
    tcp_socket got = co_await l.accept(ec).stop_on(tok);
    CHECK(ec == std::errc::operation_canceled);
    CHECK(!got);
    tcp_socket conn = co_await tcp_socket::connect(lp, l.local_endpoint(), 1s, ec).stop_on(tok);
    CHECK(ec == std::errc::operation_canceled);
    CHECK(!conn);
    CHECK_THROWS(co_await tcp_socket::connect(lp, l.local_endpoint()).stop_on(tok), std::system_error);

    udp_socket u = udp_socket::bind(lp, endpoint::v4("127.0.0.1", 0));
    endpoint to = u.local_endpoint();
    n = co_await u.send_to(bytes("d"), to, 1s, ec).stop_on(tok);
    CHECK(ec == std::errc::operation_canceled);
    auto [m, from] = co_await u.recv_from(b, 1s, ec).stop_on(tok);
    CHECK(ec == std::errc::operation_canceled);
    CHECK_EQ(m, std::size_t(0));
    u.connect(to);
    n = co_await u.send(bytes("d"), 1s, ec).stop_on(tok);
    CHECK(ec == std::errc::operation_canceled);
    n = co_await u.recv(b, 1s, ec).stop_on(tok);
    CHECK(ec == std::errc::operation_canceled);
    CHECK_EQ(cot_udp_try_recv(u.native_loop(), u.native(), b, sizeof b, nullptr), COT_EAGAIN);  // nothing was sent

    auto eps = co_await cothread::resolve(lp, "localhost", "80", 1s, ec).stop_on(tok);
    CHECK(ec == std::errc::operation_canceled);
    CHECK(eps.empty());
    co_return 1;
}

static void test_stopped_before() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, stopped_before()), 1);
}

// The root's token still stops an operation that has its own.
static task<void> root_stopped(tcp_socket *s, std::stop_token own, reader_result *r) {
    std::byte b[4];
    std::error_code ec;
    co_await s->read(b, 5s, ec).stop_on(own);
    r->canceled = ec == std::errc::operation_canceled;
}

static void test_root_still_stops() {
    cothread::loop lp;
    auto [c, a] = cothread::sync_wait(lp, connected());
    std::stop_source root, own;
    reader_result r;
    lp.spawn_detached(root_stopped(&c, own.get_token(), &r), root.get_token());
    lp.post([&] { root.request_stop(); });
    lp.run();
    CHECK(r.canceled);
    CHECK(!own.stop_requested());
}

// A stop from another thread ends the read through the loop's inbox.
static void test_stop_other_thread() {
    cothread::loop lp;
    auto [c, a] = cothread::sync_wait(lp, connected());
    std::stop_source src;
    reader_result r;
    lp.spawn_detached(reader(&c, src.get_token(), &r));
    std::thread t([&] {
        std::this_thread::sleep_for(20ms);
        src.request_stop();
    });
    auto later = [](tcp_socket *s) -> task<void> {
        co_await cothread::sleep_for(100ms);
        co_await s->write(bytes("z"));
    };
    lp.spawn_detached(later(&a));
    lp.run();
    t.join();
    CHECK(r.canceled);
    CHECK(r.root_alive);
    CHECK_EQ(r.got, std::size_t(1));
}

// Another thread stops while the read completes with data: whichever wins,
// the next read on that socket (which waits) is never cancelled by the late
// stop. Many rounds, to hit both orders.
static task<int> race_rounds(int rounds, int *canceled) {
    auto [c, a] = co_await connected();
    std::byte b[64];
    for (int i = 0; i < rounds; i++) {
        std::stop_source src;
        std::atomic<bool> go{false}, stopped{false};
        std::thread t([&] {
            while (!go.load()) std::this_thread::yield();
            src.request_stop();
            stopped.store(true);
        });
        // Odd rounds write at once; even ones once the cancel is in the
        // inbox: then the byte and the cancel reach the same loop turn.
        auto feed = [](tcp_socket *s, std::atomic<bool> *g, std::atomic<bool> *st, bool wait) -> task<void> {
            co_await cothread::yield();
            g->store(true);
            while (wait && !st->load()) std::this_thread::yield();
            co_await s->write(bytes("x"));
        };
        cothread::loop &lp = co_await cothread::this_task::get_loop();
        lp.spawn_detached(feed(&a, &go, &stopped, i % 2 == 0));
        std::error_code ec;
        std::size_t n = co_await c.read(b, 5s, ec).stop_on(src.get_token());
        go.store(true);  // the read ended anyhow: let the thread finish
        t.join();
        if (ec) {
            CHECK(ec == std::errc::operation_canceled);
            ++*canceled;
        } else {
            CHECK_EQ(n, std::size_t(1));
        }
        // The next read waits for a byte written 1 ms later.
        auto later = [](tcp_socket *s) -> task<void> {
            co_await cothread::sleep_for(1ms);
            co_await s->write(bytes("y"));
        };
        lp.spawn_detached(later(&a));
        n = co_await c.read(b, 5s, ec);
        CHECK(!ec);
        CHECK(n >= 1);
        co_await cothread::sleep_for(2ms);
        while (cot_tcp_try_read(c.native_loop(), c.native(), b, sizeof b) > 0) {}  // drain
    }
    co_return 1;
}

static void test_stop_races_completion() {
    cothread::loop lp;
    int canceled = 0;
    CHECK_EQ(cothread::sync_wait(lp, race_rounds(200, &canceled)), 1);
    std::printf("  %d of 200 rounds cancelled\n", canceled);
}

int main() {
    RUN(test_stop_one_of_two);
    RUN(test_stopped_before);
    RUN(test_root_still_stops);
    RUN(test_stop_other_thread);
    RUN(test_stop_races_completion);
    return 0;
}
