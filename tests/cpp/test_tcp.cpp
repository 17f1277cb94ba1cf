// cothread TCP: echo over IPv4, IPv6 and Unix, read_exact, a big write
// against a slow reader, a write that waits sent from the caller's buffer
// (not copied), deadlines, stop tokens (same thread, other thread,
// during a connect), a peer reset mid-write, the error_code forms, and the
// hot path: data already there is read (and a small write sent) without
// suspending and without an allocation; after a short read, a read waits
// for readiness instead.
#include <cothread/endpoint.h>
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>
#include <cothread/when_all.h>
#include <cothread/when_any.h>

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "check.h"
#include "tcp_pair.h"
#include "heap_count.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COT_TEST_SANITIZER_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COT_TEST_SANITIZER_HEAP 1
#endif
#endif
#ifdef COT_TEST_SANITIZER_HEAP
// The sanitizers' runtime has it (their header is not always installed).
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#else
#include <malloc.h>
#endif

// The bytes the C heap holds now (the core allocates there too).
static std::size_t heap_in_use() {
#ifdef COT_TEST_SANITIZER_HEAP
    return __sanitizer_get_current_allocated_bytes();
#else
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;  // small blocks, and the mmapped large ones
#endif
}

using namespace std::chrono_literals;
using cothread::endpoint;
using cothread::task;
using cothread::tcp_listener;
using cothread::tcp_socket;
using steady = std::chrono::steady_clock;

// Echoes what comes until the end of the stream, then closes.
static task<void> echo(tcp_socket s) {
    std::vector<std::byte> buf(4096);
    for (;;) {
        std::size_t n = co_await s.read(buf);
        if (n == 0) break;
        co_await s.write(std::span(buf).first(n));
    }
}

static task<int> echo_over(endpoint ep) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    tcp_listener l = tcp_listener::bind(lp, ep);
    endpoint at = l.local_endpoint();
    CHECK_EQ(at.family(), ep.family());
    if (ep.family() != AF_UNIX) CHECK(at.port() != 0);
    tcp_socket c = co_await tcp_socket::connect(lp, at);
    lp.spawn_detached(echo(co_await l.accept()));
    std::string msg = "hello over " + at.to_string();
    for (int round = 0; round < 100; round++) {
        std::size_t w = co_await c.write(msg);
        CHECK_EQ(w, msg.size());
        std::string back(msg.size(), '\0');
        std::size_t got = co_await c.read_exact(std::as_writable_bytes(std::span(back)));
        CHECK_EQ(got, msg.size());
        CHECK(back == msg);
    }
    c.shutdown_write();
    std::byte b[8];
    std::size_t n = co_await c.read(b);
    CHECK_EQ(n, std::size_t(0));  // the echo saw our end and closed
    co_return 1;
}

static void test_echo_v4() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, echo_over(endpoint::v4("127.0.0.1", 0))), 1);
}

static void test_echo_v6() {
    cothread::loop lp;
    try {
        tcp_listener probe = tcp_listener::bind(lp, endpoint::v6("::1", 0));
    } catch (const std::system_error &e) {
        std::printf("  no IPv6 here (%s): skipped\n", e.what());
        return;
    }
    CHECK_EQ(cothread::sync_wait(lp, echo_over(endpoint::v6("::1", 0))), 1);
}

static void test_echo_unix() {
    std::string path = "/tmp/cothread-test-tcp-" + std::to_string(getpid()) + ".sock";
    unlink(path.c_str());
    {
        cothread::loop lp;
        CHECK_EQ(cothread::sync_wait(lp, echo_over(endpoint::unix_path(path))), 1);
    }
    CHECK_EQ(unlink(path.c_str()), 0);
}

// read_exact gathers bytes that come in pieces, under one deadline.
static task<void> dribble(tcp_socket s) {
    for (char c = 'a'; c < 'a' + 10; c++) {
        co_await s.write(std::string(100, c));
        co_await cothread::sleep_for(2ms);
    }
    co_await cothread::sleep_for(50ms);
    co_await s.write(std::string(5, 'z'));
}

static task<int> read_exact_pieces() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto [c, a] = co_await connected(endpoint::v4("127.0.0.1", 0));
    lp.spawn_detached(dribble(std::move(a)));
    std::vector<std::byte> buf(1000);
    std::size_t n = co_await c.read_exact(buf, 5s);
    CHECK_EQ(n, std::size_t(1000));
    for (std::size_t i = 0; i < buf.size(); i++) CHECK(buf[i] == std::byte('a' + i / 100));
    // 10 bytes wanted, 5 come in 50 ms: the one deadline (20 ms) ends it.
    std::error_code ec;
    std::vector<std::byte> more(10);
    n = co_await c.read_exact(more, 20ms, ec);
    CHECK(ec == std::errc::timed_out);
    CHECK_EQ(n, std::size_t(0));
    // Then the end of the stream before the buffer is full: broken_pipe.
    n = co_await c.read_exact(more, 5s, ec);
    CHECK(ec == std::errc::broken_pipe);
    CHECK_EQ(n, std::size_t(5));
    co_return 1;
}

static void test_read_exact() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, read_exact_pieces()), 1);
}

// One 8 MiB write against a reader that sleeps between small reads.
static task<void> slow_reader(tcp_socket s, std::size_t *total, bool *ok) {
    std::vector<std::byte> buf(64 * 1024);
    std::size_t got = 0;
    for (int i = 0;; i++) {
        std::size_t n = co_await s.read(buf);
        if (n == 0) break;
        for (std::size_t j = 0; j < n; j++)
            if (buf[j] != std::byte((got + j) % 251)) *ok = false;
        got += n;
        if (i % 16 == 0) co_await cothread::sleep_for(1ms);
    }
    *total = got;
}

static task<int> big_write() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto [c, a] = co_await connected(endpoint::v4("127.0.0.1", 0));
    std::size_t total = 0;
    bool ok = true;
    cocls::future<void> reader = lp.spawn(slow_reader(std::move(a), &total, &ok));
    std::vector<std::byte> data(8 << 20);
    for (std::size_t i = 0; i < data.size(); i++) data[i] = std::byte(i % 251);
    std::size_t w = co_await c.write(data, 30s);
    CHECK_EQ(w, data.size());
    c.close();
    co_await reader;
    CHECK_EQ(total, data.size());
    CHECK(ok);
    co_return 1;
}

static void test_big_write() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, big_write()), 1);
}

// A write the socket cannot take at once waits with the caller's buffer:
// while 32 MiB wait for a reader, the heap holds no copy of them.
static task<void> drain_after_probe(tcp_socket &a, std::size_t heap_before, std::size_t *grew, std::size_t *got) {
    co_await cothread::sleep_for(20ms);  // the write has filled the socket and waits
    *grew = heap_in_use() - heap_before;
    std::vector<std::byte> buf(256 * 1024);
    while (std::size_t n = co_await a.read(buf, 30s)) *got += n;
}

static task<int> write_in_place() {
    auto [c, a] = co_await connected(endpoint::v4("127.0.0.1", 0));
    std::vector<std::byte> data(32 << 20, std::byte(3));
    std::size_t grew = 0, got = 0, before = heap_in_use();
    auto writer = [](tcp_socket &c, std::span<const std::byte> d) -> task<std::size_t> {
        std::size_t n = co_await c.write(d, 30s);
        c.shutdown_write();
        co_return n;
    };
    auto [sent, drained] = co_await cothread::when_all(writer(c, data), drain_after_probe(a, before, &grew, &got));
    (void)drained;
    CHECK_EQ(sent, data.size());
    CHECK_EQ(got, data.size());
    CHECK(grew < (4u << 20));  // a copy of what waited would be about 30 MiB
    co_return 1;
}

static void test_write_in_place() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, write_in_place()), 1);
}

// A read's deadline: timed_out, not before it; the socket reads on after.
static task<int> read_deadline() {
    auto [c, a] = co_await connected(endpoint::v4("127.0.0.1", 0));
    std::byte b[16];
    auto t0 = steady::now();
    bool timed_out = false;
    try {
        co_await c.read(b, 30ms);
    } catch (const std::system_error &e) {
        timed_out = e.code() == std::errc::timed_out;
    }
    CHECK(timed_out);
    CHECK(steady::now() - t0 >= 30ms);
    CHECK(steady::now() - t0 < 5s);
    // A past time point: try once, then time out.
    std::error_code ec;
    std::size_t n = co_await c.read(b, steady::now() - 1s, ec);
    CHECK(ec == std::errc::timed_out);
    CHECK_EQ(n, std::size_t(0));
    co_await a.write(std::string("x"));
    n = co_await c.read(b, 5s);
    CHECK_EQ(n, std::size_t(1));
    co_return 1;
}

static void test_read_deadline() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, read_deadline()), 1);
}

// A listener whose backlog is full: a further connect waits (Linux drops
// the SYN). Fills it and returns the sockets that got in.
static task<std::vector<tcp_socket>> fill_backlog(const endpoint &at) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    std::vector<tcp_socket> in;
    for (int i = 0; i < 64; i++) {
        std::error_code ec;
        tcp_socket s = co_await tcp_socket::connect(lp, at, 100ms, ec);
        if (ec) {
            CHECK(ec == std::errc::timed_out);
            co_return in;
        }
        in.push_back(std::move(s));
    }
    CHECK(!"the backlog never filled");
    co_return in;
}

static task<int> connect_deadline() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    tcp_listener l = tcp_listener::bind(lp, endpoint::v4("127.0.0.1", 0), 1);
    std::vector<tcp_socket> in = co_await fill_backlog(l.local_endpoint());
    auto t0 = steady::now();
    bool timed_out = false;
    try {
        tcp_socket s = co_await tcp_socket::connect(lp, l.local_endpoint(), 30ms);
    } catch (const std::system_error &e) {
        timed_out = e.code() == std::errc::timed_out;
    }
    CHECK(timed_out);
    CHECK(steady::now() - t0 >= 30ms);
    // Refused: nobody listens.
    endpoint gone = l.local_endpoint();
    l.close();
    std::error_code ec;
    tcp_socket s = co_await tcp_socket::connect(lp, gone, 5s, ec);
    CHECK(ec == std::errc::connection_refused);
    CHECK(!s);
    co_return 1;
}

static void test_connect_deadline() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, connect_deadline()), 1);
}

struct stop_result {
    std::atomic<bool> parked{false};
    bool canceled = false;
    bool reads_again = false;
    steady::duration took{};
};

// Reads until stopped; then (the stop is sticky) a new read fails at once
// too, and the socket itself is fine: bytes written before are still there.
static task<void> stopped_reader(tcp_socket *c, tcp_socket *a, stop_result *r) {
    std::byte b[16];
    auto t0 = steady::now();
    r->parked = true;
    try {
        co_await c->read(b);
    } catch (const std::system_error &e) {
        r->canceled = e.code() == std::errc::operation_canceled;
    }
    r->took = steady::now() - t0;
    std::error_code ec;
    co_await c->read(b, ec);
    CHECK(ec == std::errc::operation_canceled);
    CHECK_EQ(cot_tcp_try_read(c->native_loop(), c->native(), b, sizeof b), COT_EAGAIN);  // the read was cancelled
    CHECK_EQ(cot_tcp_try_write(a->native_loop(), a->native(), "y", 1), 1);
    r->reads_again = true;
}

static task<void> stopper(std::stop_source *src) {
    co_await cothread::sleep_for(10ms);
    src->request_stop();
}

// spawn_detached with a token: stop from the loop thread and from another.
static void run_stop_read(bool other_thread) {
    cothread::loop lp;
    auto [c, a] = cothread::sync_wait(lp, connected(endpoint::v4("127.0.0.1", 0)));
    std::stop_source src;
    stop_result r;
    lp.spawn_detached(stopped_reader(&c, &a, &r), src.get_token());
    std::thread t;
    if (other_thread) {
        t = std::thread([&] {
            while (!r.parked) std::this_thread::sleep_for(1ms);
            std::this_thread::sleep_for(10ms);
            src.request_stop();
        });
    } else {
        lp.spawn_detached(stopper(&src));
    }
    lp.run();
    if (t.joinable()) t.join();
    CHECK(r.canceled);
    CHECK(r.reads_again);
    CHECK(r.took >= 10ms);
    CHECK(r.took < 5s);
    // The socket reads on: a task without a stop gets the byte.
    auto again = [](tcp_socket *s) -> task<std::size_t> {
        std::byte b[4];
        co_return co_await s->read(b, 5s);
    };
    CHECK_EQ(cothread::sync_wait(lp, again(&c)), std::size_t(1));
}

static void test_stop_read() { run_stop_read(false); }
static void test_stop_read_other_thread() { run_stop_read(true); }

// Stop during a connect that waits (full backlog): ends at once.
static task<void> stopped_connect(endpoint at, stop_result *r) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto t0 = steady::now();
    r->parked = true;
    try {
        tcp_socket s = co_await tcp_socket::connect(lp, at);
    } catch (const std::system_error &e) {
        r->canceled = e.code() == std::errc::operation_canceled;
    }
    r->took = steady::now() - t0;
}

static void test_stop_connect() {
    cothread::loop lp;
    tcp_listener l = tcp_listener::bind(lp, endpoint::v4("127.0.0.1", 0), 1);
    std::vector<tcp_socket> in = cothread::sync_wait(lp, fill_backlog(l.local_endpoint()));
    std::stop_source src;
    stop_result r;
    lp.spawn_detached(stopped_connect(l.local_endpoint(), &r), src.get_token());
    std::thread t([&] {
        while (!r.parked) std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(10ms);
        src.request_stop();
    });
    lp.run();
    t.join();
    CHECK(r.canceled);
    CHECK(r.took < 1s);
}

// The peer resets while a big write waits: connection_reset or broken_pipe,
// and no SIGPIPE. The error_code form returns the count surely sent.
static task<int> peer_reset() {
    auto [c, a] = co_await connected(endpoint::v4("127.0.0.1", 0));
    co_await c.write(std::string("unread"));
    co_await cothread::sleep_for(5ms);
    struct linger lg = {1, 0};
    CHECK_EQ(cot_tcp_setopt(a.native_loop(), a.native(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    std::vector<std::byte> data(16 << 20, std::byte(7));
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    tcp_socket *peer = &a;  // (clang 14 cannot capture a structured binding)
    lp.post([peer] { peer->close(); });  // unread bytes and linger 0: a reset
    std::error_code ec;
    std::size_t n = co_await c.write(data, 10s, ec);
    CHECK(ec == std::errc::connection_reset || ec == std::errc::broken_pipe);
    CHECK(n < data.size());
    bool threw = false;
    try {
        co_await c.write(data, 10s);
    } catch (const std::system_error &e) {
        threw = e.code() == std::errc::connection_reset || e.code() == std::errc::broken_pipe;
    }
    CHECK(threw);
    co_return 1;
}

static void test_peer_reset() {
    CHECK(signal(SIGPIPE, SIG_DFL) != SIG_ERR);  // a SIGPIPE would kill us
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, peer_reset()), 1);
}

// error_code forms clear the code on success.
static task<int> ec_forms() {
    auto [c, a] = co_await connected(endpoint::v4("127.0.0.1", 0));
    std::error_code ec = std::make_error_code(std::errc::io_error);
    std::size_t n = co_await c.write(bytes("abc"), ec);
    CHECK(!ec);
    CHECK_EQ(n, std::size_t(3));
    ec = std::make_error_code(std::errc::io_error);
    std::byte b[8];
    n = co_await a.read(b, ec);
    CHECK(!ec);
    CHECK_EQ(n, std::size_t(3));
    c.set_nodelay(true);
    co_return 1;
}

static void test_ec_forms() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, ec_forms()), 1);
}

static task<int> hot_path() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto [c, a] = co_await connected(endpoint::v4("127.0.0.1", 0));
    co_await a.write(std::string(100, 'h'));
    co_await cothread::sleep_for(5ms);  // loopback: the bytes are there
    std::byte buf[100];
    std::string small = "pong";
    bool turned = false;
    lp.post([&turned] { turned = true; });  // runs only if the loop turns
    long before = heap_allocations.load();
    std::size_t n = co_await c.read(buf);
    std::size_t w = co_await c.write(small);
    long allocs = heap_allocations.load() - before;
    CHECK_EQ(n, std::size_t(100));
    CHECK_EQ(w, small.size());
    CHECK(!turned);
    if (counting_heap) CHECK_EQ(allocs, 0L);
    co_await cothread::yield();
    CHECK(turned);
    co_return 1;
}

static void test_hot_path() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, hot_path()), 1);
}

// A read raced against a sleep: the loser's read is cancelled (the socket
// reads again at once, not busy); with data there, the read wins at start.
static task<int> read_or_sleep() {
    auto [c, a] = co_await connected(endpoint::v4("127.0.0.1", 0));
    std::byte buf[16];
    auto r = co_await cothread::when_any(c.read(buf), cothread::sleep_for(20ms));
    CHECK_EQ(r.index(), std::size_t(1));
    co_await a.write(std::string("abc"));
    std::size_t n = co_await c.read(buf, 5s);
    CHECK_EQ(n, std::size_t(3));
    co_await a.write(std::string("de"));
    co_await cothread::sleep_for(5ms);
    auto r2 = co_await cothread::when_any(c.read(buf), cothread::sleep_for(1h));
    CHECK_EQ(r2.index(), std::size_t(0));
    CHECK_EQ(std::get<0>(r2), std::size_t(2));
    co_return 1;
}

static void test_read_or_sleep() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, read_or_sleep()), 1);
}

// A read after a short one (the socket drained) skips the doomed try and
// waits for readiness: bytes that came meanwhile still come, at once, and
// a full read ends the skip.
static task<int> read_after_short() {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto [c, a] = co_await connected(endpoint::v4("127.0.0.1", 0));
    std::byte buf[4];
    co_await a.write(std::string("ab"));
    CHECK_EQ(co_await c.read(buf, 5s), std::size_t(2));  // short
    CHECK_EQ(cot_tcp_drained(c.native_loop(), c.native()), 1);
    co_await a.write(std::string("cdefgh"));
    co_await cothread::sleep_for(5ms);  // loopback: the bytes are there
    bool turned = false;
    lp.post([&turned] { turned = true; });
    auto t0 = steady::now();
    CHECK_EQ(co_await c.read(buf, 5s), std::size_t(4));
    CHECK(steady::now() - t0 < 1s);
    CHECK(turned);  // it waited for readiness rather than trying
    CHECK(std::string(reinterpret_cast<char *>(buf), 4) == "cdef");
    CHECK_EQ(cot_tcp_drained(c.native_loop(), c.native()), 0);  // full
    turned = false;
    lp.post([&turned] { turned = true; });
    CHECK_EQ(co_await c.read(buf, 5s), std::size_t(2));  // tried at once
    CHECK(!turned);
    CHECK(std::string(reinterpret_cast<char *>(buf), 2) == "gh");
    co_await cothread::sleep_for(1ms);  // the post runs before `turned` goes
    CHECK(turned);
    co_return 1;
}

static void test_read_after_short() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, read_after_short()), 1);
}

int main() {
    RUN(test_echo_v4);
    RUN(test_echo_v6);
    RUN(test_echo_unix);
    RUN(test_read_exact);
    RUN(test_big_write);
    RUN(test_write_in_place);
    RUN(test_read_deadline);
    RUN(test_connect_deadline);
    RUN(test_stop_read);
    RUN(test_stop_read_other_thread);
    RUN(test_stop_connect);
    RUN(test_peer_reset);
    RUN(test_ec_forms);
    RUN(test_hot_path);
    RUN(test_read_or_sleep);
    RUN(test_read_after_short);
    return 0;
}
