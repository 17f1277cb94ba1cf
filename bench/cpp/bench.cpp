// C++ face benchmarks: each cocls operation against a hand-written minimal
// baseline (baseline.h) in the same run. Prints ns per operation and the
// ratio ours / baseline; the best of ROUNDS runs, the two sides alternating.
//
//     make -C bench/cpp run            (after `cmake --build build`)
//     COT_BENCH_OPS=2000000 COT_BENCH_ROUNDS=10 bench/cpp/bench-cpp
#include <cstdio>
#include <string>

#include "baseline.h"
#include "cocls_ops.h"

// ===== co_await pause() among 4 coroutines =====

static baseline::task base_pauser(long n) {
    for (long i = 0; i < n; i++) co_await baseline::pause_awaiter{};
}

static double base_pause() {
    for (int i = 0; i < 4; i++) baseline::ready.push(base_pauser(ops / 4).h);
    double t0 = now_ns();
    while (!baseline::ready.empty()) baseline::ready.pop().resume();  // a finished one returns here
    return (now_ns() - t0) / double(ops);
}

// ===== a promise set that resumes a waiting coroutine =====

static baseline::future *base_pending = nullptr;

static baseline::task base_waiter() {
    for (;;) {
        baseline::future f;
        base_pending = &f;
        int v = co_await f;
        received += v;
        if (v == 0) co_return;
    }
}

static double base_promise() {
    received = 0;
    base_waiter().h.resume();
    double t0 = now_ns();
    for (long i = 0; i < ops; i++) base_pending->set(1);
    double dt = now_ns() - t0;
    base_pending->set(0);
    if (received != ops) std::abort();
    return dt / double(ops);
}

// The same behind a first-wins promise as COCLS's, with the plain future and
// with one that makes the core calls of cocls's design: not the target's
// baseline, the floors of the same guarantee and of the same design.
template <typename Future>
static baseline::claimed_promise<Future> base_claimed;

template <typename Future>
static baseline::task base_claimed_waiter() {
    for (;;) {
        Future f;
        base_claimed<Future>.target.store(&f, std::memory_order_release);
        int v = co_await f;
        received += v;
        if (v == 0) co_return;
    }
}

template <typename Future>
static double base_claimed_promise() {
    received = 0;
    base_claimed_waiter<Future>().h.resume();
    double t0 = now_ns();
    for (long i = 0; i < ops; i++) base_claimed<Future>.set(1);
    double dt = now_ns() - t0;
    base_claimed<Future>.set(0);
    if (received != ops) std::abort();
    return dt / double(ops);
}

// ===== a generator step: next() + value() =====

static baseline::generator base_counter() {
    for (int i = 0;; i++) co_yield i;
}

static double base_generator() { return steps_of(base_counter()); }

// ===== an uncontended mutex lock + release in a coroutine =====

static baseline::task base_locker(baseline::mutex &mx, long n, long &count) {
    for (long i = 0; i < n; i++) {
        co_await mx.lock();
        count++;
        mx.unlock();
    }
}

static double base_mutex() {
    baseline::mutex mx;
    long count = 0;
    double t0 = now_ns();
    base_locker(mx, ops, count).h.resume();
    double dt = now_ns() - t0;
    if (count != ops) std::abort();
    return dt / double(ops);
}

// ===== thread_pool::run_detached, 2 threads =====

static double base_pool() {
    baseline::pool pool(2);
    return run_detached_on(pool);
}

// ===== driver =====

using measure = double (*)();

static void compare(const char *what, int rounds, measure ours, measure base) {
    double best_ours = 1e300, best_base = 1e300;
    for (int r = 0; r < rounds; r++) {
        best_ours = std::min(best_ours, ours());
        best_base = std::min(best_base, base());
    }
    std::printf("%-44s cocls %8.2f ns/op | baseline %8.2f ns/op | ratio %.2f\n", what, best_ours, best_base,
                best_ours / best_base);
    std::fflush(stdout);
}

int main() {
    ops = env_num("COT_BENCH_OPS", 1000000);
    int rounds = int(env_num("COT_BENCH_ROUNDS", 10));
    std::printf("cocls on cothread %s: %ld operations per run, best of %d\n", cot_version_string(), ops, rounds);
    compare("co_await pause() among 4 coroutines", rounds, ours_pause, base_pause);
    compare("promise set resuming a waiting coroutine", rounds, ours_promise, base_promise);
    compare("  against: + first-wins claim", rounds, ours_promise, base_claimed_promise<baseline::future>);
    compare("  against: + claim + the 3 core calls", rounds, ours_promise, base_claimed_promise<baseline::core_future>);
    compare("generator next() + value()", rounds, ours_generator, base_generator);
    compare("uncontended mutex lock + release", rounds, ours_mutex, base_mutex);
    compare("thread_pool run_detached (2 threads)", rounds, ours_pool, base_pool);
    return 0;
}
