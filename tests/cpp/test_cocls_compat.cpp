// The names added so that programs written for COCLS build and behave the same
// against these headers (doc/compatibility.md, "COCLS"): one test per name or
// group of names, each asserting the behaviour.
#include <cocls/async.h>
#include <cocls/callback_awaiter.h>
#include <cocls/common.h>
#include <cocls/coro_queue.h>
#include <cocls/future.h>
#include <cocls/generator.h>
#include <cocls/publisher.h>
#include <cocls/shared_future.h>
#include <cocls/thread_pool.h>
#include <cocls/suspend_point.h>

#include <forward_list>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "check.h"

using namespace cocls;

// ---- generator<T &, Arg> --------------------------------------------------

struct tally {
    double sum = 0;
    int count = 0;
};

static generator<tally &, double> summary() {
    double v = co_yield nullptr;
    tally t;
    for (;;) {
        t.count++;
        t.sum += v;
        v = co_yield t;
    }
}

static generator<std::string &> names(std::vector<std::string> &seen) {
    std::string a = "a", b = "b";
    seen.push_back(a);
    co_yield a;
    co_yield b;
}

static future<double> average_in_a_coroutine() {
    auto g = summary();
    for (double x : {1.0, 2.0, 6.0}) {
        tally &t = co_await g(x);  // future<tally &>: the generator's own object
        CHECK(&t == &g.value());
    }
    co_return g.value().sum / g.value().count;
}

static void a_generator_of_references_yields_its_own_objects() {
    auto g = summary();
    tally &first = *g(1.0);
    CHECK_EQ(first.count, 1);
    tally &second = *g(3.0);
    CHECK(&first == &second);  // the same object, not a copy
    CHECK_EQ(second.sum, 4.0);
    CHECK(g.next(5.0));
    CHECK_EQ(g.value().count, 3);
    CHECK(&g.value() == &first);
    static_assert(std::is_same_v<decltype(g.value()), tally &>);
    static_assert(std::is_same_v<decltype(g(1.0)), future<tally &>>);
    CHECK_EQ(average_in_a_coroutine().join(), 3.0);

    std::vector<std::string> seen;
    auto n = names(seen);
    CHECK(n.next());
    n.value() += "!";  // writes into the generator's variable
    CHECK(n.next());
    CHECK_EQ(n.value(), std::string("b"));
    CHECK(!n.next());
}

// ---- future from a function returning a future ----------------------------

static future<int> answer(int v) { co_return v; }

static void a_future_is_built_from_a_function_returning_one() {
    std::forward_list<future<int>> l;
    for (int i = 0; i < 3; i++) l.emplace_front([i] { return answer(i); });
    int sum = 0;
    for (auto &f : l) sum += f.join();
    CHECK_EQ(sum, 3);

    promise<int> keep;
    future<int> pending([&] { return future<int>([&](promise<int> p) { keep = std::move(p); }); });
    CHECK(pending.pending());
    keep(7);
    CHECK_EQ(pending.value(), 7);

    bool thrown = false;
    try {
        future<int> f([]() -> future<int> { throw std::runtime_error("no"); });
    } catch (const std::runtime_error &) {
        thrown = true;
    }
    CHECK(thrown);  // propagates from the constructor, as COCLS's
}

// ---- coro_queue::create_suspend_point, trailer and the rest of coro_queue ---

static std::vector<std::string> trace;

static async<void> waiter(future<int> &f, const char *name) {
    int v = co_await f;
    trace.push_back(std::string(name) + " " + std::to_string(v));
}

static async<void> setter(promise<int> p) {
    trace.push_back("setter");
    auto sp = coro_queue::create_suspend_point([&] {
        p(42);  // the suspend point it returns is dropped: the waiter is queued
        return 1;
    });
    static_assert(std::is_same_v<decltype(sp), suspend_point<int>>);
    CHECK_EQ(sp.value(), 1);
    CHECK_EQ(sp.size(), 1u);  // the waiter, taken out of the queue
    trace.push_back("before switch");
    co_await sp;  // the waiter runs now, this one is queued behind
    trace.push_back("setter again");
}

static future<void> owner() {
    future<int> f;
    auto p = f.get_promise();
    setter(std::move(p)).detach();  // queued (coro mode)
    int v = co_await f;
    trace.push_back("owner " + std::to_string(v));
}

static void create_suspend_point_collects_what_a_call_makes_ready() {
    trace.clear();
    owner().join();
    std::vector<std::string> want = {"setter", "before switch", "owner 42", "setter again"};
    CHECK(trace == want);

    // In normal mode too: the function runs in coro mode, nothing runs until
    // the suspend point is discarded.
    trace.clear();
    future<int> f;
    auto p = f.get_promise();
    waiter(f, "w").detach();
    {
        auto sp = coro_queue::create_suspend_point([&] { p(5); });
        static_assert(std::is_same_v<decltype(sp), suspend_point<void>>);
        CHECK(trace.empty());
        CHECK(!coro_queue::is_active());
    }
    CHECK(trace == std::vector<std::string>{"w 5"});

    // What was queued before stays queued, in order.
    trace.clear();
    coro_queue::install_queue_and_call([&] {
        future<int> a, b;
        auto pa = a.get_promise(), pb = b.get_promise();
        waiter(a, "a").detach();
        waiter(b, "b").detach();
        coro_queue::resume_handle_next().resume();  // a starts and waits
        coro_queue::resume_handle_next().resume();  // b starts and waits
        pa(1);                                      // a is queued
        auto sp = coro_queue::create_suspend_point([&] { pb(2); });
        CHECK_EQ(coro_queue::size(), 1u);  // a, still there
        sp.pop().resume();                 // b runs now (and, as it ends, switches to a)
        CHECK(!trace.empty() && trace.front() == "b 2");
    });
    CHECK(trace == (std::vector<std::string>{"b 2", "a 1"}));
}

static void trailer_runs_at_the_end_of_the_block() {
    int n = 0;
    {
        trailer t = [&] { n++; };
        CHECK_EQ(n, 0);
    }
    CHECK_EQ(n, 1);
}

static async<void> note(const char *s) {
    trace.push_back(s);
    co_return;
}

static void coro_queue_has_coclss_other_members() {
    CHECK(coro_queue::initialize_policy());
    CHECK(coro_queue::can_block());
    trace.clear();
    // Take the frame of a suspended-at-start coroutine through detach(): the
    // suspend point holds it; install_queue_and_resume runs it here.
    auto sp = note("x").detach();
    coro_queue::install_queue_and_resume(sp.take());
    CHECK(trace == std::vector<std::string>{"x"});
    CHECK(coro_queue::resume_handle(std::noop_coroutine()) == std::noop_coroutine());
    coro_queue::install_queue_and_call([] {
        CHECK(coro_queue::can_block());
        auto h = note("y").detach().take();
        coro_queue::resume(h);  // queued
        CHECK(!coro_queue::can_block());
        CHECK(coro_queue::swap_coroutine(std::noop_coroutine()) == h);  // noop queued, y comes out
        h.resume();
        CHECK(coro_queue::resume_handle_next() == std::noop_coroutine());  // the noop we queued
    });
    CHECK(trace == (std::vector<std::string>{"x", "y"}));
    CHECK(coro_queue::swap_coroutine(std::noop_coroutine()) == std::noop_coroutine());  // normal mode
}

// ---- common.h ---------------------------------------------------------------

template <typename T>
    CXX20_REQUIRES(std::is_integral_v<T>)
static int twice(T v) { return 2 * v; }

struct heap_storage {
    void *alloc(std::size_t n) { return ::operator new(n); }
    static void dealloc(void *p, std::size_t) { ::operator delete(p); }
};

static void common_h_has_coclss_basics() {
    CHECK_EQ(twice(4), 8);
    static_assert(std::is_same_v<coro_id, const void *>);
    static_assert(Storage<heap_storage>);
    static_assert(ReturnsFuture<future<int> (*)(), int>);
    static_assert(!ReturnsFuture<int (*)(), int>);
    static_assert(COCLS_STATIC_STORAGE_MULTIPLIER > 0);
}

// ---- future and promise -----------------------------------------------------

static const int seven = 7;

struct handler {
    int got = -1;
    suspend_point<void> done(future<int> &f) noexcept {
        got = f.has_value() ? f.value() : -2;
        return {};
    }
    suspend_point<void> woken(awaiter *) noexcept {
        got = 100;
        return {};
    }
    call_fn_future_awaiter<&handler::done> awt{*this};
};

static void future_has_coclss_static_constructors_and_names() {
    auto v = future<int>::set_value(5);
    CHECK(v.ready());
    CHECK_EQ(v.value(), 5);
    auto n = future<int>::set_not_value();
    CHECK(n.ready());
    CHECK(!n.has_value());
    CHECK_THROWS(n.value(), await_canceled_exception);
    auto e = future<void>::set_exception(std::make_exception_ptr(std::runtime_error("x")));
    CHECK_THROWS(e.value(), std::runtime_error);
    int x = 3;
    auto r = future<int &>::set_value(x);
    CHECK(&r.value() == &x);

    future<int> f;
    auto p = f.get_promise();
    std::thread t([&] { p(9); });
    CHECK_EQ(f.force_wait(), 9);
    t.join();
    f.force_sync();

    static_assert(std::is_base_of_v<future_common, future<int>>);
    static_assert(std::is_same_v<future<int>::awaitable_bool, decltype(f.has_value())>);
    static_assert(std::is_same_v<future<int>::promise_object, promise<int>>);
    static_assert(std::is_same_v<future<int &>::value_type_ptr, int *>);
    static_assert(future<void>::is_void && !future<int>::is_void && future<int &>::is_ref);
    static_assert(std::is_same_v<future<void>::value_storage, int>);
    static_assert(std::is_same_v<future<int &>::value_storage, int *>);
    static_assert(std::is_same_v<future<int>::ptr_storage, int *>);
    static_assert(std::is_same_v<promise<int>::reference_type, int &>);
}

static void promise_has_coclss_members() {
    future<int> f;
    auto p = f.get_promise();
    CHECK(p.get_id() == &f);
    auto later = p.bind(12);
    CHECK(!p);
    later();
    CHECK_EQ(f.value(), 12);

    future<int> g;
    auto q = g.get_promise();
    try {
        throw std::runtime_error("e");
    } catch (...) {
        CHECK(q.unhandled_exception());
    }
    CHECK_THROWS(g.value(), std::runtime_error);

    future<int> h;
    auto r = h.get_promise();
    CHECK(r.claim() == &h);
    CHECK(!r);
    CHECK(r.claim() == nullptr);
    promise<int>{h}(0);  // the claimer's duty: resolve it (else it stays pending)
    CHECK_EQ(h.value(), 0);
}

static void promises_with_a_default_set_it_when_dropped() {
    future<int> a, b, c, d;
    {
        promise_with_default<int> p(a.get_promise(), 1);
        promise_with_default_v<int, 2> q(b.get_promise());
        promise_with_default_vp<int, &seven> r(c.get_promise());
        promise_with_default<int> s(d.get_promise(), 4);
        s(40);  // set: the default is not used
    }
    CHECK_EQ(a.value(), 1);
    CHECK_EQ(b.value(), 2);
    CHECK_EQ(c.value(), 7);
    CHECK_EQ(d.value(), 40);
}

static void member_functions_handle_results_without_a_coroutine() {
    handler h;
    h.awt << [] { return future<int>::set_value(3); };  // resolved already: called at once
    CHECK_EQ(h.got, 3);
    promise<int> p;
    h.awt << [&] { return future<int>([&](promise<int> x) { p = std::move(x); }); };
    CHECK_EQ(h.got, 3);
    p(8);
    CHECK_EQ(h.got, 8);

    call_fn_awaiter<handler, &handler::woken> w(&h);
    w.resume();
    CHECK_EQ(h.got, 100);

    int seen = 0;
    auto *cbf = new future_with_cb<int, std::function<void(future<int> &)>>([&](future<int> &f) { seen = f.value(); });
    *cbf << [] { return future<int>::set_value(6); };  // resolved: the callback ran, the object is gone
    CHECK_EQ(seen, 6);
}

static void co_awaiter_awaits_any_owner() {
    future<int> f;
    auto p = f.get_promise();
    co_awaiter<future<int>> a(f);
    CHECK(!a.await_ready());
    std::thread t([&] { p(21); });
    CHECK_EQ(a.wait(), 21);
    t.join();
    co_awaiter<future<int>> b = f.operator co_await();  // future's own awaiter is one
    CHECK(b.await_ready());
    CHECK_EQ(b.force_wait(), 21);

    sync_awaiter s;
    s.wakeup();
    s.wait_sync();  // does not block: woken already
}

// ---- suspend_point ------------------------------------------------------------

static void suspend_point_has_coclss_members() {
    suspend_point<void> empty;
    CHECK(empty.pop() == std::noop_coroutine());  // `return sp.pop();` in await_suspend is safe
    CHECK(!empty.take());
    CHECK_EQ(empty.size(), 0u);
    static_assert(suspend_point<void>::inline_count >= 1);

    trace.clear();
    suspend_point<int> sp(note("a").detach().take(), 5);
    CHECK_EQ(sp.value(), 5);
    CHECK_EQ(sp.size(), 1u);
    suspend_point<void> two(note("b").detach().take());
    two << note("c").detach();
    CHECK_EQ(two.size(), 2u);
    suspend_point<int> moved(std::move(two), 6);
    CHECK_EQ(moved.size(), 2u);
    moved.suspend_now();
    CHECK(trace == (std::vector<std::string>{"b", "c"}));
    sp.clear();
    CHECK(trace == (std::vector<std::string>{"b", "c", "a"}));
}

// ---- generator, publisher, callback_await -----------------------------------

static generator<int> count_to(int n) {
    for (int i = 1; i <= n; i++) co_yield i;
}

static void generator_has_coclss_members() {
    auto g = count_to(1);
    CHECK(g.get_id() != nullptr);
    CHECK(static_cast<bool>(g));
    CHECK(g.next());
    CHECK(!g.next());
    CHECK(!static_cast<bool>(g));
    generator<int> none;
    CHECK(none.get_id() == nullptr);
    static_assert(std::is_same_v<generator<int, long>::reference_Arg, long &>);
    static_assert(std::is_same_v<generator<int>::param_Arg, std::nullptr_t>);
    static_assert(std::is_same_v<generator<int, long>::storage_Arg_ptr, long *>);
    static_assert(std::is_same_v<generator<int &>::future_t, future<int &>>);
    static_assert(std::is_same_v<generator<int &>::Ret, int>);
}

static void publisher_and_await_result_have_coclss_names() {
    static_assert(std::is_enum_v<publisher<int>::read_mode>);
    static_assert(std::is_same_v<subscriber<int>::read_mode, publisher<int>::read_mode>);
    await_result<void> ok;
    CHECK(ok.is_valid);
    await_result<void> failed(std::make_exception_ptr(std::runtime_error("x")));
    CHECK(!failed.is_valid);
    CHECK(!failed);
}

static void shared_future_thread_pool_and_async_have_coclss_names() {
    shared_future<int> a([] { return future<int>::set_value(3); });
    shared_future<int> b = a;
    a << [] { return future<int>::set_value(4); };  // this handle only
    CHECK_EQ(a.force_wait(), 4);
    CHECK_EQ(b.wait(), 3);
    b.force_sync();
    static_assert(std::is_same_v<thread_pool::q_item, function<void()>>);
    static_assert(std::is_same_v<async<int>::co_awaiter, async_awaiter<int>>);
}

// ---- a coroutine returning future<T> starts at once, also in coro mode ------

static future<void> step(int n) {
    trace.push_back(std::to_string(n) + " starts");
    co_await cocls::pause();  // nothing else is queued: goes on at once
    trace.push_back(std::to_string(n) + " ends");
}

static future<void> caller() {
    future<void> a = step(1);  // runs here, nested, until it suspends (it does not)
    trace.push_back("after 1");
    future<void> b = step(2);
    trace.push_back("after 2");
    co_await a;
    co_await b;
}

static async<int> child() { co_return 5; }

static future<void> starter() {
    future<int> f = child().start();  // async::start() in coro mode: at once too
    CHECK(f.ready());
    CHECK_EQ(f.value(), 5);
    co_return;
}

static void future_coroutines_start_at_once_in_coro_mode() {
    trace.clear();
    caller().join();
    CHECK(trace == (std::vector<std::string>{"1 starts", "1 ends", "after 1", "2 starts", "2 ends", "after 2"}));
    starter().join();
}

// ---- a future wakes its waiters newest first, as COCLS --------------------

static void a_future_wakes_the_last_waiter_first() {
    trace.clear();
    future<int> f;
    auto p = f.get_promise();
    waiter(f, "a").detach();  // normal mode: runs until it waits
    waiter(f, "b").detach();
    waiter(f, "c").detach();
    p(1);
    CHECK(trace == (std::vector<std::string>{"c 1", "b 1", "a 1"}));
}

int main() {
    RUN(a_generator_of_references_yields_its_own_objects);
    RUN(a_future_is_built_from_a_function_returning_one);
    RUN(create_suspend_point_collects_what_a_call_makes_ready);
    RUN(trailer_runs_at_the_end_of_the_block);
    RUN(coro_queue_has_coclss_other_members);
    RUN(common_h_has_coclss_basics);
    RUN(future_has_coclss_static_constructors_and_names);
    RUN(promise_has_coclss_members);
    RUN(promises_with_a_default_set_it_when_dropped);
    RUN(member_functions_handle_results_without_a_coroutine);
    RUN(co_awaiter_awaits_any_owner);
    RUN(suspend_point_has_coclss_members);
    RUN(generator_has_coclss_members);
    RUN(publisher_and_await_result_have_coclss_names);
    RUN(shared_future_thread_pool_and_async_have_coclss_names);
    RUN(future_coroutines_start_at_once_in_coro_mode);
    RUN(a_future_wakes_the_last_waiter_first);
    return 0;
}
