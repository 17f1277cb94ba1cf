// 100 000 sleeping coroutines: cothread's tasks on a loop against asio's
// C++20 coroutines on an io_context, in one process.
//
// Each side starts N coroutines (COT_BENCH_TIMERS, default 100 000) from a
// function posted to its loop, so each starts at once; each sleeps once and
// counts itself done.
//   ours: lp.spawn_detached(sleeper(d)), co_await cothread::sleep_for(d)
//   asio: co_spawn(io, sleeper(d), detached), a steady_timer and
//         co_await t.async_wait(use_awaitable); io_context(1)
// Both pay one coroutine frame and one timer per sleeper.
//
// Rows: "random", the d_i drawn from one seeded RNG in [0, 10 ms) at ns
// resolution (the same draws for both sides); "1 ms", every sleeper the same
// 1 ms (deadlines that group).
//
// Measured on the loop thread: CPU time (CLOCK_THREAD_CPUTIME_ID) from the
// first spawn until all are done (the figure), the spawn phase alone, and
// the wall time beyond max(d_i). Best of COT_BENCH_ROUNDS (default 5), the
// two sides alternating. COT_BENCH_ONLY=cothread or =asio runs one side
// alone (for a profiler).
//
//     make -C bench/cpp run-timers       (needs libasio-dev)
//     COT_BENCH_TIMERS=100000 COT_BENCH_ROUNDS=5 bench/cpp/bench-cpp-timers
#include <asio.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cothread/loop.h>
#include <cothread/timer.h>

#include "common.h"

using std::chrono::nanoseconds;

static long done;
static const char *only;  // COT_BENCH_ONLY: one side alone, or both

struct figures {
    double cpu_ns;    // loop-thread CPU, first spawn to all done
    double spawn_ns;  // loop-thread CPU of the spawn phase
    double late_ns;   // wall time beyond max(d_i)
};

static void keep_best(figures &best, figures f) {
    if (f.cpu_ns < best.cpu_ns) best = f;
}

// ===== ours =====

static cothread::task<void> cot_sleeper(nanoseconds d) {
    co_await cothread::sleep_for(d);
    ++done;
}

static figures cot_run(const std::vector<nanoseconds> &ds, nanoseconds max_d) {
    cothread::loop lp;
    done = 0;
    uint64_t spawned = 0;
    uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w0 = wall_ns();
    lp.post([&] {
        for (nanoseconds d : ds) lp.spawn_detached(cot_sleeper(d));
        spawned = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    });
    lp.run();
    uint64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w1 = wall_ns();
    if (done != long(ds.size())) std::abort();
    return {double(c1 - c0), double(spawned - c0), double(w1 - w0) - double(max_d.count())};
}

// ===== asio =====

static asio::awaitable<void> asio_sleeper(nanoseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
    ++done;
}

static figures asio_run(const std::vector<nanoseconds> &ds, nanoseconds max_d) {
    asio::io_context io(1);
    done = 0;
    uint64_t spawned = 0;
    uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w0 = wall_ns();
    asio::post(io, [&] {
        for (nanoseconds d : ds) asio::co_spawn(io, asio_sleeper(d), asio::detached);
        spawned = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    });
    io.run();
    uint64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w1 = wall_ns();
    if (done != long(ds.size())) std::abort();
    return {double(c1 - c0), double(spawned - c0), double(w1 - w0) - double(max_d.count())};
}

// ===== driver =====

static void row(const char *name, const std::vector<nanoseconds> &ds, int rounds) {
    nanoseconds max_d = *std::max_element(ds.begin(), ds.end());
    figures ours{1e300, 0, 0}, theirs{1e300, 0, 0};
    for (int r = 0; r < rounds; r++) {
        if (only) {
            if (!std::strcmp(only, "cothread")) keep_best(ours, cot_run(ds, max_d));
            else keep_best(theirs, asio_run(ds, max_d));
        } else if (r % 2 == 0) {
            keep_best(ours, cot_run(ds, max_d));
            keep_best(theirs, asio_run(ds, max_d));
        } else {
            keep_best(theirs, asio_run(ds, max_d));
            keep_best(ours, cot_run(ds, max_d));
        }
    }
    double n = double(ds.size());
    auto print = [&](const char *side, figures f) {
        if (f.cpu_ns < 1e300)
            std::printf("%-8s %-9s CPU %7.2f ms (%6.0f ns/sleeper, spawn %6.2f ms), %6.2f ms beyond max(d)\n", name,
                        side, f.cpu_ns / 1e6, f.cpu_ns / n, f.spawn_ns / 1e6, f.late_ns / 1e6);
    };
    print("cothread:", ours);
    print("asio:", theirs);
    if (!only) std::printf("%-8s ratio ours/asio: CPU %.3f (target <= 1.0)\n", name, ours.cpu_ns / theirs.cpu_ns);
}

int main() {
    long n = long(env_num("COT_BENCH_TIMERS", 100000));
    int rounds = int(env_num("COT_BENCH_ROUNDS", 5));
    only = std::getenv("COT_BENCH_ONLY");
    if (only && std::strcmp(only, "cothread") && std::strcmp(only, "asio")) {
        std::fprintf(stderr, "COT_BENCH_ONLY=%s: expected cothread or asio\n", only);
        return 2;
    }
    unsigned v = cot_version();
    std::printf("cothread %u.%u.%u, asio %d.%d.%d, g++ %d.%d; %ld sleepers per side, best of %d\n", v >> 16,
                (v >> 8) & 0xff, v & 0xff, ASIO_VERSION / 100000, ASIO_VERSION / 100 % 1000, ASIO_VERSION % 100,
                __GNUC__, __GNUC_MINOR__, n, rounds);

    std::vector<nanoseconds> ds(n);
    uint64_t seed = 42;
    for (auto &d : ds) d = nanoseconds(rng_next(&seed) % 10000000);
    row("random", ds, rounds);

    std::fill(ds.begin(), ds.end(), nanoseconds(1000000));
    row("1 ms", ds, rounds);
}
