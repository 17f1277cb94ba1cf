// callback_await: the callback gets the value, the exception or the dropped
// promise as await_result<T>; awaitables other than future; when the factory
// and the callback run (normal and coro mode); the allocator spellings.
#include <cocls/async.h>
#include <cocls/callback_awaiter.h>
#include <cocls/coro_storage.h>
#include <cocls/future.h>
#include <cocls/shared_future.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "check.h"

using namespace cocls;

static promise<int> pending;

static future<int> later() {
    return [](promise<int> p) { pending = std::move(p); };
}

static void the_callback_gets_the_value_when_the_promise_is_set() {
    int got = 0;
    bool called = false;
    callback_await<future<int>>(
        [&](await_result<int> r) {
            called = true;
            CHECK(static_cast<bool>(r));
            CHECK(!r.exception());
            got = r.get() + *r;
        },
        [] { return later(); });
    CHECK(!called);
    pending(21);
    CHECK(called);
    CHECK_EQ(got, 42);
}

static void a_resolved_future_calls_back_at_once_in_normal_mode() {
    std::string v;
    callback_await<future<std::string>>([&](await_result<std::string> r) { v = std::move(*r); },
                                        [](promise<std::string> p) { p("now"); });
    CHECK_EQ(v, "now");
}

static void an_exception_reaches_the_callback_inside_a_catch_block() {
    bool called = false;
    callback_await<future<int>>(
        [&](await_result<int> r) {
            called = true;
            CHECK(!r);
            CHECK(std::current_exception() != nullptr);  // COCLS's documented way
            CHECK(r.exception() != nullptr);
            CHECK_THROWS(r.get(), std::runtime_error);
        },
        [] { return later(); });
    pending(std::make_exception_ptr(std::runtime_error("boom")));
    CHECK(called);
}

static void a_dropped_promise_gives_await_canceled() {
    bool called = false;
    callback_await<future<int>>(
        [&](await_result<int> r) {
            called = true;
            CHECK(!r);
            CHECK_THROWS(*r, await_canceled_exception);
        },
        [] { return later(); });
    pending = promise<int>();
    CHECK(called);
}

static void a_factory_that_throws_reports_to_the_callback() {
    bool called = false;
    callback_await<future<int>>(
        [&](await_result<int> r) {
            called = true;
            CHECK_THROWS(r.get(), std::logic_error);
        },
        []() -> future<int> { throw std::logic_error("no future"); });
    CHECK(called);
}

static void void_results_still_report_exceptions() {
    int ok = 0, failed = 0;
    auto cb = [&](await_result<void> r) {
        try {
            r.get();
            ok++;
        } catch (const std::exception &) {
            failed++;
        }
    };
    callback_await<future<void>>(cb, [](promise<void> p) { p(); });
    callback_await<future<void>>(cb, [](promise<void> p) { p(std::make_exception_ptr(std::runtime_error("x"))); });
    CHECK_EQ(ok, 1);
    CHECK_EQ(failed, 1);
}

static async<int> add(int a, int b) { co_return a + b; }

// An awaiter that is neither a future nor movable, returning a prvalue.
struct answer_awaiter {
    explicit answer_awaiter(int v) : value(v) {}
    answer_awaiter(const answer_awaiter &) = delete;
    bool await_ready() const noexcept { return true; }
    void await_suspend(std::coroutine_handle<>) const noexcept {}
    int await_resume() const noexcept { return value; }
    int value;
};

static void other_awaitables_work_too() {
    int a = 0, s = 0, w = 0;
    callback_await<async<int>>([&](await_result<int> r) { a = *r; }, add(2, 3));
    CHECK_EQ(a, 5);

    promise<int> p;
    shared_future<int> sf([&](promise<int> q) { p = std::move(q); });
    callback_await<shared_future<int>>([&](await_result<int> r) { s = *r; }, sf);
    CHECK_EQ(s, 0);
    p(8);
    CHECK_EQ(s, 8);

    callback_await<answer_awaiter>([&](await_result<int> r) { w = *r; }, 99);
    CHECK_EQ(w, 99);
}

static std::string trace;

static async<void> caller() {
    int local = 4;  // the factory sees it: it runs before callback_await returns
    callback_await<future<int>>(
        [](await_result<int> r) { trace += "callback" + std::to_string(*r) + " "; },
        [&] {
            trace += "factory ";
            return future<int>([&](promise<int> p) { p(local); });
        });
    trace += "caller-goes-on ";
    co_return;
}

static void in_coro_mode_the_factory_runs_at_once_and_the_callback_is_queued() {
    trace.clear();
    caller().detach();
    CHECK_EQ(trace, std::string("factory caller-goes-on callback4 "));
}

static void a_throwing_callback_is_dropped_and_its_frame_freed() {
    callback_await<future<int>>([](await_result<int>) { throw std::runtime_error("from the callback"); },
                                [](promise<int> p) { p(1); });
    int n = 0;
    callback_await<future<int>>([&](await_result<int> r) { n = *r; }, [](promise<int> p) { p(2); });
    CHECK_EQ(n, 2);  // still working; ASan sees no leak
}

static void the_frame_comes_from_the_given_allocator() {
    reusable_storage alloc;
    int got = 0;
    callback_await<reusable_storage, future<int>>(alloc, [&](await_result<int> r) { got += *r; },
                                                  [] { return later(); });
    CHECK(alloc.capacity() > 0);
    std::size_t cap = alloc.capacity();
    pending(1);
    callback_await_alloc<reusable_storage, future<int>>(alloc, [&](await_result<int> r) { got += *r; },
                                                        [](promise<int> p) { p(2); });
    CHECK_EQ(got, 3);
    CHECK_EQ(alloc.capacity(), cap);  // the same buffer again
}

static future<int> work() {
    return [](promise<int> p) { std::thread([p = std::move(p)]() mutable { p(42); }).detach(); };
}

// COCLS's own test: a callback turns one future into another.
static future<int> cofn1() {
    future<int> fut([](auto promise) {
        callback_await<future<int>>(
            [promise = std::move(promise)](await_result<int> value) mutable {
                try {
                    promise(*value);
                } catch (...) {
                    promise(std::current_exception());
                }
            },
            [&] { return work(); });
    });
    co_return co_await fut;
}

static void the_callback_runs_on_the_thread_that_resolves() {
    CHECK_EQ(cofn1().join(), 42);
    std::thread::id where;
    promise<int> p;
    callback_await<future<int>>([&](await_result<int>) { where = std::this_thread::get_id(); },
                                [&](promise<int> q) { p = std::move(q); });
    std::thread::id setter;
    std::thread t([&] {
        setter = std::this_thread::get_id();
        p(5);
    });
    t.join();
    CHECK(where == setter);
}

int main() {
    RUN(the_callback_gets_the_value_when_the_promise_is_set);
    RUN(a_resolved_future_calls_back_at_once_in_normal_mode);
    RUN(an_exception_reaches_the_callback_inside_a_catch_block);
    RUN(a_dropped_promise_gives_await_canceled);
    RUN(a_factory_that_throws_reports_to_the_callback);
    RUN(void_results_still_report_exceptions);
    RUN(other_awaitables_work_too);
    RUN(in_coro_mode_the_factory_runs_at_once_and_the_callback_is_queued);
    RUN(a_throwing_callback_is_dropped_and_its_frame_freed);
    RUN(the_frame_comes_from_the_given_allocator);
    RUN(the_callback_runs_on_the_thread_that_resolves);
    return 0;
}
