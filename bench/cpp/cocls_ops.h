// The five operations the C++ benchmarks time, written against COCLS's public API
// only, so that one text builds on cothread's <cocls/*.h> (bench.cpp, against
// hand-written baselines) and on COCLS's own headers (vs_cocls.cpp, against the
// original). Each ours_* runs `ops` operations and returns ns per operation.
#pragma once

#include <cocls/async.h>
#include <cocls/coro_queue.h>
#include <cocls/future.h>
#include <cocls/generator.h>
#include <cocls/mutex.h>
#include <cocls/thread_pool.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

static long ops = 1000000;

// A setting from the environment (COT_BENCH_OPS, ...), or `def`.
static long env_num(const char *name, long def) {
    const char *s = std::getenv(name);
    return s && *s ? std::strtol(s, nullptr, 10) : def;
}

static double now_ns() {
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ===== co_await pause() among 4 coroutines =====

static cocls::async<void> pauser(long n) {
    for (long i = 0; i < n; i++) co_await cocls::pause();
}

static cocls::future<void> four_pausers(long each) {
    for (int i = 0; i < 4; i++) pauser(each).detach();
    co_return;
}

static double ours_pause() {
    double t0 = now_ns();
    four_pausers(ops / 4).join();
    return (now_ns() - t0) / double(ops);
}

// ===== a promise set that resumes a waiting coroutine =====

static cocls::promise<int> pending;
static long received = 0;

static cocls::async<void> ours_waiter() {
    for (;;) {
        cocls::future<int> f;
        pending = f.get_promise();
        int v = co_await f;
        received += v;
        if (v == 0) co_return;
    }
}

static double ours_promise() {
    received = 0;
    ours_waiter().detach();
    double t0 = now_ns();
    for (long i = 0; i < ops; i++) pending(1);
    double dt = now_ns() - t0;
    pending(0);
    if (received != ops) std::abort();
    return dt / double(ops);
}

// ===== a generator step: next() + value() =====

static cocls::generator<int> ours_counter() {
    for (int i = 0;; i++) co_yield i;
}

// ns per next() + value() of a counting generator (either kind).
template <typename Gen>
static double steps_of(Gen gen) {
    long sum = 0;
    double t0 = now_ns();
    for (long i = 0; i < ops && gen.next(); i++) sum += gen.value();
    double dt = now_ns() - t0;
    if (sum != ops * (ops - 1) / 2) std::abort();
    return dt / double(ops);
}

static double ours_generator() { return steps_of(ours_counter()); }

// ===== an uncontended mutex lock + release in a coroutine =====

static cocls::async<void> ours_locker(cocls::mutex &mx, long n, long &count) {
    for (long i = 0; i < n; i++) {
        auto own = co_await mx.lock();
        count++;
    }
}

static double ours_mutex() {
    cocls::mutex mx;
    long count = 0;
    double t0 = now_ns();
    ours_locker(mx, ops, count).join();
    double dt = now_ns() - t0;
    if (count != ops) std::abort();
    return dt / double(ops);
}

// ===== thread_pool::run_detached, 2 threads =====

template <typename Pool>
static double run_detached_on(Pool &pool) {
    std::atomic<long> done{0};
    cocls::future<void> all;
    auto p = all.get_promise();
    long n = ops / 4;  // thread hand-offs are slower: fewer of them
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        pool.run_detached([&] {
            if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == n) p();
        });
    all.wait();
    return (now_ns() - t0) / double(n);
}

static double ours_pool() {
    cocls::thread_pool pool(2);
    return run_detached_on(pool);
}
