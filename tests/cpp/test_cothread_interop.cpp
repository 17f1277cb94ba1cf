// cothread tasks with COCLS, across threads: a task awaits a cocls future set
// on a pool thread and resumes on the loop thread; a cocls coroutine awaits a
// spawned task; when_any over a task and a cocls future, the future losing
// (its waiter frees itself when it is set later) and winning; a spawned
// task's future as a core future, awaited by a stackful C coroutine.
#include <cocls/async.h>
#include <cocls/core_future.h>
#include <cocls/future.h>
#include <cocls/thread_pool.h>
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/timer.h>
#include <cothread/when_all.h>
#include <cothread/when_any.h>

#include <atomic>
#include <chrono>
#include <system_error>
#include <thread>
#include <variant>
#include <vector>

#include "check.h"

using namespace std::chrono_literals;
using cothread::task;

static task<int> value_after(int v, std::chrono::milliseconds d) {
    co_await cothread::sleep_for(d);
    co_return v;
}

// ---- a task awaits futures set on pool threads -------------------------

static task<int> from_pool(cocls::thread_pool *pool, cothread::loop *lp, int i) {
    int v = co_await pool->run([i] {
        std::this_thread::sleep_for(std::chrono::microseconds(100 * (i % 5)));
        return i;
    });
    CHECK(lp->is_current());  // back on the loop thread
    co_return v;
}

static task<long> many_from_pool(cocls::thread_pool *pool, cothread::loop *lp) {
    std::vector<task<int>> ts;
    for (int i = 0; i < 100; i++) ts.push_back(from_pool(pool, lp, i));
    std::vector<int> vs = co_await cothread::when_all(std::move(ts));
    CHECK(lp->is_current());
    long sum = 0;
    for (int v : vs) sum += v;
    co_return sum;
}

static void test_pool_future() {
    cocls::thread_pool pool(3);
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, from_pool(&pool, &lp, 42)), 42);
    CHECK_EQ(cothread::sync_wait(lp, many_from_pool(&pool, &lp)), 4950L);
}

// ---- a cocls coroutine awaits a spawned task ---------------------------

static cocls::async<int> cocls_side(cothread::loop *lp, std::atomic<bool> *on_loop) {
    int v = co_await lp->spawn(value_after(20, 2ms));
    *on_loop = lp->is_current();  // the spawned task's future resolves there
    co_return v + 1;
}

static void test_cocls_awaits_task() {
    cothread::loop lp;
    std::atomic<bool> on_loop{false};
    cocls::future<int> r = cocls_side(&lp, &on_loop).start();  // spawns from this thread
    std::thread th([&] { lp.run(); });
    CHECK_EQ(r.wait(), 21);
    th.join();
    CHECK(on_loop);
}

// ---- when_any with a cocls future --------------------------------------

// The task wins; the future loses and is set later, on a pool thread, after
// the when_any and its task have ended: the waiter left on it frees itself
// (ASan would see a leak or a use after free).
static task<void> future_loses(cocls::future<int> *fut) {
    auto r = co_await cothread::when_any(value_after(7, 2ms), *fut);
    CHECK_EQ(r.index(), std::size_t(0));
    CHECK_EQ(std::get<0>(r), 7);
    CHECK(fut->pending());
}

static void test_future_loses() {
    cocls::thread_pool pool(1);
    cocls::future<int> fut;
    cocls::promise<int> prom = fut.get_promise();
    {
        cothread::loop lp;
        cothread::sync_wait(lp, future_loses(&fut));
    }
    pool.run_detached([&] {
        std::this_thread::sleep_for(2ms);
        prom(5);
    });
    CHECK_EQ(fut.wait(), 5);
}

// A winner at start: the future after it is never subscribed to.
static task<void> future_not_started(cocls::future<int> *fut) {
    auto r = co_await cothread::when_any(value_after(1, 0ms), *fut);
    CHECK_EQ(r.index(), std::size_t(0));
}

static void test_future_not_started() {
    cocls::future<int> fut;
    cocls::promise<int> prom = fut.get_promise();
    cothread::loop lp;
    cothread::sync_wait(lp, future_not_started(&fut));
    prom(3);
    CHECK_EQ(fut.value(), 3);
}

// The future wins (set on a pool thread) against a long sleep; the task
// resumes on the loop thread.
static task<int> future_wins(cocls::future<int> *fut, cothread::loop *lp) {
    auto r = co_await cothread::when_any(*fut, cothread::sleep_for(1h));
    CHECK(lp->is_current());
    CHECK_EQ(r.index(), std::size_t(0));
    co_return std::get<0>(r);
}

static void test_future_wins() {
    cocls::thread_pool pool(1);
    cocls::future<int> fut;
    cocls::promise<int> prom = fut.get_promise();
    cothread::loop lp;
    pool.run_detached([&] {
        std::this_thread::sleep_for(5ms);
        prom(11);
    });
    CHECK_EQ(cothread::sync_wait(lp, future_wins(&fut, &lp)), 11);
}

// An async is started on the loop thread and waited for (cocls cannot
// cancel it), even as a loser.
static cocls::async<int> async_value(cocls::thread_pool *pool, int v) {
    co_await (*pool);  // continues on a pool thread
    std::this_thread::sleep_for(3ms);
    co_return v;
}

static task<void> with_async(cocls::thread_pool *pool) {
    auto [a, b] = co_await cothread::when_all(async_value(pool, 2), value_after(3, 1ms));
    CHECK_EQ(a + b, 5);
    auto r = co_await cothread::when_any(value_after(4, 0ms), async_value(pool, 9));
    CHECK_EQ(r.index(), std::size_t(0));
}

static void test_async() {
    cocls::thread_pool pool(2);
    cothread::loop lp;
    cothread::sync_wait(lp, with_async(&pool));
}

// The awaiting task stopped from another thread while a child waits on a
// future: the child ends at once; the future is set later.
static task<void> stopped_on_future(cocls::future<int> *fut, std::atomic<bool> *parked, int *result) {
    parked->store(true);
    try {
        co_await cothread::when_all(*fut, cothread::sleep_for(1h));
    } catch (const std::system_error &e) {
        if (e.code() == std::errc::operation_canceled) *result = 1;
    }
}

static void test_stopped_from_thread() {
    cocls::future<int> fut;
    cocls::promise<int> prom = fut.get_promise();
    std::stop_source src;
    std::atomic<bool> parked{false};
    int result = 0;
    {
        cothread::loop lp;
        lp.spawn_detached(stopped_on_future(&fut, &parked, &result), src.get_token());
        std::thread th([&] {
            while (!parked) std::this_thread::sleep_for(1ms);
            std::this_thread::sleep_for(5ms);
            src.request_stop();
        });
        lp.run();
        th.join();
    }
    CHECK_EQ(result, 1);
    prom(1);
    CHECK_EQ(fut.value(), 1);
}

// ---- a stackful C coroutine awaits a spawned task ----------------------

struct core_wait {
    cot_future *f;
    int rc = -1;
};

static void *await_core(void *arg) {
    auto *w = static_cast<core_wait *>(arg);
    w->rc = cot_coro_await(w->f, COT_CORO_FOREVER);
    return nullptr;
}

static void test_to_core() {
    cothread::loop lp;
    cocls::future<int> f = lp.spawn(value_after(9, 5ms));
    core_wait w;
    w.f = cocls::to_core(f);
    std::thread th([&] { lp.run(); });
    cot_loop *cl = cot_loop_new();
    CHECK(cl != nullptr);
    cot_coro *co = nullptr;
    CHECK_EQ(cot_coro_new(cl, await_core, &w, 0, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    CHECK_EQ(cot_loop_run(cl, COT_RUN_DEFAULT), 0);
    th.join();
    CHECK_EQ(w.rc, 0);
    void *v = nullptr;
    const char *msg = nullptr;
    CHECK_EQ(cot_future_result(w.f, &v, &msg), 0);
    CHECK_EQ(*static_cast<int *>(v), 9);
    CHECK_EQ(f.value(), 9);
    CHECK_EQ(cot_coro_free(co), 0);
    cot_future_free(w.f);
    CHECK_EQ(cot_loop_close(cl), 0);
}

int main() {
    RUN(test_pool_future);
    RUN(test_cocls_awaits_task);
    RUN(test_future_loses);
    RUN(test_future_not_started);
    RUN(test_future_wins);
    RUN(test_async);
    RUN(test_stopped_from_thread);
    RUN(test_to_core);
    std::printf("ok\n");
    return 0;
}
