// Fairness (COT_BUDGET): a task whose operations all complete at once
// yields before its operation number COT_BUDGET + 1 of a turn, and loses
// nothing by it.
// - reads of a socket whose bytes are all there, while another task counts
//   its turns: it runs exactly once every COT_BUDGET reads, bytes in order;
// - a reader flooded by a writer thread and a ticker on one loop: the
//   ticker is never late by more than two ticks;
// - issue 27's proxy: clients send through a proxy with an idle timeout per
//   connection, to a sink, all on one loop, no explicit yield: no connection
//   is closed as idle, and every byte arrives, in order.
// Without the budget the first sees no turn of the other task, the ticker
// waits for the whole flood, and the proxy closes connections as idle.
#include <cothread/endpoint.h>
#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>
#include <cothread/when_all.h>
#include <cothread/when_any.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <stop_token>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "check.h"

using namespace std::chrono_literals;
using cothread::endpoint;
using cothread::task;
using cothread::tcp_listener;
using cothread::tcp_socket;
using steady = std::chrono::steady_clock;

// The bytes every stream carries: byte i is i % 251, so a lost, repeated or
// reordered byte shows.
static std::byte pattern_at(std::uint64_t i) { return std::byte(i % 251); }

// The pattern from any phase: a window at `at % 251` holds bytes at..at+64 KiB.
static const std::vector<std::byte> &pattern_buf() {
    static const std::vector<std::byte> buf = [] {
        std::vector<std::byte> b(64 * 1024 + 251);
        for (std::size_t i = 0; i < b.size(); i++) b[i] = pattern_at(i);
        return b;
    }();
    return buf;
}

// Checks that `got` continues the pattern at `*at`, and moves `*at` on.
static void check_bytes(std::span<const std::byte> got, std::uint64_t *at) {
    for (std::size_t off = 0; off < got.size();) {
        std::size_t n = std::min<std::size_t>(got.size() - off, 64 * 1024);
        CHECK(std::memcmp(got.data() + off, pattern_buf().data() + *at % 251, n) == 0);
        off += n;
        *at += n;
    }
}

// A connected pair of plain descriptors on 127.0.0.1: {ours, the peer's}.
static std::pair<int, int> tcp_fds() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(l >= 0);
    CHECK(bind(l, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
    CHECK(listen(l, 1) == 0);
    CHECK(getsockname(l, reinterpret_cast<sockaddr *>(&a), &len) == 0);
    int peer = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(peer >= 0);
    CHECK(connect(peer, reinterpret_cast<sockaddr *>(&a), sizeof a) == 0);
    int ours = accept(l, nullptr, nullptr);
    CHECK(ours >= 0);
    close(l);
    return {ours, peer};
}

static tcp_socket adopt(cothread::loop &lp, int fd) {
    cot_tcp key = 0;
    CHECK_EQ(cot_tcp_open(lp.native(), fd, &key), 0);
    return tcp_socket(lp.native(), key);
}

// ===== the budget, counted: reads whose bytes are all there =====

constexpr std::size_t small = 16;                       // bytes per read: never short
constexpr std::size_t reads = 8 * COT_BUDGET + 5;       // then the end of the stream
constexpr std::size_t preloaded = reads * small;        // fits the socket's buffers

static task<void> count_turns(int *turns, const bool *stop) {
    while (!*stop) {
        ++*turns;
        co_await cothread::yield();
    }
}

static task<void> read_all_there(tcp_socket s, const int *turns, bool *stop) {
    std::byte buf[small];
    std::uint64_t at = 0;
    for (std::size_t i = 0;; i++) {
        std::size_t n = co_await s.read(buf);
        // After read i (from 0) the other task had i / COT_BUDGET turns:
        // reads COT_BUDGET, 2 * COT_BUDGET, ... yielded before trying.
        CHECK_EQ(*turns, int(i / COT_BUDGET));
        if (n == 0) break;
        CHECK_EQ(n, small);
        check_bytes(std::span(buf, n), &at);
    }
    CHECK_EQ(at, std::uint64_t(preloaded));
    *stop = true;
}

static void test_yields_every_budget() {
    auto [ours, peer] = tcp_fds();
    std::vector<std::byte> data(preloaded);
    for (std::size_t i = 0; i < preloaded; i++) data[i] = pattern_at(i);
    CHECK_EQ(write(peer, data.data(), data.size()), ssize_t(data.size()));
    close(peer);  // the end of the stream after them
    cothread::loop lp;
    int turns = 0;
    bool stop = false;
    lp.spawn_detached(read_all_there(adopt(lp, ours), &turns, &stop));
    lp.spawn_detached(count_turns(&turns, &stop));
    lp.run();
    CHECK_EQ(turns, int(reads / COT_BUDGET));  // its last turn saw the stop
}

// ===== a flooded reader and a ticker =====

constexpr auto tick = 25ms;
constexpr auto flood_for = 600ms;

static task<void> ticker(const bool *done, steady::duration *worst, int *ticks) {
    while (!*done) {
        steady::time_point t0 = steady::now();
        co_await cothread::sleep_for(tick);
        *worst = std::max(*worst, steady::now() - t0 - tick);
        ++*ticks;
    }
}

static task<void> flooded(tcp_socket s, bool *done) {
    std::byte buf[64];  // small reads: the writer stays ahead
    std::uint64_t at = 0;
    for (steady::time_point end = steady::now() + flood_for; steady::now() < end;) {
        std::size_t n = co_await s.read(buf, 1s);
        CHECK(n > 0);
        check_bytes(std::span(buf, n), &at);
    }
    *done = true;
    s.close();  // the writer's next send fails
}

// Writes the pattern as fast as the socket takes it, until the reader goes.
static void flood(int fd) {
    for (std::uint64_t at = 0;;) {
        ssize_t n = send(fd, pattern_buf().data() + at % 251, 64 * 1024, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        at += std::uint64_t(n);
    }
}

static void test_flood_does_not_starve_a_ticker() {
    auto [ours, peer] = tcp_fds();
    std::thread writer(flood, peer);
    bool done = false;
    steady::duration worst{};
    int ticks = 0;
    {
        cothread::loop lp;
        lp.spawn_detached(ticker(&done, &worst, &ticks));
        lp.spawn_detached(flooded(adopt(lp, ours), &done));
        lp.run();
    }
    writer.join();
    close(peer);
    std::printf("  %d ticks, the latest %.1f ms late\n", ticks, std::chrono::duration<double, std::milli>(worst).count());
    CHECK(worst <= 2 * tick);
    CHECK(ticks >= int(flood_for / tick / 2));
}

// ===== issue 27: a proxy with an idle timeout, flooded by its clients =====
// All on one loop: the clients, the proxy (a session per connection: two
// pumps and a watchdog that closes it when no byte came for `idle`) and
// the sink (checks every byte, answers with the count).

// Under ThreadSanitizer each operation costs several times more, and so
// does a turn of the loop, and how much more varies with the machine: with
// 128 clients and 300 ms the ticker was 28 to 443 ms late on the same
// build (CI lost 4 connections once). There this test looks for races;
// the plain and ASan runs (256 clients, 300 ms) show that the budget is
// needed and enough. So under TSan: a quarter of the clients and twice
// the idle timeout.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FAIR_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(FAIR_TSAN)
constexpr int clients = 64;
constexpr auto idle = 600ms;
#else
constexpr int clients = 256;
constexpr auto idle = 300ms;
#endif
constexpr std::size_t per_client = 4 << 20;
constexpr std::size_t proxy_chunk = 16 * 1024;

struct proxy_stats {
    int idle_closes = 0, sessions = 0, checked = 0;
};

static task<void> pump(tcp_socket &from, tcp_socket &to, steady::time_point &last) {
    std::vector<std::byte> buf(proxy_chunk);
    std::error_code ec;
    for (;;) {
        std::size_t n = co_await from.read(buf, ec);
        if (ec || n == 0) break;
        last = steady::now();
        co_await to.write(std::span(buf.data(), n), ec);
        if (ec) break;
    }
    cot_tcp_shutdown(to.native_loop(), to.native());
}

static task<void> both(tcp_socket &c, tcp_socket &u, steady::time_point &last) {
    co_await cothread::when_all(pump(c, u, last), pump(u, c, last));
}

static task<void> watchdog(const steady::time_point &last) {
    for (;;) {
        co_await cothread::sleep_for(idle / 4);
        if (steady::now() - last > idle) co_return;
    }
}

static task<void> session(tcp_socket c, endpoint upstream, proxy_stats *st) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    tcp_socket u = co_await tcp_socket::connect(lp, upstream, 5s);
    steady::time_point last = steady::now();
    auto r = co_await cothread::when_any(both(c, u, last), watchdog(last));
    if (r.index() == 1) st->idle_closes++;
    st->sessions++;
}

static task<void> proxy(tcp_listener l, endpoint upstream, proxy_stats *st) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    for (int i = 0; i < clients; i++) lp.spawn_detached(session(co_await l.accept(), upstream, st));
}

static task<void> sink_conn(tcp_socket s, proxy_stats *st) {
    std::vector<std::byte> buf(64 * 1024);
    std::uint64_t at = 0;
    std::error_code ec;
    for (;;) {
        std::size_t n = co_await s.read(buf, ec);
        if (ec || n == 0) break;
        check_bytes(std::span(buf.data(), n), &at);
    }
    st->checked++;
    co_await s.write(std::as_bytes(std::span(&at, 1)), ec);
}

static task<void> sink(tcp_listener l, proxy_stats *st) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    for (int i = 0; i < clients; i++) lp.spawn_detached(sink_conn(co_await l.accept(), st));
}

// Sends its bytes through the proxy; true if the sink got them all.
static task<bool> client(endpoint proxy_ep) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    std::error_code ec;
    tcp_socket s = co_await tcp_socket::connect(lp, proxy_ep, 5s, ec);
    if (ec) co_return false;
    for (std::uint64_t sent = 0; sent < per_client;) {
        std::size_t n = std::min<std::size_t>(64 * 1024, per_client - sent);
        co_await s.write(std::span(pattern_buf().data() + sent % 251, n), ec);
        if (ec) co_return false;
        sent += n;
    }
    cot_tcp_shutdown(s.native_loop(), s.native());
    std::uint64_t got = 0;
    co_await s.read_exact(std::as_writable_bytes(std::span(&got, 1)), 10s, ec);
    co_return !ec && got == per_client;
}

static task<int> all_clients(endpoint proxy_ep) {
    std::vector<task<bool>> all;
    for (int i = 0; i < clients; i++) all.push_back(client(proxy_ep));
    std::vector<bool> ok = co_await cothread::when_all(std::move(all));
    co_return int(std::count(ok.begin(), ok.end(), false));
}

// One run of the proxy: prints it and returns its idle closes, having
// checked every byte of the connections that were not closed.
static int proxy_run() {
    cothread::loop lp;
    proxy_stats st;
    tcp_listener sink_l = tcp_listener::bind(lp, endpoint::v4("127.0.0.1", 0), 1024);
    tcp_listener proxy_l = tcp_listener::bind(lp, endpoint::v4("127.0.0.1", 0), 1024);
    endpoint proxy_ep = proxy_l.local_endpoint(), sink_ep = sink_l.local_endpoint();
    lp.spawn_detached(sink(std::move(sink_l), &st));
    lp.spawn_detached(proxy(std::move(proxy_l), sink_ep, &st));
    bool done = false;
    steady::duration worst{};
    int ticks = 0;
    lp.spawn_detached(ticker(&done, &worst, &ticks));
    steady::time_point t0 = steady::now();
    int failed = cothread::sync_wait(lp, all_clients(proxy_ep));
    done = true;
    lp.run();
    std::printf("  %d x %zu MiB in %.2f s: %d idle closes, %d failed, the ticker's latest %.1f ms late\n", clients,
                per_client >> 20, std::chrono::duration<double>(steady::now() - t0).count(), st.idle_closes, failed,
                std::chrono::duration<double, std::milli>(worst).count());
    CHECK_EQ(failed, st.idle_closes);  // a client fails only when its connection was closed as idle
    CHECK_EQ(st.sessions, clients);
    CHECK_EQ(st.checked, clients);
    return st.idle_closes;
}

// Up to three runs, and one with no idle close passes. Without the budget
// every run closes dozens (53 to 141 measured); with it, a run is clean
// unless the whole process stalls: on this VM one run in four or five
// (before this session's changes as after) has a stall of 0.7 s, where the
// ticker is as late as everything else and a few connections go idle.
static void test_proxy_closes_none_as_idle() {
    int closes = 0;
    for (int run = 0; run < 3; run++)
        if ((closes = proxy_run()) == 0) break;
    CHECK_EQ(closes, 0);
}

// With arguments: only the tests whose names contain one of them.
int main(int argc, char **argv) {
    auto wanted = [&](const char *name) {
        return argc < 2 || std::any_of(argv + 1, argv + argc, [&](const char *a) { return std::strstr(name, a); });
    };
    if (wanted("test_yields_every_budget")) RUN(test_yields_every_budget);
    if (wanted("test_flood_does_not_starve_a_ticker")) RUN(test_flood_does_not_starve_a_ticker);
    if (wanted("test_proxy_closes_none_as_idle")) RUN(test_proxy_closes_none_as_idle);
    return 0;
}
