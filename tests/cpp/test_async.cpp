// async<T>: lazy start, detach (at once in normal mode, queued in coro mode),
// start/join/co_await, future-returning coroutines, never-started frames,
// exceptions, pause() and the coro-mode order, switching with suspend points.
#include <cocls/async.h>
#include <cocls/future.h>

#include <memory>
#include <string>
#include <thread>

#include "check.h"

using namespace cocls;

static std::string trace;

static async<int> add(int a, int b) { co_return a + b; }

static async<int> nested(int n) {
    int sum = 0;
    for (int i = 0; i < n; i++) sum += co_await add(i, 1);
    co_return sum;
}

static void join_and_co_await_give_results() {
    CHECK_EQ(add(2, 3).join(), 5);
    CHECK_EQ(nested(4).join(), 1 + 2 + 3 + 4);
    future<int> f = nested(3).start();
    CHECK(f.ready());
    CHECK_EQ(f.value(), 6);
    CHECK_EQ(nested(2)().wait(), 3);
}

static async<void> note(std::string s) {
    trace += s;
    co_return;
}

static void detach_runs_at_once_in_normal_mode() {
    trace.clear();
    note("a").detach();
    CHECK_EQ(trace, "a");
}

static async<void> parent() {
    trace += "p1 ";
    note("child ").detach();  // coro mode: queued
    trace += "p2 ";
    co_return;
}

static void detach_from_a_coroutine_queues_until_it_suspends() {
    trace.clear();
    parent().detach();
    CHECK_EQ(trace, "p1 p2 child ");
}

static async<void> uses(std::shared_ptr<int> p) {
    trace += "ran";
    (void)p;
    co_return;
}

static void a_never_started_async_destroys_its_arguments() {
    trace.clear();
    auto arg = std::make_shared<int>(1);
    {
        auto coro = uses(arg);
        CHECK_EQ(arg.use_count(), 2);  // the frame holds a copy
        auto moved = std::move(coro);
        CHECK(!coro.valid() && moved.valid());
    }
    CHECK_EQ(arg.use_count(), 1);
    CHECK_EQ(trace, "");
}

static future<std::string> greet(std::string who) {
    co_return "hello " + who;
}

static future<int> waits_for(future<int> &f) {
    int v = co_await f;
    co_return v + 1;
}

static void coroutines_may_return_future() {
    CHECK_EQ(greet("world").value(), "hello world");
    future<int> in;
    auto p = in.get_promise();
    future<int> out = waits_for(in);
    CHECK(out.pending());
    p(41);
    CHECK_EQ(out.value(), 42);
}

static void start_with_a_promise_sets_it() {
    future<int> f;
    auto p = f.get_promise();
    add(20, 22).start(p);
    CHECK(!p);
    CHECK_EQ(f.value(), 42);
}

static async<int> thrower() {
    throw std::runtime_error("inside");
    co_return 0;
}

static async<int> catches() {
    try {
        co_await thrower();
    } catch (const std::runtime_error &) {
        co_return 1;
    }
    co_return 0;
}

static void exceptions_cross_co_await_and_join() {
    CHECK_THROWS(thrower().join(), std::runtime_error);
    CHECK_EQ(catches().join(), 1);
}

static async<void> worker(char name, int rounds) {
    for (int i = 0; i < rounds; i++) {
        trace += name;
        trace += std::to_string(i);
        trace += ' ';
        co_await cocls::pause();  // qualified: POSIX has a pause() too
    }
}

static async<void> multitask() {
    worker('A', 3).detach();
    worker('B', 3).detach();
    worker('C', 2).detach();
    co_return;
}

static void pause_round_robins_the_coroutines_of_a_thread() {
    trace.clear();
    multitask().detach();
    CHECK_EQ(trace, "A0 B0 C0 A1 B1 C1 A2 B2 ");
}

static async<void> waiter(future<int> &f) {
    int v = co_await f;
    trace += "got" + std::to_string(v) + " ";
}

static async<void> setter(promise<int> &p, bool switch_now) {
    trace += "set ";
    if (switch_now) co_await p(7);
    else p(7);
    trace += "after ";
}

static void co_await_on_a_suspend_point_switches_to_the_waiter() {
    for (bool switch_now : {true, false}) {
        trace.clear();
        future<int> f;
        auto p = f.get_promise();
        waiter(f).detach();
        setter(p, switch_now).detach();
        CHECK_EQ(trace, switch_now ? "set got7 after " : "set after got7 ");
    }
}

static void a_promise_set_from_a_normal_thread_runs_the_waiter_there() {
    trace.clear();
    future<int> f;
    auto p = f.get_promise();
    waiter(f).detach();
    CHECK_EQ(trace, "");
    {
        suspend_point<bool> sp = p(5);
        CHECK(sp.value());
        CHECK_EQ(trace, "");  // not yet: the suspend point holds the waiter
    }
    CHECK_EQ(trace, "got5 ");
}

static async<void> note_thread(future<int> &f, std::thread::id &resumed_on) {
    co_await f;
    resumed_on = std::this_thread::get_id();
}

static void a_coroutine_resumed_by_another_thread_continues_there() {
    future<int> f;
    auto p = f.get_promise();
    std::thread::id resumed_on;
    future<void> done = note_thread(f, resumed_on).start();
    std::thread::id setter;
    std::thread t([&] {
        setter = std::this_thread::get_id();
        p(1);
    });
    t.join();
    done.wait();
    CHECK(resumed_on == setter);
}

int main() {
    RUN(join_and_co_await_give_results);
    RUN(detach_runs_at_once_in_normal_mode);
    RUN(detach_from_a_coroutine_queues_until_it_suspends);
    RUN(a_never_started_async_destroys_its_arguments);
    RUN(coroutines_may_return_future);
    RUN(start_with_a_promise_sets_it);
    RUN(exceptions_cross_co_await_and_join);
    RUN(pause_round_robins_the_coroutines_of_a_thread);
    RUN(co_await_on_a_suspend_point_switches_to_the_waiter);
    RUN(a_promise_set_from_a_normal_thread_runs_the_waiter_there);
    RUN(a_coroutine_resumed_by_another_thread_continues_there);
    return 0;
}
