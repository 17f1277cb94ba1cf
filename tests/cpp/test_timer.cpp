// cothread sleeps: order, past time points, bad input, and a stop token that
// ends a sleep at once, from the loop thread and from another thread.
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/timer.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <stop_token>
#include <system_error>
#include <thread>
#include <vector>

#include "check.h"

using namespace std::chrono_literals;
using cothread::task;
using steady = std::chrono::steady_clock;

// Each sleeper records when it should end (a sleep counts from its co_await).
static task<void> sleeper(std::chrono::nanoseconds d, std::vector<steady::time_point> *ends) {
    steady::time_point target = steady::now() + d;
    co_await cothread::sleep_for(d);
    CHECK(steady::now() >= target);
    ends->push_back(target);
}

// 1000 random sleeps end in the order of their targets. The target is read
// here, the sleep's clock a moment later: a preempted thread (a loaded
// machine, ASan) may see milliseconds between them, hence the margin; a
// misordered heap shows tens of milliseconds.
static void test_order() {
    cothread::loop lp;
    std::vector<steady::time_point> ends;
    std::mt19937 rng(20);
    for (int i = 0; i < 1000; i++) {
        std::int64_t us = std::int64_t(rng() % 2700) * 37;  // up to ~100 ms
        lp.spawn_detached(sleeper(std::chrono::microseconds(us), &ends));
    }
    lp.run();
    CHECK_EQ(ends.size(), std::size_t(1000));
    for (std::size_t i = 1; i < ends.size(); i++) CHECK(ends[i - 1] <= ends[i] + 5ms);
}

static task<int> past_and_zero() {
    auto t0 = steady::now();
    co_await cothread::sleep_until(t0 - 1h);
    co_await cothread::sleep_until(t0);
    co_await cothread::sleep_for(0ms);
    co_await cothread::yield();
    CHECK(steady::now() - t0 < 1s);
    co_await cothread::sleep_for(20ms);
    CHECK(steady::now() - t0 >= 20ms);
    co_return 1;
}

static void test_past_and_zero() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, past_and_zero()), 1);
}

static task<int> negative() {
    try {
        co_await cothread::sleep_for(-1ms);
    } catch (const std::system_error &e) {
        CHECK(e.code() == std::errc::invalid_argument);
        CHECK(e.code() == cothread::make_error(COT_EINVAL));
        co_return 1;
    }
    co_return 0;
}

static void test_negative() {
    cothread::loop lp;
    CHECK_EQ(cothread::sync_wait(lp, negative()), 1);
}

static void test_deadline() {
    cothread::loop lp;
    cot_loop *n = lp.native();
    std::uint64_t ns = 7;
    CHECK_EQ(cothread::deadline::never().timeout_ns(n, ns), 0);
    CHECK(ns == COT_FOREVER);
    CHECK_EQ(cothread::deadline(1500us).timeout_ns(n, ns), 0);
    CHECK_EQ(ns, std::uint64_t(1500000));
    CHECK_EQ(cothread::deadline(std::chrono::duration<double>(0.25e-9)).timeout_ns(n, ns), 0);
    CHECK_EQ(ns, std::uint64_t(1));  // rounded up, never to 0
    CHECK_EQ(cothread::deadline(-1ns).timeout_ns(n, ns), COT_EINVAL);
    CHECK_EQ(cothread::deadline(std::chrono::hours::max()).timeout_ns(n, ns), 0);
    CHECK(ns == COT_FOREVER);
    cot_loop_update_time(n);
    CHECK_EQ(cothread::deadline(steady::now() - 1s).timeout_ns(n, ns), 0);
    CHECK_EQ(ns, std::uint64_t(0));  // past: try once
    CHECK_EQ(cothread::deadline(steady::now() + 10s).timeout_ns(n, ns), 0);
    CHECK(ns > std::uint64_t(9000000000) && ns <= std::uint64_t(11000000000));
    CHECK(cothread::deadline(steady::time_point::max()).is_never());
}

static void test_run_once() {
    cothread::loop lp;
    std::vector<steady::time_point> ends;
    lp.spawn_detached(sleeper(5ms, &ends));
    int turns = 0;
    while (lp.run_once()) turns++;
    CHECK_EQ(ends.size(), std::size_t(1));
    CHECK(turns >= 1);
    CHECK(!lp.run_once());
}

static void test_errors() {
    CHECK(cothread::make_error(COT_ETIMEDOUT) == std::errc::timed_out);
    CHECK(cothread::make_error(COT_ECANCELED) == std::errc::operation_canceled);
    CHECK(cothread::make_error(COT_ECONNRESET) == std::errc::connection_reset);
    CHECK(cothread::make_error(COT_EBUSY) == std::errc::device_or_resource_busy);
    CHECK(cothread::make_error(COT_EBADF) == std::errc::bad_file_descriptor);
    CHECK(cothread::make_error(COT_EPIPE) == std::errc::broken_pipe);
    CHECK(cothread::make_error(COT_EINVAL).message() == cot_strerror(COT_EINVAL));
    CHECK(std::string(cothread::category().name()) == "cothread");
    auto eai = cothread::make_error(COT_EAI_NONAME);
    CHECK(eai == cothread::make_error(COT_EAI_NONAME));
    CHECK(eai.default_error_condition().category() == cothread::category());
    CHECK(eai != std::errc::no_such_file_or_directory);
    CHECK(!cothread::make_error(0));
    CHECK_THROWS(cothread::throw_error(COT_EIO), std::system_error);
}

struct stop_result {
    std::atomic<bool> parked{false};
    bool canceled = false;
    steady::duration took{};
};

static task<void> stoppable(stop_result *r) {
    auto t0 = steady::now();
    r->parked = true;
    try {
        co_await cothread::sleep_for(1h);
    } catch (const std::system_error &e) {
        r->canceled = e.code() == std::errc::operation_canceled;
    }
    r->took = steady::now() - t0;
    // Stop is sticky: a later sleep ends at once too.
    bool again = false;
    try {
        co_await cothread::sleep_for(1h);
    } catch (const std::system_error &e) {
        again = e.code() == std::errc::operation_canceled;
    }
    CHECK(again);
}

static task<void> stopper(std::stop_source *src) {
    co_await cothread::yield();
    src->request_stop();  // on the loop thread
}

// Stop on the loop thread: the sleep ends within one turn.
static void test_stop_same_thread() {
    cothread::loop lp;
    std::stop_source src;
    stop_result r;
    lp.spawn_detached(stoppable(&r), src.get_token());
    lp.spawn_detached(stopper(&src));
    lp.run();
    CHECK(r.canceled);
    CHECK(r.took < 1s);
}

// Stop from another thread, while the loop sleeps in epoll.
static void test_stop_other_thread() {
    cothread::loop lp;
    std::stop_source src;
    stop_result r;
    lp.spawn_detached(stoppable(&r), src.get_token());
    std::thread t([&] {
        while (!r.parked) std::this_thread::sleep_for(1ms);
        std::this_thread::sleep_for(20ms);
        src.request_stop();
    });
    lp.run();
    t.join();
    CHECK(r.canceled);
    CHECK(r.took >= 20ms);
    CHECK(r.took < 10s);
}

// Stop already requested before the task starts.
static void test_stop_before() {
    cothread::loop lp;
    std::stop_source src;
    src.request_stop();
    stop_result r;
    lp.spawn_detached(stoppable(&r), src.get_token());
    lp.run();
    CHECK(r.canceled);
}

// A stop wakes only its own sleeper: a sibling that sleeps as long ends at
// its time, not canceled (a sleep and a stop both wake a task as "resumed";
// only the stop token tells them apart).
static task<void> timed(std::chrono::milliseconds d, int *canceled, steady::duration *took) {
    auto t0 = steady::now();
    try {
        co_await cothread::sleep_for(d);
    } catch (const std::system_error &e) {
        if (e.code() == std::errc::operation_canceled) ++*canceled;
    }
    *took = steady::now() - t0;
}

static void test_stop_one_of_two() {
    cothread::loop lp;
    std::stop_source a, b;
    int canceled_a = 0, canceled_b = 0;
    steady::duration took_a{}, took_b{};
    lp.spawn_detached(timed(500ms, &canceled_a, &took_a), a.get_token());
    lp.spawn_detached(timed(500ms, &canceled_b, &took_b), b.get_token());
    lp.spawn_detached(stopper(&a));
    lp.run();
    CHECK_EQ(canceled_a, 1);
    CHECK(took_a < 400ms);
    CHECK_EQ(canceled_b, 0);
    CHECK(took_b >= 500ms);
}

// Many sleepers stopped from another thread at once (a race of cancels
// against ends of sleeps).
static std::atomic<int> ended{0};
static task<void> short_sleeper(int i) {
    try {
        co_await cothread::sleep_for(std::chrono::microseconds(i * 10));
        co_await cothread::sleep_for(1h);
    } catch (const std::system_error &e) {
        CHECK(e.code() == std::errc::operation_canceled);
    }
    ended++;
}

static void test_stop_many_other_thread() {
    cothread::loop lp;
    std::stop_source src;
    for (int i = 0; i < 500; i++) lp.spawn_detached(short_sleeper(i), src.get_token());
    std::thread t([&] {
        std::this_thread::sleep_for(2ms);
        src.request_stop();
    });
    lp.run();
    t.join();
    CHECK_EQ(ended.load(), 500);
}

int main() {
    RUN(test_errors);
    RUN(test_deadline);
    RUN(test_run_once);
    RUN(test_order);
    RUN(test_past_and_zero);
    RUN(test_negative);
    RUN(test_stop_same_thread);
    RUN(test_stop_other_thread);
    RUN(test_stop_before);
    RUN(test_stop_one_of_two);
    RUN(test_stop_many_other_thread);
    std::printf("ok\n");
    return 0;
}
