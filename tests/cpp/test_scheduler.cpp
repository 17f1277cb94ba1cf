// scheduler: sleep_for / sleep_until precision, cancel by identifier,
// start(awaitable) on the calling thread (timers kept between starts), the
// loop on a thread pool and on its own thread, interval ticks, and the
// destructor dropping pending sleeps.
#include <cocls/scheduler.h>
#include <cocls/thread_pool.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

using namespace cocls;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// The calling thread's id, read anew each time: std::this_thread::get_id()
// is pthread_self(), declared const, so an optimiser may reuse its value
// across a co_await after which the coroutine runs on another thread.
static std::thread::id (*volatile this_thread_id)() = [] { return std::this_thread::get_id(); };

// How late a timer may fire: scheduling, and sanitizers on a loaded machine.
constexpr auto slack = 60ms;

static future<steady::duration> measure_sleep_for(scheduler &sch, steady::duration d) {
    auto t0 = steady::now();
    co_await sch.sleep_for(d);
    co_return steady::now() - t0;
}

static void sleep_for_waits_at_least_the_time_and_little_more() {
    scheduler sch;
    for (auto d : {20ms, 5ms, 30ms}) {
        auto took = sch.start(measure_sleep_for(sch, d));
        CHECK(took >= d);
        CHECK(took <= d + slack);
    }
}

static future<steady::time_point> wake_at(scheduler &sch, steady::time_point tp) {
    co_await sch.sleep_until(tp);
    co_return steady::now();
}

static void sleep_until_wakes_at_the_time_point() {
    scheduler sch;
    auto deadline = steady::now() + 20ms;
    auto woke = sch.start(wake_at(sch, deadline));
    CHECK(woke >= deadline);
    CHECK(woke <= deadline + slack);
    // A past time point is due at once.
    auto t0 = steady::now();
    sch.start(sch.sleep_until(t0 - 1s));
    CHECK(steady::now() - t0 < slack);
    // Another clock is converted.
    t0 = steady::now();
    sch.start(sch.sleep_until(std::chrono::system_clock::now() + 20ms));
    CHECK(steady::now() - t0 >= 19ms);
    CHECK(steady::now() - t0 <= 20ms + slack);
}

// Sleeps (long) with an identifier; records how it ended.
static async<void> sleeper(scheduler &sch, const void *id, std::string &outcome, std::thread::id &on) {
    try {
        co_await sch.sleep_for(1h, id);
        outcome = "woke";
    } catch (const await_canceled_exception &) {
        outcome = "canceled";
    } catch (const std::runtime_error &e) {
        outcome = e.what();
    }
    on = this_thread_id();
}

static void cancel_by_identifier_resolves_the_sleep_with_an_exception() {
    scheduler sch;  // no loop is needed: cancel resolves the sleep here
    int a = 0, b = 0, unknown = 0;
    std::string out_a, out_b;
    std::thread::id on_a, on_b;
    sleeper(sch, &a, out_a, on_a).detach();
    sleeper(sch, &b, out_b, on_b).detach();
    CHECK(out_a.empty() && out_b.empty());

    CHECK(!sch.cancel(&unknown).value());
    CHECK(!sch.cancel(nullptr).value());
    bool found = sch.cancel(&a);  // the waiter resumes here as the suspend point goes
    CHECK(found);
    CHECK_EQ(out_a, "canceled");
    CHECK(on_a == this_thread_id());
    CHECK(!sch.cancel(&a).value());  // no more sleeps of `a`
    CHECK(out_b.empty());

    found = sch.cancel(&b, std::make_exception_ptr(std::runtime_error("custom")));
    CHECK(found);
    CHECK_EQ(out_b, "custom");
}

static void cancel_takes_the_earliest_sleep_of_an_identifier() {
    scheduler sch;
    int id = 0;
    future<void> later = sch.sleep_for(2h, &id);
    future<void> sooner = sch.sleep_for(1h, &id);
    CHECK(sch.cancel(&id).value());
    CHECK(sooner.ready());
    CHECK(later.pending());
    CHECK(sch.cancel(&id).value());
    CHECK(later.ready());
    CHECK_THROWS(later.value(), await_canceled_exception);
}

static void remove_hands_back_the_promise_unset() {
    scheduler sch;
    int id = 0;
    future<void> f = sch.sleep_for(1h, &id);
    scheduler::promise p = sch.remove(&id);
    CHECK(static_cast<bool>(p));
    CHECK(f.pending());
    p();  // resolved by hand, early
    CHECK(f.ready());
    f.value();
    CHECK(!sch.remove(&id));
    // schedule() sets a given promise at a time point.
    future<void> g;
    sch.schedule(&id, g.get_promise(), steady::now() + 1h);
    CHECK(sch.cancel(&id).value());
    CHECK_THROWS(g.value(), await_canceled_exception);
}

static async<void> many_short_sleeps(scheduler &sch, std::atomic<int> &woke) {
    for (int i = 0; i < 50; i++) {
        co_await sch.sleep_for(std::chrono::microseconds(200 * (i % 5)));
        woke++;
    }
}

static void sleeps_from_several_threads_all_wake() {
    scheduler sch;
    sch.start_thread();
    std::atomic<int> woke{0};
    std::vector<std::thread> threads;
    std::vector<future<void>> done(4);
    for (auto &d : done) threads.emplace_back([&] { d << [&] { return many_short_sleeps(sch, woke).start(); }; });
    for (auto &t : threads) t.join();
    for (auto &d : done) d.wait();
    CHECK_EQ(woke.load(), 200);
}

static future<int> two_naps(scheduler &sch, std::vector<std::string> &log, std::thread::id &on) {
    co_await sch.sleep_for(10ms);
    log.push_back("first nap");
    co_await sch.sleep_for(10ms);
    log.push_back("second nap");
    on = this_thread_id();
    co_return 42;
}

static future<void> nap(scheduler &sch, std::chrono::milliseconds d, std::vector<std::string> &log, std::string name) {
    co_await sch.sleep_for(d);
    log.push_back(name);
}

static void start_runs_the_loop_here_until_the_awaitable_is_ready() {
    scheduler sch;
    std::vector<std::string> log;
    std::thread::id on;
    future<int> f = two_naps(sch, log, on);
    future<void> longer = nap(sch, 60ms, log, "long nap");
    CHECK_EQ(sch.start(f), 42);  // an lvalue awaitable, awaited in place
    CHECK(on == this_thread_id());
    CHECK_EQ(log.size(), 2u);
    CHECK(longer.pending());  // its timer stays for the next start
    sch.start(longer);
    CHECK_EQ(log.size(), 3u);
    CHECK_EQ(log[2], "long nap");
    // A ready awaitable returns at once; an exception comes out of start.
    future<int> ready([](promise<int> p) { p(7); });
    CHECK_EQ(sch.start(ready), 7);
    future<int> failed([](promise<int> p) { p(std::make_exception_ptr(std::logic_error("x"))); });
    CHECK_THROWS(sch.start(failed), std::logic_error);
}

static future<bool> nested_start(scheduler &sch, std::vector<std::string> &log) {
    co_await sch.sleep_for(5ms);
    log.push_back("outer woke");
    sch.start(nap(sch, 5ms, log, "inner nap"));  // on the loop's thread: a nested loop
    log.push_back("outer after inner");
    co_return true;
}

static void start_from_a_woken_coroutine_runs_a_nested_loop() {
    scheduler sch;
    std::vector<std::string> log;
    CHECK(sch.start(nested_start(sch, log)));
    CHECK_EQ(log.size(), 3u);
    CHECK_EQ(log[0], "outer woke");
    CHECK_EQ(log[1], "inner nap");
    CHECK_EQ(log[2], "outer after inner");
}

struct wake_record {
    std::thread::id on;
    bool on_pool = false;
    steady::duration took{};
};

static async<wake_record> sleep_on_pool(scheduler &sch, thread_pool &pool) {
    auto t0 = steady::now();
    co_await sch.sleep_for(20ms);
    co_return wake_record{this_thread_id(), is_current(pool), steady::now() - t0};
}

static void a_scheduler_on_a_pool_wakes_coroutines_on_the_pool() {
    thread_pool pool(3);
    scheduler sch(pool);
    auto r = pool.run(sleep_on_pool(sch, pool)).wait();
    CHECK(r.on_pool);
    CHECK(r.on != this_thread_id());
    CHECK(r.took >= 20ms);
    CHECK(r.took <= 20ms + slack);
    // start() while the loop runs on the pool: this thread just waits.
    auto t0 = steady::now();
    sch.start(sch.sleep_for(10ms));
    CHECK(steady::now() - t0 >= 10ms);
}

static void stopping_the_pool_ends_the_scheduler_loop_on_it() {
    thread_pool pool(2);
    scheduler sch;
    sch.start(pool);  // COCLS's spelling of scheduler(pool)
    CHECK(pool.run([] { return 1; }).wait() == 1);
    pool.stop();  // would wait forever for the loop's job without the scheduler hearing of it
    CHECK(pool.is_stopped());
    // The loop is gone; start() serves the timers on this thread now.
    auto t0 = steady::now();
    sch.start(sch.sleep_for(5ms));
    CHECK(steady::now() - t0 >= 5ms);
}

static void a_scheduler_on_its_own_thread_wakes_coroutines_there() {
    scheduler sch;
    sch.start_thread();
    std::thread::id on;
    std::vector<std::string> log;
    future<int> f = two_naps(sch, log, on);
    CHECK_EQ(f.wait(), 42);  // no start(): the loop's thread serves the timers
    CHECK(on != this_thread_id());
    CHECK(on != std::thread::id());

    std::thread thr;
    {
        scheduler own(thr);
        std::thread::id on2;
        std::vector<std::string> log2;
        future<int> g = two_naps(own, log2, on2);
        CHECK_EQ(g.wait(), 42);
        CHECK(on2 == thr.get_id());
    }
    thr.join();  // the loop ended with the scheduler
}

static void the_destructor_drops_pending_sleeps() {
    std::string out_named, out_anonymous;
    std::thread::id on_named, on_anonymous;
    int id = 0;
    {
        scheduler sch;
        sleeper(sch, &id, out_named, on_named).detach();
        sleeper(sch, nullptr, out_anonymous, on_anonymous).detach();
        sch.start_thread();
    }
    CHECK_EQ(out_named, "canceled");
    CHECK_EQ(out_anonymous, "canceled");
    CHECK(on_named == this_thread_id());
    CHECK(on_anonymous == this_thread_id());
}

static void interval_ticks_from_the_previous_tick() {
    scheduler sch;
    sch.start_thread();
    // Long enough that the two rules (from the tick, from the call) stay half
    // a step apart on a loaded machine.
    constexpr auto step = 200ms;
    auto gen = sch.interval(step);
    auto t0 = steady::now();
    CHECK_EQ(gen().wait(), 0u);
    auto t1 = steady::now();
    CHECK(t1 - t0 >= step);
    CHECK(t1 - t0 <= step + slack);
    // Work shorter than a step: the next tick keeps the rhythm.
    std::this_thread::sleep_for(step / 2);
    CHECK_EQ(gen().wait(), 1u);
    auto t2 = steady::now();
    CHECK(t2 - t0 >= 2 * step);
    CHECK(t2 - t0 < 2 * step + step / 2);  // not 2.5 steps: counted from the tick, not the call
    // Work longer than a step: the rhythm restarts from now.
    std::this_thread::sleep_for(2 * step);
    auto t3 = steady::now();
    CHECK_EQ(gen().wait(), 2u);
    auto t4 = steady::now();
    CHECK(t4 - t3 >= step);
    CHECK(t4 - t3 <= step + slack);
}

static void interval_ends_when_its_stop_token_is_raised() {
    scheduler sch;
    sch.start_thread();
    std::stop_source stop;
    auto gen = sch.interval(1h, stop.get_token());
    future<std::size_t> tick = gen();
    CHECK(tick.pending());
    stop.request_stop();  // cancels the pending sleep: the generator finishes
    tick.sync();
    CHECK(!tick.has_value());
    CHECK(gen.done());
}

int main() {
    RUN(sleep_for_waits_at_least_the_time_and_little_more);
    RUN(sleep_until_wakes_at_the_time_point);
    RUN(cancel_by_identifier_resolves_the_sleep_with_an_exception);
    RUN(cancel_takes_the_earliest_sleep_of_an_identifier);
    RUN(remove_hands_back_the_promise_unset);
    RUN(sleeps_from_several_threads_all_wake);
    RUN(start_runs_the_loop_here_until_the_awaitable_is_ready);
    RUN(start_from_a_woken_coroutine_runs_a_nested_loop);
    RUN(a_scheduler_on_a_pool_wakes_coroutines_on_the_pool);
    RUN(stopping_the_pool_ends_the_scheduler_loop_on_it);
    RUN(a_scheduler_on_its_own_thread_wakes_coroutines_there);
    RUN(the_destructor_drops_pending_sleeps);
    RUN(interval_ticks_from_the_previous_tick);
    RUN(interval_ends_when_its_stop_token_is_raised);
    return 0;
}
