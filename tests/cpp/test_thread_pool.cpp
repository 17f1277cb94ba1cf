// thread_pool: co_await pool, pool(awaitable), run / run_detached of functions
// and coroutines, resume(suspend_point) against a plain set, resolve,
// any_enqueued, stop with queued work and after it. Thread identities are
// compared with ids recorded inside pool jobs (a one-thread pool has one id).
#include <cocls/thread_pool.h>

#include <atomic>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

using namespace cocls;

// The calling thread's id, read anew each time: std::this_thread::get_id()
// is pthread_self(), declared const, so an optimiser may reuse its value
// across a co_await after which the coroutine runs on another thread.
static std::thread::id (*volatile this_thread_id)() = [] { return std::this_thread::get_id(); };

static std::thread::id pool_thread_id(thread_pool &pool) {
    return pool.run([] { return this_thread_id(); }).wait();
}

// Where a coroutine ran before and after an await.
struct where {
    std::thread::id before;
    std::thread::id after;
    bool after_on_pool = false;
};

static async<void> move_to_pool(thread_pool &pool, where &w) {
    w.before = this_thread_id();
    co_await pool;
    w.after = this_thread_id();
    w.after_on_pool = is_current(pool);
}

static void co_await_pool_moves_the_coroutine_to_a_pool_thread() {
    thread_pool pool(1);
    auto pool_id = pool_thread_id(pool);
    CHECK(pool_id != this_thread_id());
    where w;
    move_to_pool(pool, w).join();
    CHECK(w.before == this_thread_id());
    CHECK(w.after == pool_id);
    CHECK(w.after_on_pool);
    CHECK(!is_current(pool));
}

static async<void> yield_to_a_queued_job(thread_pool &pool, std::vector<std::string> &log) {
    co_await pool;
    pool.run_detached([&] { log.push_back("job"); });
    co_await pool;  // on the pool already: goes behind the job
    log.push_back("coroutine");
}

static void co_await_pool_on_its_own_thread_lets_queued_jobs_run_first() {
    thread_pool pool(1);
    std::vector<std::string> log;
    yield_to_a_queued_job(pool, log).join();
    CHECK_EQ(log.size(), 2u);
    CHECK_EQ(log[0], "job");
    CHECK_EQ(log[1], "coroutine");
}

static future<int> wait_for_value(future<int> &f, std::thread::id &resumed_on) {
    int v = co_await f;
    resumed_on = this_thread_id();
    co_return v;
}

static void pool_resume_moves_the_waiter_to_the_pool_and_a_plain_set_does_not() {
    thread_pool pool(1);
    auto pool_id = pool_thread_id(pool);
    {
        future<int> f;
        auto p = f.get_promise();
        std::thread::id on;
        future<int> waiter = wait_for_value(f, on);
        CHECK(waiter.pending());
        p(12);  // the waiter runs here, before this returns
        CHECK(on == this_thread_id());
        CHECK_EQ(waiter.value(), 12);
    }
    {
        future<int> f;
        auto p = f.get_promise();
        std::thread::id on;
        future<int> waiter = wait_for_value(f, on);
        bool set = pool.resume(p(34));
        CHECK(set);
        CHECK_EQ(waiter.wait(), 34);
        CHECK(on == pool_id);
    }
    {
        future<int> f;
        auto p = f.get_promise();
        std::thread::id on;
        future<int> waiter = wait_for_value(f, on);
        pool.run(p(56));  // COCLS's older spelling of resume
        CHECK_EQ(waiter.wait(), 56);
        CHECK(on == pool_id);
    }
}

static void resolve_sets_the_promise_on_a_pool_thread() {
    thread_pool pool(1);
    auto pool_id = pool_thread_id(pool);
    future<int> f;
    auto p = f.get_promise();
    std::thread::id on;
    future<int> waiter = wait_for_value(f, on);
    pool.resolve(p, 78);
    CHECK(!p);  // moved into the job
    CHECK_EQ(waiter.wait(), 78);
    CHECK(on == pool_id);
}

static void run_gives_a_future_of_the_function_result() {
    thread_pool pool(2);
    CHECK_EQ(pool.run([] { return 6 * 7; }).wait(), 42);
    std::atomic<bool> ran{false};
    future<void> v = pool.run([&] { ran = true; });
    v.wait();
    CHECK(ran.load());
    future<int> e = pool.run([]() -> int { throw std::runtime_error("no"); });
    CHECK_THROWS(e.wait(), std::runtime_error);
    std::string s = "moved";
    CHECK_EQ(pool.run([s = std::move(s)] { return s + " in"; }).wait(), "moved in");
}

static async<std::thread::id> thread_of_coroutine() { co_return this_thread_id(); }
static async<int> throwing_coroutine() {
    throw std::logic_error("coroutine");
    co_return 0;
}

static void run_starts_a_coroutine_on_the_pool() {
    thread_pool pool(1);
    auto pool_id = pool_thread_id(pool);
    CHECK(pool.run(thread_of_coroutine()).wait() == pool_id);
    auto lazy = thread_of_coroutine();
    CHECK(pool.run(lazy).wait() == pool_id);
    CHECK(!lazy.valid());
    CHECK_THROWS(pool.run(throwing_coroutine()).wait(), std::logic_error);
}

static async<void> set_from_coroutine(promise<std::thread::id> p) {
    p(this_thread_id());
    co_return;
}

static void run_detached_runs_functions_and_coroutines_and_ignores_results() {
    thread_pool pool(1);
    auto pool_id = pool_thread_id(pool);
    {
        future<std::thread::id> f;
        pool.run_detached([p = f.get_promise()]() mutable { p(this_thread_id()); });
        CHECK(f.wait() == pool_id);
    }
    {
        future<std::thread::id> f;
        pool.run_detached(set_from_coroutine(f.get_promise()));
        CHECK(f.wait() == pool_id);
    }
    {
        // A result and an exception are dropped; the pool goes on.
        pool.run_detached([] { return 5; });
        pool.run_detached([] { throw std::runtime_error("ignored"); });
        pool.run_detached(throwing_coroutine());
        CHECK(pool_thread_id(pool) == pool_id);
    }
}

static void any_enqueued_says_when_jobs_wait_for_a_thread() {
    thread_pool pool(1);
    std::promise<void> started, gate;
    auto gate_f = gate.get_future();
    pool.run_detached([&] {
        started.set_value();
        gate_f.wait();
    });
    started.get_future().wait();
    CHECK(!pool.any_enqueued());  // the one job runs: nothing waits
    future<int> queued = pool.run([] { return 1; });
    CHECK(pool.any_enqueued());
    gate.set_value();
    CHECK_EQ(queued.wait(), 1);
    CHECK(!pool.any_enqueued());
}

// Records how a `co_await pool` ended.
static async<void> await_pool_recording(thread_pool &pool, std::atomic<int> &outcome, std::thread::id &on) {
    try {
        co_await pool;
        outcome = 1;
    } catch (const await_canceled_exception &) {
        outcome = 2;
    }
    on = this_thread_id();
}

static void stop_settles_queued_work_on_the_stopping_thread() {
    thread_pool pool(1);
    std::promise<void> started, gate;
    auto gate_f = gate.get_future();
    pool.run_detached([&] {
        started.set_value();
        gate_f.wait();
    });
    started.get_future().wait();

    // Queued behind the blocked thread:
    std::atomic<bool> fn_called{false}, detached_called{false};
    future<int> by_fn = pool.run([&] {
        fn_called = true;
        return 1;
    });
    future<std::thread::id> by_coroutine = pool.run(thread_of_coroutine());
    pool.run_detached([&] { detached_called = true; });
    future<std::thread::id> detached_coroutine_target;
    pool.run_detached(set_from_coroutine(detached_coroutine_target.get_promise()));
    std::atomic<int> transfer{0};
    std::thread::id transfer_on;
    await_pool_recording(pool, transfer, transfer_on).detach();
    future<int> f;
    auto p = f.get_promise();
    std::thread::id waiter_on;
    future<int> waiter = wait_for_value(f, waiter_on);
    pool.resume(p(9));
    future<int> resolved;
    auto rp = resolved.get_promise();
    std::thread::id resolved_waiter_on;
    future<int> resolved_waiter = wait_for_value(resolved, resolved_waiter_on);
    pool.resolve(std::move(rp), 10);

    std::thread::id stopper_id;
    std::thread stopper([&] {
        stopper_id = this_thread_id();
        pool.stop();  // settles the queue here, then waits for the gate job
    });
    resolved_waiter.sync();  // the last one settled
    gate.set_value();
    stopper.join();

    CHECK(pool.is_stopped());
    CHECK(!fn_called.load());
    CHECK_THROWS(by_fn.value(), await_canceled_exception);
    CHECK_THROWS(by_coroutine.value(), await_canceled_exception);
    CHECK(!detached_called.load());
    CHECK_THROWS(detached_coroutine_target.value(), await_canceled_exception);  // frame destroyed unstarted
    CHECK_EQ(transfer.load(), 2);
    CHECK(transfer_on == stopper_id);
    CHECK_EQ(waiter.value(), 9);
    CHECK(waiter_on == stopper_id);
    CHECK_EQ(resolved_waiter.value(), 10);
    CHECK(resolved_waiter_on == stopper_id);
}

static void after_stop_work_is_refused_at_once() {
    thread_pool pool(2);
    pool.stop();
    std::atomic<int> outcome{0};
    std::thread::id on;
    await_pool_recording(pool, outcome, on).join();
    CHECK_EQ(outcome.load(), 2);
    CHECK(on == this_thread_id());
    CHECK_THROWS(pool.run([] { return 1; }).wait(), await_canceled_exception);
    CHECK_THROWS(pool.run(thread_of_coroutine()).wait(), await_canceled_exception);
    bool called = false;
    pool.run_detached([&] { called = true; });
    CHECK(!called);
    future<int> f;
    auto p = f.get_promise();
    std::thread::id waiter_on;
    future<int> waiter = wait_for_value(f, waiter_on);
    pool.resume(p(3));
    CHECK_EQ(waiter.value(), 3);
    CHECK(waiter_on == this_thread_id());
    pool.stop();  // again: nothing more
}

static async<int> await_through_pool(thread_pool &pool, future<int> &f, where &w) {
    w.before = this_thread_id();
    int v = co_await pool(f);
    w.after = this_thread_id();
    co_return v;
}

static void co_await_pool_of_a_ready_future_stays_on_the_thread() {
    thread_pool pool(1);
    future<int> f([](promise<int> p) { p(5); });
    where w;
    CHECK_EQ(await_through_pool(pool, f, w).join(), 5);
    CHECK(w.before == this_thread_id());
    CHECK(w.after == this_thread_id());
}

static void co_await_pool_of_a_pending_future_resumes_on_the_pool() {
    thread_pool pool(1);
    auto pool_id = pool_thread_id(pool);
    future<int> f;
    auto p = f.get_promise();
    where w;
    future<int> result = await_through_pool(pool, f, w).start();
    CHECK(result.pending());
    p(6);  // here, but the coroutine goes on on the pool
    CHECK_EQ(result.wait(), 6);
    CHECK(w.before == this_thread_id());
    CHECK(w.after == pool_id);
}

// An awaiter foreign to cocls (no callback protocol, void await_suspend):
// pool(x) gives it a relay coroutine.
struct foreign_event {
    std::coroutine_handle<> waiter;
    int value = 0;
    struct awaiter_t {
        foreign_event &e;
        bool await_ready() const noexcept { return false; }
        void await_suspend(std::coroutine_handle<> h) noexcept { e.waiter = h; }
        int await_resume() const noexcept { return e.value; }
    };
    awaiter_t operator co_await() noexcept { return {*this}; }
};

static async<int> await_foreign_through_pool(thread_pool &pool, foreign_event &e, where &w) {
    int v = co_await pool(e);
    w.after = this_thread_id();
    w.after_on_pool = is_current(pool);
    co_return v;
}

static void co_await_pool_works_with_awaiters_foreign_to_cocls() {
    thread_pool pool(1);
    auto pool_id = pool_thread_id(pool);
    foreign_event e;
    where w;
    future<int> result = await_foreign_through_pool(pool, e, w).start();
    CHECK(e.waiter);
    e.value = 7;
    e.waiter.resume();  // resumes the relay, which moves the coroutine to the pool
    CHECK_EQ(result.wait(), 7);
    CHECK(w.after == pool_id);
    CHECK(w.after_on_pool);
}

static async<void> hop_many_times(thread_pool &pool, std::atomic<int> &count) {
    for (int i = 0; i < 100; i++) {
        co_await pool;
        count++;
    }
}

static void many_coroutines_hop_through_the_pool() {
    thread_pool pool(4);
    std::atomic<int> count{0};
    std::vector<future<void>> done(16);
    for (auto &d : done) d << [&] { return hop_many_times(pool, count).start(); };
    for (auto &d : done) d.wait();
    CHECK_EQ(count.load(), 1600);
}

int main() {
    RUN(co_await_pool_moves_the_coroutine_to_a_pool_thread);
    RUN(co_await_pool_on_its_own_thread_lets_queued_jobs_run_first);
    RUN(pool_resume_moves_the_waiter_to_the_pool_and_a_plain_set_does_not);
    RUN(resolve_sets_the_promise_on_a_pool_thread);
    RUN(run_gives_a_future_of_the_function_result);
    RUN(run_starts_a_coroutine_on_the_pool);
    RUN(run_detached_runs_functions_and_coroutines_and_ignores_results);
    RUN(any_enqueued_says_when_jobs_wait_for_a_thread);
    RUN(stop_settles_queued_work_on_the_stopping_thread);
    RUN(after_stop_work_is_refused_at_once);
    RUN(co_await_pool_of_a_ready_future_stays_on_the_thread);
    RUN(co_await_pool_of_a_pending_future_resumes_on_the_pool);
    RUN(co_await_pool_works_with_awaiters_foreign_to_cocls);
    RUN(many_coroutines_hop_through_the_pool);
    return 0;
}
