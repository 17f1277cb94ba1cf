// queue / limited_queue: ready pops, waiting pops, switching to the popper,
// unblock_pop, cancellation by destruction, queue<void>, a full
// limited_queue holding its producer until a pop, and many producers and
// consumers on four threads.
#include <cocls/async.h>
#include <cocls/future.h>
#include <cocls/queue.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "check.h"

using namespace cocls;

static std::string trace;

static void note(const std::string &s) {
    if (!trace.empty()) trace += ' ';
    trace += s;
}

static void a_queued_value_makes_pop_ready_at_once() {
    queue<int> q;
    CHECK(q.empty());
    bool woke = q.push(1);
    CHECK(!woke);  // nobody waited
    q.push(2);
    CHECK_EQ(q.size(), 2u);
    future<int> f = q.pop();
    CHECK(f.ready());
    CHECK_EQ(f.value(), 1);
    CHECK_EQ(q.pop().wait(), 2);
    CHECK(q.empty());
}

static async<void> read_two_then_wait(queue<int> &q, std::vector<int> &got, bool &canceled) {
    future<int> f = q.pop();
    CHECK(!f.ready());
    got.push_back(co_await f);
    got.push_back(co_await q.pop());
    try {
        co_await q.pop();  // pending when the queue goes
    } catch (const await_canceled_exception &) {
        canceled = true;
    }
}

static void a_waiting_pop_gets_the_next_push_and_a_destroyed_queue_cancels_it() {
    auto q = std::make_unique<queue<int>>();
    std::vector<int> got;
    bool canceled = false;
    future<void> done = read_two_then_wait(*q, got, canceled).start();
    CHECK(got.empty());
    bool woke = q->push(10);  // normal mode: the reader runs inside push
    CHECK(woke);
    CHECK_EQ(got.size(), 1u);
    q->push(20);
    CHECK_EQ(got.size(), 2u);
    CHECK(!done.ready());
    q.reset();
    CHECK(canceled);
    CHECK(done.ready());
    done.value();
    CHECK_EQ(got[0], 10);
    CHECK_EQ(got[1], 20);
}

static async<void> popper(queue<int> &q) {
    int v = co_await q.pop();
    note("got" + std::to_string(v));
}

static future<void> producer(queue<int> &q, bool switch_now) {
    popper(q).detach();  // coro mode: queued, runs when the producer suspends
    co_await cocls::pause();  // ... here: the popper now waits on the queue
    note("push");
    if (switch_now) co_await q.push(1);
    else q.push(1);
    note("after");
}

static void awaiting_push_switches_to_the_popper_discarding_it_queues_the_popper() {
    queue<int> q;
    trace.clear();
    producer(q, true).wait();
    CHECK_EQ(trace, std::string("push got1 after"));
    trace.clear();
    producer(q, false).wait();
    CHECK_EQ(trace, std::string("push after got1"));
}

static async<void> pop_or_fail(queue<int> &q, std::string &out) {
    try {
        int v = co_await q.pop();
        out = "value " + std::to_string(v);
    } catch (const std::runtime_error &e) {
        out = std::string("error ") + e.what();
    }
}

static void unblock_pop_wakes_one_waiting_popper_with_the_exception() {
    queue<int> q;
    CHECK(!q.unblock_pop(std::make_exception_ptr(std::runtime_error("timeout"))).value());  // nobody waits
    std::string a, b;
    pop_or_fail(q, a).detach();
    pop_or_fail(q, b).detach();
    bool unblocked = q.unblock_pop(std::make_exception_ptr(std::runtime_error("timeout")));
    CHECK(unblocked);
    CHECK_EQ(a, std::string("error timeout"));  // the oldest popper
    CHECK(b.empty());
    q.push(7);
    CHECK_EQ(b, std::string("value 7"));
    q.push(8);  // unblock_pop left no trace: values still queue normally
    CHECK_EQ(q.pop().wait(), 8);
}

static void a_queue_of_void_counts_its_pushes() {
    queue<void> q;
    q.push();
    q.push();
    CHECK_EQ(q.size(), 2u);
    q.pop().wait();
    CHECK(q.pop().ready());
    future<void> f = q.pop();
    CHECK(!f.ready());
    q.push();
    CHECK(f.ready());
    CHECK(q.empty());
}

static async<void> sum_until_negative(queue<long> &q, long &sum, long &count) {
    for (;;) {
        long v = co_await q.pop();  // resumed on whichever thread pushed
        if (v < 0) co_return;
        sum += v;
        count++;
    }
}

static void many_producers_and_consumers_on_four_threads_lose_nothing() {
    queue<long> q;
    constexpr long per_producer = 20000;
    long sum[2] = {0, 0}, count[2] = {0, 0};
    std::vector<std::thread> ts;
    for (int c = 0; c < 2; c++) ts.emplace_back([&, c] { sum_until_negative(q, sum[c], count[c]).join(); });
    std::vector<std::thread> producers;
    for (int p = 0; p < 2; p++) {
        producers.emplace_back([&] {
            for (long i = 1; i <= per_producer; i++) q.push(i);
        });
    }
    for (auto &t : producers) t.join();
    q.push(-1L);  // one end mark per consumer
    q.push(-1L);
    for (auto &t : ts) t.join();
    CHECK_EQ(count[0] + count[1], 2 * per_producer);
    CHECK_EQ(sum[0] + sum[1], 2 * (per_producer * (per_producer + 1) / 2));
    CHECK(q.empty());
}

static future<void> fill(limited_queue<int> &q, int n) {
    for (int i = 1; i <= n; i++) {
        co_await q.push(i);  // suspends while the queue holds its limit
        note("pushed" + std::to_string(i));
    }
}

static void a_full_limited_queue_holds_the_producer_until_a_pop() {
    limited_queue<int> q(2);
    trace.clear();
    future<void> f = fill(q, 4);
    CHECK_EQ(trace, std::string("pushed1 pushed2"));  // the third push waits
    CHECK_EQ(q.size(), 2u);
    CHECK(!f.ready());
    CHECK_EQ(q.pop().wait(), 1);  // room: value 3 enters, the producer runs here
    CHECK_EQ(trace, std::string("pushed1 pushed2 pushed3"));
    CHECK_EQ(q.size(), 2u);
    CHECK_EQ(q.pop().wait(), 2);
    CHECK(f.ready());
    f.value();
    CHECK_EQ(q.pop().wait(), 3);
    CHECK_EQ(q.pop().wait(), 4);
    CHECK(q.empty());
}

static void a_waiting_producer_can_be_unblocked_or_canceled() {
    auto q = std::make_unique<limited_queue<int>>(1);
    CHECK(q->push(1).ready());
    future<void> second = q->push(2);
    future<void> third = q->push(3);
    CHECK(!second.ready());
    CHECK(q->unblock_push(std::make_exception_ptr(std::runtime_error("full"))));
    CHECK_THROWS(second.value(), std::runtime_error);
    CHECK_EQ(q->size(), 1u);  // the unblocked value was dropped
    CHECK(!third.ready());
    q.reset();
    CHECK_THROWS(third.value(), await_canceled_exception);
}

static void a_limited_queue_between_threads_delivers_everything() {
    limited_queue<long> q(4);
    constexpr long per_producer = 20000;
    std::vector<std::thread> ts;
    long sum[2] = {0, 0};
    for (int c = 0; c < 2; c++) {
        ts.emplace_back([&, c] {
            for (long i = 0; i < per_producer; i++) sum[c] += q.pop().wait();
        });
    }
    for (int p = 0; p < 2; p++) {
        ts.emplace_back([&] {
            for (long i = 1; i <= per_producer; i++) q.push(i).wait();
        });
    }
    for (auto &t : ts) t.join();
    CHECK_EQ(sum[0] + sum[1], 2 * (per_producer * (per_producer + 1) / 2));
    CHECK(q.empty());
}

int main() {
    RUN(a_queued_value_makes_pop_ready_at_once);
    RUN(a_waiting_pop_gets_the_next_push_and_a_destroyed_queue_cancels_it);
    RUN(awaiting_push_switches_to_the_popper_discarding_it_queues_the_popper);
    RUN(unblock_pop_wakes_one_waiting_popper_with_the_exception);
    RUN(a_queue_of_void_counts_its_pushes);
    RUN(many_producers_and_consumers_on_four_threads_lose_nothing);
    RUN(a_full_limited_queue_holds_the_producer_until_a_pop);
    RUN(a_waiting_producer_can_be_unblocked_or_canceled);
    RUN(a_limited_queue_between_threads_delivers_everything);
    return 0;
}
