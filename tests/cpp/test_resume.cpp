// Resumption policies: parallel(x) and parallel_resume(sp) on a new thread,
// immediately(x) nested inside the resumer even in coro mode, ready
// awaitables going on in place; and self().
#include <cocls/resume.h>
#include <cocls/self.h>
#include <cocls/future.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

using namespace cocls;

// The calling thread's id, read anew each time: std::this_thread::get_id()
// is pthread_self(), declared const, so an optimiser may reuse its value
// across a co_await after which the coroutine runs on another thread.
static std::thread::id (*volatile this_thread_id)() = [] { return std::this_thread::get_id(); };

static async<int> await_in_parallel(future<int> &f, std::thread::id &on) {
    int v = co_await parallel(f);
    on = this_thread_id();
    co_return v;
}

static void parallel_resumes_on_a_new_thread() {
    future<int> f;
    auto p = f.get_promise();
    std::thread::id on;
    future<int> r = await_in_parallel(f, on).start();
    CHECK(r.pending());
    p(4);
    CHECK_EQ(r.wait(), 4);
    CHECK(on != this_thread_id());
    CHECK(on != std::thread::id());
}

static void parallel_of_a_ready_awaitable_stays_on_the_thread() {
    future<int> f([](promise<int> p) { p(5); });
    std::thread::id on;
    CHECK_EQ(await_in_parallel(f, on).join(), 5);
    CHECK(on == this_thread_id());
}

static future<int> waiter_for_value(future<int> &f, std::thread::id &on) {
    int v = co_await f;
    on = this_thread_id();
    co_return v;
}

static void parallel_resume_moves_a_suspend_point_to_a_new_thread() {
    future<int> f;
    auto p = f.get_promise();
    std::thread::id on;
    future<int> r = waiter_for_value(f, on);
    bool set = parallel_resume(p(42));
    CHECK(set);
    CHECK_EQ(r.wait(), 42);
    CHECK(on != this_thread_id());
    CHECK(on != std::thread::id());
}

// A waiter logs when it resumes; the setter, a coroutine (coro mode), logs
// right after setting.
static async<void> logging_waiter(future<int> &f, std::vector<std::string> &log, bool at_once) {
    int v = at_once ? co_await immediately(f) : co_await f;
    log.push_back("waiter " + std::to_string(v));
}
static async<void> logging_setter(promise<int> &p, std::vector<std::string> &log) {
    p(1);
    log.push_back("setter after set");
    co_return;
}

static void immediately_resumes_inside_the_setter_even_in_coro_mode() {
    for (bool at_once : {false, true}) {
        future<int> f;
        auto p = f.get_promise();
        std::vector<std::string> log;
        logging_waiter(f, log, at_once).detach();
        CHECK(log.empty());
        logging_setter(p, log).join();
        CHECK_EQ(log.size(), 2u);
        if (at_once) {
            CHECK_EQ(log[0], "waiter 1");  // nested inside p(1)
            CHECK_EQ(log[1], "setter after set");
        } else {
            CHECK_EQ(log[0], "setter after set");  // queued until the setter ended
            CHECK_EQ(log[1], "waiter 1");
        }
    }
}

// An awaiter foreign to cocls: immediately() gives it a relay, which the
// resumer here resumes directly (normal mode).
struct foreign_event {
    std::coroutine_handle<> waiter;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> h) noexcept {
        waiter = h;
        return true;
    }
    int await_resume() const noexcept { return 8; }
};

static async<void> await_foreign(foreign_event &e, std::thread::id &on) {
    int v = co_await parallel(e);
    CHECK_EQ(v, 8);
    on = this_thread_id();
}

static void policies_work_with_awaiters_foreign_to_cocls() {
    foreign_event e;
    std::thread::id on;
    future<void> done = await_foreign(e, on).start();
    CHECK(e.waiter);
    e.waiter.resume();  // the relay: the coroutine goes to a new thread
    done.wait();
    CHECK(on != this_thread_id());
    CHECK(on != std::thread::id());
}

static async<int> child_ending_on(future<int> &f) { co_return co_await f; }

static async<bool> wrap_other_awaitables(future<int> &f, future<int> &g, std::thread::id &on) {
    int v = co_await immediately(child_ending_on(f));  // an async's awaiter, held by value
    bool has = co_await parallel(g.has_value());        // a prvalue awaiter, held by value
    on = this_thread_id();
    co_return v == 1 && has;
}

static void policies_wrap_coroutines_and_prvalue_awaiters() {
    future<int> f, g;
    auto pf = f.get_promise();
    auto pg = g.get_promise();
    std::thread::id on;
    future<bool> r = wrap_other_awaitables(f, g, on).start();
    pf(1);
    CHECK(r.pending());  // now waiting for g
    pg(2);
    CHECK(r.wait());
    CHECK(on != this_thread_id());
}

// Captures the handle as a plain awaiter does, without suspending.
struct peek_handle {
    std::coroutine_handle<> h;
    bool await_ready() const noexcept { return false; }
    bool await_suspend(std::coroutine_handle<> me) noexcept {
        h = me;
        return false;
    }
    std::coroutine_handle<> await_resume() const noexcept { return h; }
};

static async<void> who_am_i(std::coroutine_handle<> &mine, std::coroutine_handle<> &peeked, bool &went_on) {
    mine = co_await self();
    went_on = true;
    peeked = co_await peek_handle{};
}

static void self_gives_the_own_handle_without_suspending() {
    std::coroutine_handle<> mine, peeked;
    bool went_on = false;
    who_am_i(mine, peeked, went_on).detach();  // runs to its end here
    CHECK(went_on);
    CHECK(mine);
    CHECK(mine == peeked);
}

int main() {
    RUN(parallel_resumes_on_a_new_thread);
    RUN(parallel_of_a_ready_awaitable_stays_on_the_thread);
    RUN(parallel_resume_moves_a_suspend_point_to_a_new_thread);
    RUN(immediately_resumes_inside_the_setter_even_in_coro_mode);
    RUN(policies_work_with_awaiters_foreign_to_cocls);
    RUN(policies_wrap_coroutines_and_prvalue_awaiters);
    RUN(self_gives_the_own_handle_without_suspending);
    return 0;
}
