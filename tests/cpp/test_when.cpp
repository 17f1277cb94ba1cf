// when_all and when_any: results, void members, the first exception stopping
// the others (all ended before the rethrow), losers cancelled within a turn,
// a winner at start leaving later arguments unstarted, the parent's stop,
// the vector overloads and an empty vector.
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/timer.h>
#include <cothread/when_all.h>
#include <cothread/when_any.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <system_error>
#include <tuple>
#include <variant>
#include <vector>

#include "check.h"

using namespace std::chrono_literals;
using cothread::task;
using steady = std::chrono::steady_clock;

static task<int> value_after(int v, std::chrono::milliseconds d) {
    co_await cothread::sleep_for(d);
    co_return v;
}
static task<std::string> text_now(std::string s) { co_return s; }
static task<void> nothing() { co_return; }
static task<std::unique_ptr<int>> boxed(int v) {
    co_await cothread::yield();
    co_return std::make_unique<int>(v);
}

static task<int> all_values() {
    auto [a, s, v, slept, p] =
        co_await cothread::when_all(value_after(1, 2ms), text_now("two"), nothing(), cothread::sleep_for(1ms), boxed(5));
    static_assert(std::is_same_v<decltype(v), std::monostate>);
    static_assert(std::is_same_v<decltype(slept), std::monostate>);
    CHECK_EQ(a, 1);
    CHECK(s == "two");
    CHECK_EQ(*p, 5);
    co_return a + int(s.size()) + *p;
}

static void test_all_values() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, all_values()), 9);
}

// What a child did, seen from outside.
struct trace {
    bool started = false;
    bool canceled = false;  // its sleep ended with operation_canceled
    bool ended = false;     // its last line ran
};

static task<int> sleeper(trace *t, std::chrono::milliseconds d, int v) {
    t->started = true;
    try {
        co_await cothread::sleep_for(d);
    } catch (const std::system_error &e) {
        t->canceled = e.code() == std::errc::operation_canceled;
        t->ended = true;
        throw;
    }
    t->ended = true;
    co_return v;
}

static task<int> thrower(trace *t, std::chrono::milliseconds d) {
    t->started = true;
    if (d > 0ms) co_await cothread::sleep_for(d);
    t->ended = true;
    throw std::runtime_error("boom");
}

// The first exception stops the others; they have all ended when it is
// rethrown, and it is the first one (not the others' operation_canceled).
static task<void> all_first_error(trace *t) {
    auto t0 = steady::now();
    bool caught = false;
    try {
        co_await cothread::when_all(sleeper(&t[0], 1h, 0), thrower(&t[1], 5ms), sleeper(&t[2], 1h, 0));
    } catch (const std::runtime_error &e) {
        caught = std::string(e.what()) == "boom";
        CHECK(t[0].ended && t[0].canceled);
        CHECK(t[1].ended);
        CHECK(t[2].ended && t[2].canceled);
    }
    CHECK(caught);
    CHECK(steady::now() - t0 < 10s);
}

static void test_all_first_error() {
    cothread::loop lp;
    trace t[3];
    cothread::sync_wait(lp, all_first_error(t));
}

// A child that throws at once: those after it never start.
static task<void> all_error_at_start(trace *t) {
    bool caught = false;
    try {
        co_await cothread::when_all(sleeper(&t[0], 1h, 0), thrower(&t[1], 0ms), sleeper(&t[2], 1h, 0));
    } catch (const std::runtime_error &) {
        caught = true;
    }
    CHECK(caught);
    CHECK(t[0].started && t[0].canceled);
    CHECK(!t[2].started);
}

static void test_all_error_at_start() {
    cothread::loop lp;
    trace t[3];
    cothread::sync_wait(lp, all_error_at_start(t));
}

// The short sleep wins; the long one is cancelled and joined at once.
static task<void> any_short_long(trace *t) {
    auto t0 = steady::now();
    auto r = co_await cothread::when_any(sleeper(&t[0], 5ms, 10), sleeper(&t[1], 1h, 20));
    CHECK_EQ(r.index(), std::size_t(0));
    CHECK_EQ(std::get<0>(r), 10);
    CHECK(t[1].ended && t[1].canceled);  // joined before the await ended
    CHECK(steady::now() - t0 < 10s);
    // The same with bare awaitables, the winner second.
    auto r2 = co_await cothread::when_any(cothread::sleep_for(1h), cothread::sleep_for(1ms));
    CHECK_EQ(r2.index(), std::size_t(1));
    CHECK(steady::now() - t0 < 10s);
}

static void test_any_short_long() {
    cothread::loop lp;
    trace t[2];
    cothread::sync_wait(lp, any_short_long(t));
}

// The loser is cancelled within one turn: a task counting turns with yield()
// sees the whole when_any end in very few of them.
static task<void> turn_counter(int *turns, bool *stop) {
    while (!*stop) {
        co_await cothread::yield();
        ++*turns;
    }
}
static task<void> any_within_a_turn(int *turns, bool *stop) {
    co_await cothread::yield();  // the counter runs
    int before = *turns;
    auto r = co_await cothread::when_any(nothing(), cothread::sleep_for(1h));
    CHECK_EQ(r.index(), std::size_t(0));  // won at start: no turn at all
    CHECK_EQ(*turns, before);
    trace t;
    auto r2 = co_await cothread::when_any(cothread::yield(), sleeper(&t, 1h, 0));
    CHECK_EQ(r2.index(), std::size_t(0));
    CHECK(t.canceled);
    CHECK(*turns - before <= 3);
    *stop = true;
}

static void test_any_within_a_turn() {
    cothread::loop lp;
    int turns = 0;
    bool stop = false;
    lp.spawn_detached(turn_counter(&turns, &stop));
    lp.spawn_detached(any_within_a_turn(&turns, &stop));
    lp.run();
    CHECK(stop);
}

// A winner that ends during start-up: later arguments are never started (a
// task's frame is freed unstarted, an exception wins as a value does).
static task<void> any_winner_at_start(trace *t) {
    auto r = co_await cothread::when_any(sleeper(&t[0], 1h, 1), text_now("now"), sleeper(&t[1], 1h, 2));
    CHECK_EQ(r.index(), std::size_t(1));
    CHECK(std::get<1>(r) == "now");
    CHECK(t[0].started && t[0].canceled);
    CHECK(!t[1].started);
    bool caught = false;
    try {
        co_await cothread::when_any(thrower(&t[2], 0ms), sleeper(&t[3], 1h, 3));
    } catch (const std::runtime_error &) {
        caught = true;
    }
    CHECK(caught);
    CHECK(!t[3].started);
}

static void test_any_winner_at_start() {
    cothread::loop lp;
    trace t[4];
    cothread::sync_wait(lp, any_winner_at_start(t));
}

// First completion wins, an exception too (a reset must not wait for a timer).
static task<void> any_error_wins(trace *t) {
    bool caught = false;
    try {
        co_await cothread::when_any(sleeper(&t[0], 1h, 0), thrower(&t[1], 2ms));
    } catch (const std::runtime_error &) {
        caught = true;
    }
    CHECK(caught);
    CHECK(t[0].ended && t[0].canceled);
}

static void test_any_error_wins() {
    cothread::loop lp;
    trace t[2];
    cothread::sync_wait(lp, any_error_wins(t));
}

// The parent's token fires while it waits: every child is stopped and the
// await throws operation_canceled.
static task<void> parent_any(trace *t, int *result) {
    try {
        co_await cothread::when_any(sleeper(&t[0], 1h, 0), sleeper(&t[1], 1h, 0));
    } catch (const std::system_error &e) {
        if (e.code() == std::errc::operation_canceled) *result = 1;
    }
}
static task<void> parent_all(trace *t, int *result) {
    try {
        co_await cothread::when_all(sleeper(&t[2], 1h, 0), cothread::sleep_for(1h));
    } catch (const std::system_error &e) {
        if (e.code() == std::errc::operation_canceled) *result = 1;
    }
    CHECK(t[2].canceled);
}
static task<void> stop_later(std::stop_source *src) {
    co_await cothread::sleep_for(5ms);
    src->request_stop();
}

static void test_parent_stopped() {
    cothread::loop lp;
    std::stop_source src;
    trace t[3];
    int any = 0, all = 0;
    lp.spawn_detached(parent_any(t, &any), src.get_token());
    lp.spawn_detached(parent_all(t, &all), src.get_token());
    lp.spawn_detached(stop_later(&src));
    auto t0 = steady::now();
    lp.run();
    CHECK(steady::now() - t0 < 10s);
    CHECK_EQ(any, 1);
    CHECK_EQ(all, 1);
    CHECK(t[0].canceled && t[1].canceled);
}

// Stopped before the await: the first child ends at once, cancelled, and
// wins; the second never starts.
static void test_parent_stopped_before() {
    cothread::loop lp;
    std::stop_source src;
    src.request_stop();
    trace t[3];
    int any = 0;
    lp.spawn_detached(parent_any(t, &any), src.get_token());
    lp.run();
    CHECK_EQ(any, 1);
    CHECK(t[0].canceled);
    CHECK(!t[1].started);
}

// when_* awaited by a nested task, its children awaiting nested tasks that
// end at once and tasks that sleep: each child runs in full at its start.
static task<int> deep(int n) {
    if (n == 0) co_return 1;
    co_return 1 + co_await deep(n - 1);
}
static task<int> deep_then_sleep(int n) {
    int v = co_await deep(n);
    co_await cothread::sleep_for(1ms);
    co_return v + co_await deep(n);
}
static task<int> nested_when() {
    auto [a, b, c] = co_await cothread::when_all(deep(100), deep_then_sleep(50), deep(3));
    auto r = co_await cothread::when_any(deep_then_sleep(10), deep(7));
    CHECK_EQ(r.index(), std::size_t(1));
    co_return a + b + c + std::get<1>(r);
}
static task<int> outer() { co_return co_await nested_when(); }

static void test_nested() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, outer()), 101 + 102 + 4 + 8);
}

static task<void> vectors() {
    std::vector<task<int>> v;
    for (int i = 0; i < 100; i++) v.push_back(value_after(i, std::chrono::milliseconds(i % 7)));
    std::vector<int> all = co_await cothread::when_all(std::move(v));
    CHECK_EQ(all.size(), std::size_t(100));
    for (int i = 0; i < 100; i++) CHECK_EQ(all[std::size_t(i)], i);

    std::vector<task<int>> w;
    w.push_back(value_after(0, 1h));
    w.push_back(value_after(1, 2ms));
    w.push_back(value_after(2, 1h));
    std::pair<std::size_t, int> first = co_await cothread::when_any(std::move(w));
    CHECK_EQ(first.first, std::size_t(1));
    CHECK_EQ(first.second, 1);

    std::vector<task<void>> voids;
    voids.push_back(nothing());
    voids.push_back(nothing());
    std::vector<std::monostate> vs = co_await cothread::when_all(std::move(voids));
    CHECK_EQ(vs.size(), std::size_t(2));

    bool empty_all = false, empty_any = false;
    try {
        co_await cothread::when_all(std::vector<task<int>>{});
    } catch (const std::system_error &e) {
        empty_all = e.code() == std::errc::invalid_argument;
    }
    try {
        co_await cothread::when_any(std::vector<task<void>>{});
    } catch (const std::system_error &e) {
        empty_any = e.code() == std::errc::invalid_argument;
    }
    CHECK(empty_all && empty_any);
}

static void test_vectors() {
    cothread::loop lp;
    cothread::sync_wait(lp, vectors());
}

// An awaiter never awaited frees its unstarted children's frames.
static void test_not_awaited() {
    trace t;
    { auto w = cothread::when_all(sleeper(&t, 1h, 0), nothing()); }
    CHECK(!t.started);
}

// ~loop ends a task waiting in when_all: its children are stopped as roots.
static void test_loop_destroyed() {
    trace t[2];
    {
        cothread::loop lp;
        lp.spawn_detached([](trace *t) -> task<void> {
            try {
                co_await cothread::when_all(sleeper(&t[0], 1h, 0), sleeper(&t[1], 1h, 0));
            } catch (const std::system_error &) {
            }
        }(t));
        lp.run_once();
    }
    CHECK(t[0].canceled && t[1].canceled);
}

int main() {
    RUN(test_all_values);
    RUN(test_all_first_error);
    RUN(test_all_error_at_start);
    RUN(test_any_short_long);
    RUN(test_any_within_a_turn);
    RUN(test_any_winner_at_start);
    RUN(test_any_error_wins);
    RUN(test_parent_stopped);
    RUN(test_parent_stopped_before);
    RUN(test_nested);
    RUN(test_vectors);
    RUN(test_not_awaited);
    RUN(test_loop_destroyed);
    std::printf("ok\n");
    return 0;
}
