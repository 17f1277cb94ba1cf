// Fairness through a TCP proxy (issue 27): CLIENTS clients each send MIB
// MiB through a proxy to a sink, which answers each with the count it got.
// The proxy closes a connection as idle when no byte moved for IDLE ms, and
// a ticker on the proxy's loop (a 10 ms sleep, again and again) measures how
// late its timers fire. A proxy whose reads and writes complete at once and
// never yield starves its own timers: they fire late, and the watchdogs
// close healthy connections that were only waiting for their turn.
//
// The proxies, each written as its library's user would, with no explicit
// yield, each on its own thread:
//   ours: a task per connection: when_any(both pumps, the watchdog); a pump
//         reads CHUNK bytes and writes them on (cothread tasks, <cothread/tcp.h>);
//   asio: the same with awaitable operators (pumps && ... || watchdog),
//         async_read_some + async_write, io_context(1).
// The load (the clients and the sink) is the same for both: asio on the main
// thread (fair by construction: it posts every completion).
//
// Reported per proxy and round: the wall time, idle closes, failed clients,
// and the ticker's lateness (mean, 99th percentile, worst); then the ratio
// of ours to asio (the target: no idle close, lateness within 2x).
//
//     make -C bench/cpp asio             (needs libasio-dev)
//     COT_BENCH_ROUNDS=3 bench/cpp/bench-cpp-proxy
// Settings: COT_BENCH_CLIENTS (256), COT_BENCH_MIB (4), COT_BENCH_IDLE_MS
// (300), COT_BENCH_CHUNK (proxy buffer, 16384), COT_BENCH_ROUNDS (1),
// COT_BENCH_ONLY (cothread or asio).
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stop_token>
#include <system_error>
#include <thread>
#include <vector>

#include <cothread/loop.h>
#include <cothread/tcp.h>
#include <cothread/timer.h>
#include <cothread/when_all.h>
#include <cothread/when_any.h>

#include "common.h"

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

static int clients_n;
static std::size_t bytes_per_client, chunk;
static steady::duration idle;
constexpr auto tick = 10ms;

// What a proxy run measured.
struct outcome {
    std::atomic<int> idle_closes{0};
    std::vector<double> late_ms;  // the ticker's, loop thread only
};

// A proxy: `main(upstream port, outcome, listening port out, ready)` on its
// own thread; `stop` from another thread.
struct proxy {
    const char *name;
    void (*run)(proxy *);
    void (*stop)(proxy *);
    std::uint16_t upstream = 0, port = 0;
    outcome *out = nullptr;
    void *state = nullptr;
    std::atomic<bool> ready{false};
};

// ===== ours =====

namespace ours {

cothread::task<void> pump(cothread::tcp_socket &from, cothread::tcp_socket &to, steady::time_point &last) {
    std::vector<std::byte> buf(chunk);
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

cothread::task<void> both(cothread::tcp_socket &c, cothread::tcp_socket &u, steady::time_point &last) {
    co_await cothread::when_all(pump(c, u, last), pump(u, c, last));
}

cothread::task<void> watchdog(const steady::time_point &last) {
    for (;;) {
        co_await cothread::sleep_for(idle / 4);
        if (steady::now() - last > idle) co_return;
    }
}

cothread::task<void> session(cothread::tcp_socket c, std::uint16_t upstream, outcome *out) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    std::error_code ec;
    cothread::tcp_socket u = co_await cothread::tcp_socket::connect(lp, cothread::endpoint::v4("127.0.0.1", upstream), ec);
    if (ec) co_return;
    steady::time_point last = steady::now();
    auto r = co_await cothread::when_any(both(c, u, last), watchdog(last));
    if (r.index() == 1) out->idle_closes++;
}

cothread::task<void> acceptor(cothread::tcp_listener l, std::uint16_t upstream, outcome *out) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    std::stop_token tok = co_await cothread::this_task::stop_token();
    std::error_code ec;
    for (;;) {
        cothread::tcp_socket s = co_await l.accept(ec);
        if (ec) co_return;
        lp.spawn_detached(session(std::move(s), upstream, out), tok);
    }
}

cothread::task<void> ticker(outcome *out) {
    for (;;) {
        steady::time_point t0 = steady::now();
        co_await cothread::sleep_for(tick);  // throws when stopped
        out->late_ms.push_back(std::chrono::duration<double, std::milli>(steady::now() - t0 - tick).count());
    }
}

struct state {
    cothread::loop lp;
    std::stop_source stop;
};

void run(proxy *p) {
    state st;
    auto l = cothread::tcp_listener::bind(st.lp, cothread::endpoint::v4("127.0.0.1", 0));
    p->port = l.local_endpoint().port();
    p->state = &st;
    st.lp.spawn_detached(acceptor(std::move(l), p->upstream, p->out), st.stop.get_token());
    st.lp.spawn_detached(ticker(p->out), st.stop.get_token());
    p->ready = true;
    st.lp.run();
}

void stop(proxy *p) {
    auto *st = static_cast<state *>(p->state);
    st->lp.post([st] { st->stop.request_stop(); });
}

}  // namespace ours

// ===== asio =====

namespace theirs {

using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;
constexpr auto nothrow = asio::experimental::as_tuple(asio::use_awaitable);

asio::awaitable<void> pump(tcp::socket &from, tcp::socket &to, steady::time_point &last) {
    std::vector<char> buf(chunk);
    for (;;) {
        auto [ec, n] = co_await from.async_read_some(asio::buffer(buf), nothrow);
        if (ec) break;
        last = steady::now();
        auto [ec2, m] = co_await asio::async_write(to, asio::buffer(buf.data(), n), nothrow);
        if (ec2) break;
    }
    std::error_code ignored;
    to.shutdown(tcp::socket::shutdown_send, ignored);
}

asio::awaitable<void> watchdog(const steady::time_point &last) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (;;) {
        t.expires_after(idle / 4);
        co_await t.async_wait(asio::use_awaitable);
        if (steady::now() - last > idle) co_return;
    }
}

asio::awaitable<void> session(tcp::socket c, std::uint16_t upstream, outcome *out) {
    tcp::socket u(c.get_executor());
    auto [ec] = co_await u.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), upstream), nothrow);
    if (ec) co_return;
    steady::time_point last = steady::now();
    auto r = co_await ((pump(c, u, last) && pump(u, c, last)) || watchdog(last));
    if (r.index() == 1) out->idle_closes++;
}

asio::awaitable<void> acceptor(tcp::acceptor &a, std::uint16_t upstream, outcome *out) {
    for (;;) {
        auto [ec, s] = co_await a.async_accept(nothrow);
        if (ec) co_return;
        asio::co_spawn(a.get_executor(), session(std::move(s), upstream, out), asio::detached);
    }
}

asio::awaitable<void> ticker(asio::steady_timer &t, outcome *out) {
    for (;;) {
        steady::time_point t0 = steady::now();
        t.expires_after(tick);
        auto [ec] = co_await t.async_wait(nothrow);
        if (ec) co_return;
        out->late_ms.push_back(std::chrono::duration<double, std::milli>(steady::now() - t0 - tick).count());
    }
}

struct state {
    asio::io_context io{1};
    tcp::acceptor a{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
    asio::steady_timer t{io};
};

void run(proxy *p) {
    state st;
    p->port = st.a.local_endpoint().port();
    p->state = &st;
    asio::co_spawn(st.io, acceptor(st.a, p->upstream, p->out), asio::detached);
    asio::co_spawn(st.io, ticker(st.t, p->out), asio::detached);
    p->ready = true;
    st.io.run();
}

void stop(proxy *p) {
    auto *st = static_cast<state *>(p->state);
    asio::post(st->io, [st] {
        st->a.close();
        st->t.cancel();
        st->io.stop();
    });
}

}  // namespace theirs

// ===== the load: clients and the sink, asio on a third thread =====
// asio posts every completion, so no client or sink connection waits for
// another's turn: an idle close is the proxy's doing.

namespace load {

using asio::ip::tcp;
using theirs::nothrow;

// The sink: reads everything, then answers with the count.
asio::awaitable<void> sink_conn(tcp::socket s) {
    std::vector<char> buf(256 * 1024);
    std::uint64_t got = 0;
    for (;;) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), nothrow);
        if (ec) break;
        got += n;
    }
    co_await asio::async_write(s, asio::buffer(&got, sizeof got), nothrow);
}

asio::awaitable<void> sink(tcp::acceptor &a) {
    for (;;) {
        auto [ec, s] = co_await a.async_accept(nothrow);
        if (ec) co_return;
        asio::co_spawn(a.get_executor(), sink_conn(std::move(s)), asio::detached);
    }
}

// A client: sends its bytes, then reads the sink's count; counts a failure.
asio::awaitable<void> client(std::uint16_t port, std::atomic<int> *failed, std::atomic<int> *left) {
    tcp::socket s(co_await asio::this_coro::executor);
    auto [ec] = co_await s.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), nothrow);
    bool ok = !ec;
    std::vector<char> buf(256 * 1024, 0x5a);
    for (std::size_t sent = 0; ok && sent < bytes_per_client;) {
        std::size_t n = std::min(buf.size(), bytes_per_client - sent);
        auto [ec2, m] = co_await asio::async_write(s, asio::buffer(buf.data(), n), nothrow);
        ok = !ec2;
        sent += m;
    }
    std::error_code ignored;
    s.shutdown(tcp::socket::shutdown_send, ignored);
    std::uint64_t got = 0;
    if (ok) {
        auto [ec3, m] = co_await asio::async_read(s, asio::buffer(&got, sizeof got), nothrow);
        ok = !ec3 && got == bytes_per_client;
    }
    if (!ok) ++*failed;
    --*left;
}

}  // namespace load

// ===== driver =====

struct round_result {
    double seconds;
    int idle_closes, failed;
    double mean_ms, p99_ms, max_ms;
};

static round_result measure(proxy &p, asio::io_context &io, std::uint16_t sink_port) {
    outcome out;
    p.out = &out;
    p.upstream = sink_port;
    p.ready = false;
    std::thread th([&p] { p.run(&p); });
    while (!p.ready) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);  // a few quiet ticks first
    std::atomic<int> failed{0}, left{clients_n};
    std::uint64_t t0 = wall_ns();
    io.restart();  // the last round ran it out of work
    for (int i = 0; i < clients_n; i++) asio::co_spawn(io, load::client(p.port, &failed, &left), asio::detached);
    while (left > 0) io.run_one();
    double secs = (wall_ns() - t0) / 1e9;
    p.stop(&p);
    th.join();
    std::vector<double> &l = out.late_ms;
    std::sort(l.begin(), l.end());
    double sum = 0;
    for (double v : l) sum += v;
    round_result r{secs, out.idle_closes.load(), failed.load(), 0, 0, 0};
    if (!l.empty()) {
        r.mean_ms = sum / l.size();
        r.p99_ms = l[std::min(l.size() - 1, l.size() * 99 / 100)];
        r.max_ms = l.back();
    }
    return r;
}

int main() {
    clients_n = int(env_num("COT_BENCH_CLIENTS", 256));
    bytes_per_client = std::size_t(env_num("COT_BENCH_MIB", 4) * 1024 * 1024);
    idle = std::chrono::milliseconds(long(env_num("COT_BENCH_IDLE_MS", 300)));
    chunk = std::size_t(env_num("COT_BENCH_CHUNK", 16384));
    int rounds = int(env_num("COT_BENCH_ROUNDS", 1));
    const char *only = std::getenv("COT_BENCH_ONLY");

    unsigned v = cot_version();
    std::printf("TCP proxy fairness: %d clients x %g MiB, proxy buffer %zu B, idle timeout %lld ms, ticker %lld ms, "
                "COT_BUDGET %u\n",
                clients_n, bytes_per_client / 1048576.0, chunk,
                (long long)std::chrono::duration_cast<std::chrono::milliseconds>(idle).count(),
                (long long)std::chrono::milliseconds(tick).count(), unsigned(COT_BUDGET));
    std::printf("cothread %u.%u.%u, asio %d.%d.%d, g++ %d.%d\n", v >> 16, (v >> 8) & 0xff, v & 0xff,
                ASIO_VERSION / 100000, ASIO_VERSION / 100 % 1000, ASIO_VERSION % 100, __GNUC__, __GNUC_MINOR__);

    asio::io_context io{1};  // the clients', run on this thread
    asio::io_context sink_io{1};  // the sink's, on a thread of its own
    asio::ip::tcp::acceptor sink_a{sink_io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
    std::uint16_t sink_port = sink_a.local_endpoint().port();
    asio::co_spawn(sink_io, load::sink(sink_a), asio::detached);
    auto sink_work = asio::make_work_guard(sink_io);
    std::thread sink_th([&] { sink_io.run(); });

    proxy ps[2];
    ps[0].name = "cothread";
    ps[0].run = ours::run;
    ps[0].stop = ours::stop;
    ps[1].name = "asio";
    ps[1].run = theirs::run;
    ps[1].stop = theirs::stop;
    round_result worst[2] = {};
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < 2; i++) {
            int k = r % 2 ? 1 - i : i;  // alternate which goes first
            if (only && std::strcmp(only, ps[k].name)) continue;
            round_result res = measure(ps[k], io, sink_port);
            std::printf("%-9s %6.2f s  idle closes %3d  failed clients %3d  lateness ms: mean %7.2f  p99 %7.2f  max %7.2f\n",
                        ps[k].name, res.seconds, res.idle_closes, res.failed, res.mean_ms, res.p99_ms, res.max_ms);
            std::fflush(stdout);
            round_result &w = worst[k];
            w.idle_closes = std::max(w.idle_closes, res.idle_closes);
            w.failed = std::max(w.failed, res.failed);
            w.mean_ms = std::max(w.mean_ms, res.mean_ms);
            w.p99_ms = std::max(w.p99_ms, res.p99_ms);
            w.max_ms = std::max(w.max_ms, res.max_ms);
        }
    if (!only)
        std::printf("worst of the rounds, ours/asio: lateness mean %.2f, p99 %.2f, max %.2f (target <= 2); idle closes %d vs %d\n",
                    worst[0].mean_ms / worst[1].mean_ms, worst[0].p99_ms / worst[1].p99_ms,
                    worst[0].max_ms / worst[1].max_ms, worst[0].idle_closes, worst[1].idle_closes);
    asio::post(sink_io, [&] { sink_a.close(); sink_io.stop(); });
    sink_th.join();
    return 0;
}
