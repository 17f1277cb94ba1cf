// TCP echo on N loops (issue 29, item 6): cothread's loop_group against
// asio with an io_context per thread, for N = 1, 2, 4, ... up to nproc,
// driven by bench/c/echo_load.h's client (64 connections ping-ponging
// 4 KiB messages, every byte checked) spread over K client threads.
//
// Three servers, each written as its library's user would write it:
//   reuseport: a loop_group of N loops; on each (g.each) a tcp_listener
//              bound with listen_options{.reuse_port = true} on one port,
//              and an accept loop spawning a task per connection, the
//              task of bench-cpp-echo (read into 64 KiB, write it back).
//   handoff:   a loop_group of N loops; loop 0 alone listens, and hands
//              each connection to the loop with the fewest (g.hand_off:
//              one on its way counts on its target, so a burst spreads).
//   asio:      N threads, each its own io_context(1) and its own acceptor
//              with SO_REUSEPORT on the port, the echo coroutine of
//              bench-cpp-echo.
// Neither side pins its threads.
//
// Server CPU per message is the sum of every server thread's CPU clock over
// the window. For each N: each server's msg/s and CPU per message, ours /
// asio, the per-loop connection counts (read while the connections are open;
// busiest / least busy, worst of the rounds); then each server's CPU per
// message at N = 2 over N = 1 (the cost of being a group), of the best
// rounds and the lowest of any round.
//
// Settings (environment): COT_BENCH_LOOPS (a list, "1,2,4"; default 1, 2,
// 4, ... and nproc), COT_BENCH_CLIENTS (client threads; default min(N,
// nproc)), COT_BENCH_ROUNDS (best of, default 3; the servers take turns
// going first), COT_BENCH_SECONDS (per server and round, default 3; also
// argv[1]), COT_BENCH_ONLY (reuseport, handoff or asio: one server alone,
// for a profiler).
//
//     make -C bench/cpp asio
//     COT_BENCH_ROUNDS=3 COT_BENCH_SECONDS=3 bench/cpp/bench-cpp-echo-group
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include <algorithm>
#include <cmath>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <cothread/loop.h>
#include <cothread/loop_group.h>
#include <cothread/tcp.h>

#include "echo_load.h"
#include "cot_echo.h"

// A server running on its threads; destroying it stops it and joins them.
struct running {
    int port = 0;
    std::vector<clockid_t> clocks;                // every server thread's CPU clock
    virtual std::vector<std::size_t> loads() = 0;  // open connections per thread
    virtual ~running() = default;
};

static clockid_t thread_clock(pthread_t t) {
    clockid_t c;
    CHECK(-pthread_getcpuclockid(t, &c));
    return c;
}

// ===== ours =====

// Handoff: loop 0 accepts everything and moves each connection to the loop
// with the fewest open.
static cothread::task<void> cot_handoff_acceptor(cothread::loop_group &g, cothread::tcp_listener l) {
    std::error_code ec;
    for (;;) {
        cothread::tcp_socket s = co_await l.accept(ec);
        if (ec) co_return;  // stopped
        s.set_nodelay(true);
        g.hand_off(s, cot_echo);
    }
}

struct cot_running : running {
    cothread::loop_group g;

    cot_running(std::size_t n, bool handoff) : g({.loops = n}) {
        std::vector<pthread_t> ids(n);
        // each() runs loop 0 first: the others bind the port it got.
        g.each([&](cothread::loop &lp, std::size_t i) {
            ids[i] = pthread_self();
            if (handoff && i > 0) return;
            auto ep = cothread::endpoint::v4("127.0.0.1", static_cast<std::uint16_t>(port));
            auto l = cothread::tcp_listener::bind(lp, ep, {.reuse_port = !handoff});
            if (i == 0) port = l.local_endpoint().port();
            if (handoff) lp.spawn_detached(cot_handoff_acceptor(g, std::move(l)));
            else lp.spawn_detached(cot_acceptor(std::move(l)));
        });
        for (pthread_t t : ids) clocks.push_back(thread_clock(t));
    }
    std::vector<std::size_t> loads() override {
        std::vector<std::size_t> v;
        for (std::size_t i = 0; i < g.size(); i++) v.push_back(g.load(i));
        return v;
    }
    // ~loop_group stops the acceptors; the connections ended with the client.
};

// ===== asio =====

using asio::ip::tcp;
constexpr auto nothrow = asio::experimental::as_tuple(asio::use_awaitable);
using reuse_port = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;

static asio::awaitable<void> asio_echo(tcp::socket s, std::atomic<std::size_t> &open) {
    open++;
    char buf[SERVER_BUF];
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), nothrow);
        if (ec) break;
        auto [ec2, m] = co_await asio::async_write(s, asio::buffer(buf, n), nothrow);
        if (ec2) break;
    }
    open--;
}

static asio::awaitable<void> asio_acceptor(tcp::acceptor &a, std::atomic<std::size_t> &open) {
    for (;;) {
        auto [ec, s] = co_await a.async_accept(nothrow);
        if (ec) co_return;
        s.set_option(tcp::no_delay(true));
        asio::co_spawn(a.get_executor(), asio_echo(std::move(s), open), asio::detached);
    }
}

struct asio_running : running {
    struct member {
        asio::io_context io{1};  // concurrency hint 1: no locking
        tcp::acceptor a{io};
        std::atomic<std::size_t> open{0};  // only for the report
        std::thread t;
    };
    std::vector<std::unique_ptr<member>> m;

    explicit asio_running(std::size_t n) {
        for (std::size_t i = 0; i < n; i++) {
            auto &x = *m.emplace_back(std::make_unique<member>());
            tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
            x.a.open(ep.protocol());
            x.a.set_option(tcp::acceptor::reuse_address(true));
            x.a.set_option(reuse_port(true));
            x.a.bind(ep);
            x.a.listen();
            if (i == 0) port = x.a.local_endpoint().port();
            asio::co_spawn(x.io, asio_acceptor(x.a, x.open), asio::detached);
            x.t = std::thread([&x] { x.io.run(); });
            pthread_setname_np(x.t.native_handle(), ("asio-loop-" + std::to_string(i)).c_str());
            clocks.push_back(thread_clock(x.t.native_handle()));
        }
    }
    std::vector<std::size_t> loads() override {
        std::vector<std::size_t> v;
        for (auto &x : m) v.push_back(x->open.load());
        return v;
    }
    ~asio_running() override {
        for (auto &x : m)
            asio::post(x->io, [&x = *x] {
                x.a.close();
                x.io.stop();
            });
        for (auto &x : m) x->t.join();
    }
};

// ===== driver =====

enum { REUSEPORT, HANDOFF, ASIO, SERVERS };
static const char *const names[SERVERS] = {"reuseport", "handoff", "asio"};

static std::unique_ptr<running> start(int which, std::size_t n) {
    if (which == ASIO) return std::make_unique<asio_running>(n);
    return std::make_unique<cot_running>(n, which == HANDOFF);
}

struct round_result {
    result r{};
    std::vector<std::size_t> loads;
};

static void read_loads(void *arg) {
    auto *p = static_cast<std::pair<running *, std::vector<std::size_t> *> *>(arg);
    *p->second = p->first->loads();
}

static round_result measure_group(int which, std::size_t n, int clients, double seconds) {
    round_result out;
    auto srv = start(which, n);
    std::pair<running *, std::vector<std::size_t> *> arg{srv.get(), &out.loads};
    load l{};
    l.name = names[which];
    l.port = srv->port;
    l.threads = clients;
    l.conns = CONNS;
    l.seconds = seconds;
    l.server_clocks = srv->clocks.data();
    l.server_threads = static_cast<int>(srv->clocks.size());
    l.while_open = read_loads;
    l.arg = &arg;
    out.r = run_load(&l);
    return out;  // srv's destructor stops the server
}

// Busiest over least busy; infinite when a loop has none.
static double spread(const std::vector<std::size_t> &v) {
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return *lo ? double(*hi) / double(*lo) : (*hi ? INFINITY : 1.0);
}

static std::string counts(const std::vector<std::size_t> &v) {
    std::string s;
    for (std::size_t x : v) s += (s.empty() ? "" : "/") + std::to_string(x);
    return s;
}

static std::vector<std::size_t> loop_counts(long nproc) {
    std::vector<std::size_t> v;
    if (const char *s = std::getenv("COT_BENCH_LOOPS")) {
        for (char *end; *s; s = *end ? end + 1 : end) {
            long x = std::strtol(s, &end, 10);
            if (end == s || x < 1 || (*end && *end != ',')) {
                std::fprintf(stderr, "COT_BENCH_LOOPS: expected a list like 1,2,4\n");
                std::exit(2);
            }
            v.push_back(std::size_t(x));
        }
        return v;
    }
    for (long x = 1; x < nproc; x *= 2) v.push_back(std::size_t(x));
    v.push_back(std::size_t(nproc));
    return v;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? std::atof(argv[1]) : env_num("COT_BENCH_SECONDS", 3);
    int rounds = int(env_num("COT_BENCH_ROUNDS", 3));
    const char *only = std::getenv("COT_BENCH_ONLY");
    int only_k = -1;
    for (int k = 0; k < SERVERS; k++)
        if (only && !std::strcmp(only, names[k])) only_k = k;
    if (!(seconds > 0) || (only && only_k < 0)) {
        std::fprintf(stderr, "usage: %s [seconds]; COT_BENCH_ONLY=reuseport|handoff|asio\n", argv[0]);
        return 2;
    }
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    std::vector<std::size_t> ns = loop_counts(nproc);
    const char *clients_env = std::getenv("COT_BENCH_CLIENTS");
    pattern_fill();

    unsigned v = cot_version();
    std::printf("TCP echo on N loops, loopback: %d connections, %d-byte messages, %g s per server, best of %d; "
                "%ld processors\n",
                CONNS, MSG, seconds, rounds, nproc);
    std::printf("cothread %u.%u.%u, asio %d.%d.%d, g++ %d.%d\n", v >> 16, (v >> 8) & 0xff, v & 0xff,
                ASIO_VERSION / 100000, ASIO_VERSION / 100 % 1000, ASIO_VERSION % 100, __GNUC__, __GNUC_MINOR__);

    // Best round per (N, server): by throughput, as bench-cpp-echo.
    std::vector<std::array<round_result, SERVERS>> best(ns.size());
    // And the lowest CPU per message of any round: on a shared machine the
    // steadier figure (the best round by throughput may be a costly one).
    std::vector<std::array<double, SERVERS>> least_cpu(ns.size());
    for (auto &a : least_cpu) a.fill(INFINITY);
    std::vector<double> worst_handoff_spread(ns.size(), 0);
    for (std::size_t j = 0; j < ns.size(); j++) {
        std::size_t n = ns[j];
        int clients = clients_env ? int(env_num("COT_BENCH_CLIENTS", 1)) : int(std::min<long>(long(n), nproc));
        std::printf("\nN = %zu loops, %d client thread%s\n", n, clients, clients == 1 ? "" : "s");
        for (int r = 0; r < rounds; r++)
            for (int i = 0; i < SERVERS; i++) {
                int k = (i + r) % SERVERS;  // each round another server goes first
                if (only_k >= 0 && k != only_k) continue;
                round_result res = measure_group(k, n, clients, seconds);
                report(names[k], res.r);
                std::printf("          connections per loop %s (busiest/least %.2f)\n", counts(res.loads).c_str(),
                            spread(res.loads));
                if (k == HANDOFF) worst_handoff_spread[j] = std::max(worst_handoff_spread[j], spread(res.loads));
                if (msg_rate(res.r) > msg_rate(best[j][k].r)) best[j][k] = res;
                least_cpu[j][k] = std::min(least_cpu[j][k], cpu_per_msg_ns(res.r));
            }
        if (only_k >= 0) continue;
        auto &b = best[j];
        for (int k : {REUSEPORT, HANDOFF})
            std::printf("N=%zu %-9s / asio: throughput %.3f (target >= 1.0), server CPU per message %.3f\n", n,
                        names[k], msg_rate(b[k].r) / msg_rate(b[ASIO].r),
                        cpu_per_msg_ns(b[k].r) / cpu_per_msg_ns(b[ASIO].r));
        std::printf("N=%zu handoff connections per loop (best round) %s; busiest/least, worst round %.2f "
                    "(target <= 1.2)\n",
                    n, counts(b[HANDOFF].loads).c_str(), worst_handoff_spread[j]);
    }

    // The cost of being a group: CPU per message on 2 loops over 1.
    auto i1 = std::find(ns.begin(), ns.end(), 1u), i2 = std::find(ns.begin(), ns.end(), 2u);
    if (i1 != ns.end() && i2 != ns.end()) {
        auto &b1 = best[std::size_t(i1 - ns.begin())], &b2 = best[std::size_t(i2 - ns.begin())];
        auto &l1 = least_cpu[std::size_t(i1 - ns.begin())], &l2 = least_cpu[std::size_t(i2 - ns.begin())];
        std::printf("\nserver CPU per message, N=2 / N=1 (target <= 1.1 for ours), best rounds:");
        for (int k = 0; k < SERVERS; k++)
            if (only_k < 0 || k == only_k)
                std::printf(" %s %.3f", names[k], cpu_per_msg_ns(b2[k].r) / cpu_per_msg_ns(b1[k].r));
        std::printf("; lowest of the rounds:");
        for (int k = 0; k < SERVERS; k++)
            if (only_k < 0 || k == only_k) std::printf(" %s %.3f", names[k], l2[k] / l1[k]);
        std::printf("\n");
    }
    return 0;
}
