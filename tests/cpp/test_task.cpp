// cothread::task on a cothread::loop: results, exceptions, deep nesting,
// spawn from another thread, sync_wait re-entered, ~loop with a parked task,
// and a task awaiting a cocls future set on another thread resumes on the
// loop thread.
#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/timer.h>

#include <cocls/async.h>
#include <cocls/future.h>
#include <cocls/mutex.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "check.h"

using namespace std::chrono_literals;
using cothread::task;

static task<int> forty_two() { co_return 42; }
static task<int> add_one() { co_return 1 + co_await forty_two(); }
static task<void> nothing(int *hit) {
    *hit = 1;
    co_return;
}
static task<int> fails() {
    throw std::runtime_error("boom");
    co_return 0;
}
static task<int> catches() {
    try {
        co_await fails();
    } catch (const std::runtime_error &e) {
        co_return std::string(e.what()) == "boom" ? 7 : -1;
    }
    co_return -2;
}
static task<std::unique_ptr<int>> boxed(int v) { co_return std::make_unique<int>(v); }
static task<int> unbox() {
    auto p = co_await boxed(5);
    co_return *p + 1;
}

static void test_values() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, forty_two()), 42);
    CHECK_EQ(cothread::sync_wait(lp, add_one()), 43);
    int hit = 0;
    cothread::sync_wait(lp, nothing(&hit));
    CHECK_EQ(hit, 1);
    CHECK_THROWS(cothread::sync_wait(lp, fails()), std::runtime_error);
    CHECK_EQ(cothread::sync_wait(lp, catches()), 7);
    CHECK_EQ(cothread::sync_wait(lp, unbox()), 6);
    auto p = cothread::sync_wait(lp, boxed(9));
    CHECK_EQ(*p, 9);
}

static task<long> depth(long n) {
    if (n == 0) co_return 0;
    co_return 1 + co_await depth(n - 1);
}

static void test_deep_nesting() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, depth(1000000)), 1000000L);
}

static task<int> on_loop(cothread::loop *lp, std::thread::id *where) {
    *where = std::this_thread::get_id();
    co_await cothread::yield();
    CHECK(lp->is_current());
    co_return 11;
}

static void test_spawn_other_thread() {
    cothread::loop lp;
    std::thread::id where;
    std::atomic<int> got{0};
    std::thread other([&] {
        cocls::future<int> f = lp.spawn(on_loop(&lp, &where));
        got = f.wait();
    });
    // Run until the other thread's task is in, then until it has ended.
    while (got == 0) {
        lp.run();
        std::this_thread::sleep_for(1ms);
    }
    other.join();
    CHECK_EQ(got.load(), 11);
    CHECK(where == std::this_thread::get_id());
    CHECK(!lp.is_current());
}

static task<int> spawned_value() { co_return 3; }
static void test_spawn_same_thread() {
    cothread::loop lp;
    cocls::future<int> f = lp.spawn(spawned_value());
    CHECK(!f.ready());  // not run before the loop runs
    lp.run();
    CHECK(f.ready());
    CHECK_EQ(f.value(), 3);
    cocls::future<int> g = lp.spawn(fails());
    lp.run();
    CHECK_THROWS(g.value(), std::runtime_error);
}

static task<void> reenter(cothread::loop *lp) {
    bool threw = false;
    try {
        cothread::sync_wait(*lp, forty_two());
    } catch (const std::system_error &e) {
        threw = e.code() == std::errc::resource_deadlock_would_occur;
    }
    CHECK(threw);
    bool run_threw = false;
    try {
        lp->run();
    } catch (const std::system_error &e) {
        run_threw = e.code() == std::errc::resource_deadlock_would_occur;
    }
    CHECK(run_threw);
    co_return;
}

static void test_reentry() {
    cothread::loop lp;
    cothread::sync_wait(lp, reenter(&lp));
    CHECK_THROWS(cothread::sync_wait(lp, task<int>()), std::system_error);
}

static std::atomic<int> parked_ended{0};
static task<void> parked(bool *canceled) {
    struct ends {
        ~ends() { parked_ended++; }
    } e;
    try {
        co_await cothread::sleep_for(1h);
    } catch (const std::system_error &err) {
        *canceled = err.code() == std::errc::operation_canceled;
    }
}

static void test_loop_destroyed_with_parked_task() {
    bool c1 = false, c2 = false;
    std::optional<cocls::future<void>> f;  // outlives the loop, which resolves it
    {
        cothread::loop lp;
        lp.spawn_detached(parked(&c1));
        f.emplace([&] { return lp.spawn(parked(&c2)); });
        lp.post([&lp] { lp.stop(); });
        lp.run();  // both are parked now
        CHECK_EQ(parked_ended.load(), 0);
    }  // ~loop stops them; ASan checks nothing leaks
    CHECK_EQ(parked_ended.load(), 2);
    CHECK(c1);
    CHECK(c2);
    CHECK(f->ready());
    f->value();  // the task caught its cancel and returned
}

static task<int> await_future(cothread::loop *lp, cocls::future<int> *f, bool *resumed_on_loop) {
    int v = co_await *f;
    *resumed_on_loop = lp->is_current();
    co_return v;
}

static void test_cocls_future_hops_back() {
    cothread::loop lp;
    cocls::future<int> f;
    cocls::promise<int> p;
    f.~future();
    new (&f) cocls::future<int>([&](cocls::promise<int> pr) { p = std::move(pr); });
    bool on_loop = false;
    std::thread setter([&] {
        std::this_thread::sleep_for(20ms);
        p(5);
    });
    CHECK_EQ(cothread::sync_wait(lp, await_future(&lp, &f, &on_loop)), 5);
    setter.join();
    CHECK(on_loop);
}

// A task stopped while it awaits a cocls future goes on at once with
// operation_canceled; the future's later resolution frees what waited on it.
static task<int> await_stopped(cocls::future<int> *f, std::atomic<bool> *waiting) {
    *waiting = true;
    try {
        co_await *f;
    } catch (const std::system_error &e) {
        co_return e.code() == std::errc::operation_canceled ? 1 : -1;
    }
    co_return 0;
}

static void test_cocls_future_stopped() {
    std::optional<cocls::promise<int>> p;
    cocls::future<int> f([&](cocls::promise<int> pr) { p.emplace(std::move(pr)); });
    std::atomic<bool> waiting{false};
    std::optional<cocls::future<int>> r;  // outlives the loop, which resolves it
    {
        cothread::loop lp;
        r.emplace([&] { return lp.spawn(await_stopped(&f, &waiting)); });
        std::thread stopper([&] {
            while (!waiting) std::this_thread::sleep_for(1ms);
            std::this_thread::sleep_for(5ms);
            lp.stop();  // run() returns with the task still parked
        });
        lp.run();
        stopper.join();
        CHECK(!r->ready());
    }  // ~loop requests stop on the parked task: it ends at once
    CHECK(r->ready());
    CHECK_EQ(r->value(), 1);
    CHECK(!f.ready());
    (*p)(3);  // the orphaned waiter frees itself (ASan: no leak)
    CHECK(f.ready());
}

static task<void> await_then_flag(cocls::future<int> *f, int *out) {
    try {
        *out = co_await *f;
    } catch (const std::system_error &e) {
        *out = e.code() == std::errc::operation_canceled ? -1 : -2;
    }
}

// Stop from another thread, through spawn_detached's token.
static void test_cocls_future_stopped_other_thread() {
    std::optional<cocls::promise<int>> p;
    cocls::future<int> f([&](cocls::promise<int> pr) { p.emplace(std::move(pr)); });
    cothread::loop lp;
    std::stop_source src;
    int out = 0;
    lp.spawn_detached(await_then_flag(&f, &out), src.get_token());
    std::thread stopper([&] {
        std::this_thread::sleep_for(20ms);
        src.request_stop();
    });
    lp.run();
    stopper.join();
    CHECK_EQ(out, -1);
    std::thread setter([&] { (*p)(4); });  // resolved later, on another thread
    setter.join();
}

// A cocls mutex released on another thread: the task owns it on the loop
// thread (the in-frame hop, no allocation).
static task<int> lock_on_loop(cothread::loop *lp, cocls::mutex *mx, std::atomic<bool> *waiting) {
    *waiting = true;
    auto own = co_await mx->lock();
    CHECK(lp->is_current());
    co_return own ? 1 : 0;
}

static void test_cocls_mutex_hops_back() {
    cocls::mutex mx;
    std::atomic<bool> waiting{false};
    auto held = mx.try_lock();
    CHECK(held);
    std::thread unlocker([&] {
        while (!waiting) std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(10ms);
        held.release();
    });
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, lock_on_loop(&lp, &mx, &waiting)), 1);
    unlocker.join();
}

// A task awaits a task it spawned (a temporary future): ~loop stops the
// child, whose end resumes the parent.
static task<int> sleeps_long() {
    try {
        co_await cothread::sleep_for(1h);
    } catch (const std::system_error &) {
        co_return 2;
    }
    co_return 0;
}
static task<void> spawns_and_waits(int *out) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    *out = co_await lp.spawn(sleeps_long());
}

static void test_await_spawned() {
    int out = 0;
    {
        cothread::loop lp;
        lp.spawn_detached(spawns_and_waits(&out));
        lp.post([&lp] { lp.stop(); });
        lp.run();
        CHECK_EQ(out, 0);
    }
    CHECK_EQ(out, 2);
}

static cocls::async<int> cocls_side(int v) { co_return v * 2; }
static task<int> await_async(cothread::loop *lp) {
    int v = co_await cocls::future<int>(cocls_side(4));
    CHECK(lp->is_current());
    co_return v;
}

static void test_cocls_async() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, await_async(&lp)), 8);
}

static void test_post() {
    cothread::loop lp;
    int n = 0;
    std::thread t([&] {
        for (int i = 0; i < 100; i++) lp.post([&n] { n++; });
    });
    t.join();
    lp.run();
    CHECK_EQ(n, 100);
}

static task<void> token_and_loop(cothread::loop *lp) {
    std::stop_token tok = co_await cothread::this_task::stop_token();
    CHECK(!tok.stop_requested());
    cothread::loop &l = co_await cothread::this_task::get_loop();
    CHECK(&l == lp);
}

int main() {
    RUN(test_values);
    RUN(test_deep_nesting);
    RUN(test_spawn_same_thread);
    RUN(test_spawn_other_thread);
    RUN(test_reentry);
    RUN(test_loop_destroyed_with_parked_task);
    RUN(test_cocls_future_hops_back);
    RUN(test_cocls_async);
    RUN(test_await_spawned);
    RUN(test_cocls_mutex_hops_back);
    RUN(test_cocls_future_stopped);
    RUN(test_cocls_future_stopped_other_thread);
    RUN(test_post);
    {
        cothread::loop lp;
        cothread::sync_wait(lp, token_and_loop(&lp));
    }
    std::printf("ok\n");
    return 0;
}
