// shared_future<T>: copies share one state; many coroutines and threads wait;
// every handle may be dropped while pending; values, exceptions, dropped
// promises; the constructors COCLS code uses.
#include <cocls/async.h>
#include <cocls/future.h>
#include <cocls/shared_future.h>

#include <atomic>
#include <latch>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

using namespace cocls;

// Counts live instances, to see when the shared state is freed.
struct tracked {
    static inline int alive = 0;
    int v;
    explicit tracked(int x) : v(x) { alive++; }
    tracked(const tracked &o) : v(o.v) { alive++; }
    ~tracked() { alive--; }
};

static void copies_share_the_value_set_by_the_promise() {
    shared_future<int> f([](promise<int> p) { p(42); });
    shared_future<int> g = f;
    shared_future<int> h(std::move(g));
    CHECK(f.ready());
    CHECK(h.ready());
    CHECK(!g.ready());  // moved from: no state
    CHECK_EQ(h.value(), 42);
    h.value() = 43;  // one variable for all copies
    CHECK_EQ(f.wait(), 43);
    CHECK_EQ(*f, 43);
}

static future<int> waiter(shared_future<int> f, std::string *log, const char *name) {
    int v = co_await f;
    *log += name;
    co_return v;
}

static void several_coroutines_await_one_shared_future() {
    promise<int> p;
    shared_future<int> f([&](promise<int> q) { p = std::move(q); });
    std::string log;
    future<int> a = waiter(f, &log, "a");
    future<int> b = waiter(f, &log, "b");
    future<int> c = waiter(f, &log, "c");
    CHECK(a.pending() && b.pending() && c.pending());
    CHECK(f.pending());
    p(7);
    CHECK_EQ(log, "cba");  // resumed the last waiter first (as COCLS)
    CHECK_EQ(a.value() + b.value() + c.value(), 21);
}

static void dropping_every_handle_while_pending_keeps_the_state_until_resolved() {
    promise<tracked> p;
    {
        shared_future<tracked> f([&](promise<tracked> q) { p = std::move(q); });
        shared_future<tracked> g = f;
        CHECK(f.pending());
    }  // no handle left; the state waits for the promise
    CHECK_EQ(tracked::alive, 0);
    p(tracked(5));
    CHECK_EQ(tracked::alive, 0);  // resolved with nobody holding it: freed with its value

    promise<tracked> q;
    shared_future<tracked> kept([&](promise<tracked> r) { q = std::move(r); });
    q(tracked(6));
    CHECK_EQ(tracked::alive, 1);  // a handle still holds the state
    CHECK_EQ(kept.value().v, 6);
}

static promise<int> pending_work;

static future<int> slow_coroutine() {
    future<int> f([](promise<int> p) { pending_work = std::move(p); });
    co_return co_await f + 1;
}

static void a_function_returning_a_future_fills_the_shared_state() {
    {
        shared_future<int> x([] { return slow_coroutine(); });
        CHECK(x.pending());
    }  // dropped while the coroutine waits
    pending_work(10);  // the coroutine finishes and the state is freed (ASan: no leak)

    shared_future<int> y([] { return slow_coroutine(); });
    shared_future<int> z = y;
    pending_work(20);
    CHECK_EQ(y.wait(), 21);
    CHECK_EQ(z.value(), 21);
}

static async<int> add(int a, int b) { co_return a + b; }

static void an_async_starts_and_resolves_the_shared_state() {
    shared_future<int> s(add(2, 3));
    CHECK_EQ(s.wait(), 5);
    async<int> lazy = add(4, 5);
    shared_future<int> t(lazy);
    CHECK(!lazy.valid());  // taken and started
    CHECK_EQ(t.join(), 9);
}

static void threads_wait_with_their_own_copies() {
    constexpr int n = 8;
    promise<std::string> p;
    shared_future<std::string> f([&](promise<std::string> q) { p = std::move(q); });
    std::latch started(n);
    std::atomic<int> right{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; i++) {
        threads.emplace_back([&started, &right, copy = f]() mutable {
            started.count_down();
            if (copy.wait() == "done") right++;
        });
    }
    started.wait();
    f = shared_future<std::string>();  // our handle goes; the threads keep theirs
    p("done");
    for (auto &t : threads) t.join();
    CHECK_EQ(right.load(), n);
}

static void a_promise_set_on_another_thread_wakes_waiting_coroutines() {
    promise<int> p;
    shared_future<int> f([&](promise<int> q) { p = std::move(q); });
    std::string log;
    future<int> a = waiter(f, &log, "a");
    future<int> b = waiter(f, &log, "b");
    std::thread t([&] { p(3); });
    CHECK_EQ(a.wait() + b.wait(), 6);
    t.join();
    CHECK_EQ(log, "ba");  // the last waiter first
}

static void exceptions_and_dropped_promises_reach_every_copy() {
    shared_future<int> e([](promise<int> p) { p(std::make_exception_ptr(std::runtime_error("boom"))); });
    shared_future<int> e2 = e;
    CHECK_THROWS(e.value(), std::runtime_error);
    CHECK_THROWS(e2.wait(), std::runtime_error);

    shared_future<int> d([](promise<int>) {});  // dropped at once
    CHECK(d.ready());
    CHECK_THROWS(d.value(), await_canceled_exception);

    promise<int> later;
    shared_future<int> d2([&](promise<int> q) { later = std::move(q); });
    later = promise<int>();  // dropped while pending
    CHECK_THROWS(d2.wait(), await_canceled_exception);
}

static future<int> await_temporary(promise<int> *out) {
    // The awaiter keeps the state: the temporary shared_future may go.
    co_return co_await shared_future<int>([out](promise<int> p) { *out = std::move(p); });
}

static void a_temporary_shared_future_can_be_awaited() {
    promise<int> p;
    future<int> r = await_temporary(&p);
    CHECK(r.pending());
    p(11);
    CHECK_EQ(r.value(), 11);
}

static future<void> await_void(shared_future<void> f) { co_await f; }

static void an_empty_shared_future_has_no_value_until_it_gets_a_promise() {
    shared_future<int> f;
    CHECK(!f.ready());
    CHECK(!f.pending());
    CHECK_THROWS(f.value(), value_not_ready_exception);
    CHECK_THROWS(f.wait(), value_not_ready_exception);
    f.sync();  // nothing to wait for

    f.init_if_needed();
    shared_future<int> copy = f;  // shares the fresh state
    promise<int> p = f.get_promise();
    CHECK(copy.pending());
    p(8);
    CHECK_EQ(copy.value(), 8);

    promise<int> p2 = f.get_promise();  // armed already: a new state
    CHECK(f.pending());
    CHECK_EQ(copy.value(), 8);
    p2(9);
    CHECK_EQ(f.value(), 9);

    shared_future<void> v;
    promise<void> pv = v.get_promise();
    future<void> done = await_void(v);
    CHECK(done.pending());
    pv();
    CHECK(done.ready());
    done.value();
}

static void static_constructors_and_the_underlying_future() {
    auto v = shared_future<std::string>::set_value("ready");
    CHECK_EQ(v.value(), std::string("ready"));
    auto e = shared_future<int>::set_exception(std::make_exception_ptr(std::logic_error("x")));
    CHECK_THROWS(e.value(), std::logic_error);

    shared_future<int> f([](promise<int> p) { p(4); });
    future<int> &base = f;
    CHECK_EQ(base.value(), 4);
}

int main() {
    RUN(copies_share_the_value_set_by_the_promise);
    RUN(several_coroutines_await_one_shared_future);
    RUN(dropping_every_handle_while_pending_keeps_the_state_until_resolved);
    RUN(a_function_returning_a_future_fills_the_shared_state);
    RUN(an_async_starts_and_resolves_the_shared_state);
    RUN(threads_wait_with_their_own_copies);
    RUN(a_promise_set_on_another_thread_wakes_waiting_coroutines);
    RUN(exceptions_and_dropped_promises_reach_every_copy);
    RUN(a_temporary_shared_future_can_be_awaited);
    RUN(an_empty_shared_future_has_no_value_until_it_gets_a_promise);
    RUN(static_constructors_and_the_underlying_future);
    return 0;
}

// Every member compiles for these (COCLS's tests instantiate them so).
template class cocls::shared_future<int>;
template class cocls::shared_future<void>;
