// signal: every waiting emitter gets each value (the newest waiter first), the collector's thread runs
// them until they suspend, a busy consumer misses values, a gone signal
// cancels its emitters, co_await on the collector from a coroutine, hook_up,
// connect and signal<void>.
#include <cocls/async.h>
#include <cocls/future.h>
#include <cocls/signal.h>

#include <optional>
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

static async<void> listener(std::string name, signal<int>::emitter e) {
    try {
        for (;;) {
            int v = co_await e;
            note(name + std::to_string(v));
        }
    } catch (const await_canceled_exception &) {
        note(name + "-done");
    }
}

static void two_emitters_receive_the_same_values_and_end_with_the_signal() {
    trace.clear();
    {
        signal<int> sig;
        listener("a", sig.get_emitter()).detach();  // normal mode: runs until it waits
        listener("b", sig.get_emitter()).detach();
        auto c = sig.get_collector();
        std::size_t woken = c(1);  // both run here, before the call returns
        CHECK_EQ(woken, 2u);
        CHECK_EQ(trace, std::string("b1 a1"));  // newest first (COCLS's order)
        int v = 2;
        c(v);  // by reference; a waits again after b did: a runs first now
        c(3);
        CHECK_EQ(trace, std::string("b1 a1 a2 b2 b3 a3"));
    }  // the collector, then the signal go: the waiting emitters are canceled
    CHECK_EQ(trace, std::string("b1 a1 a2 b2 b3 a3 a-done b-done"));
}

static async<void> record_thread(signal<int>::emitter e, std::thread::id &where, int &got) {
    got = co_await e;
    where = std::this_thread::get_id();
}

static void the_collectors_thread_runs_the_emitters_before_the_call_returns() {
    signal<int> sig;
    std::thread::id where;
    int got = 0;
    record_thread(sig.get_emitter(), where, got).detach();
    std::thread::id collector_thread;
    bool seen_before_return = false;
    std::thread t([&, c = sig.get_collector()] {
        collector_thread = std::this_thread::get_id();
        c(42);
        seen_before_return = got == 42;
    });
    t.join();
    CHECK(seen_before_return);
    CHECK(where == collector_thread);
}

static async<void> busy_listener(signal<int>::emitter e, std::vector<int> &got, promise<void> &busy) {
    try {
        for (;;) {
            got.push_back(co_await e);
            future<void> work;
            busy = work.get_promise();
            co_await work;  // busy elsewhere: values sent meanwhile are missed
        }
    } catch (const await_canceled_exception &) {
    }
}

static void a_consumer_busy_elsewhere_misses_values() {
    signal<int> sig;
    std::vector<int> got;
    promise<void> busy;
    busy_listener(sig.get_emitter(), got, busy).detach();
    auto c = sig.get_collector();
    CHECK_EQ(std::size_t(c(1)), 1u);
    CHECK_EQ(std::size_t(c(2)), 0u);  // nobody waits: missed
    busy();                           // the listener waits on the emitter again
    CHECK_EQ(std::size_t(c(3)), 1u);
    CHECK_EQ(got.size(), 2u);
    CHECK_EQ(got[0], 1);
    CHECK_EQ(got[1], 3);
    busy();
}

static future<void> send_three(signal<int>::collector c) {
    for (int i = 1; i <= 3; i++) {
        note("send" + std::to_string(i));
        co_await c(i);  // switch to the emitters; back when they wait again
    }
}

static void a_coroutine_collector_switches_to_the_emitters_by_co_await() {
    trace.clear();
    signal<int> sig;
    listener("got", sig.get_emitter()).detach();
    send_three(sig.get_collector()).wait();
    CHECK_EQ(trace, std::string("send1 got1 send2 got2 send3 got3"));
}

static async<void> wait_once(signal<int>::emitter e, bool &canceled) {
    try {
        co_await e;
    } catch (const await_canceled_exception &) {
        canceled = true;
    }
}

static void an_emitter_without_a_signal_is_canceled_at_once() {
    bool canceled = false;
    wait_once(signal<int>::emitter(), canceled).detach();
    CHECK(canceled);
    signal<int>::emitter orphan;
    {
        signal<int> sig;
        orphan = sig.get_emitter();
    }
    canceled = false;
    wait_once(orphan, canceled).detach();
    CHECK(canceled);
}

static async<void> hooked(std::optional<signal<int>::collector> &registry, std::vector<int> &got, bool &ended) {
    auto e = signal<int>::hook_up([&](signal<int>::collector c) { registry.emplace(std::move(c)); });
    try {
        for (;;) got.push_back(co_await e);  // the first co_await registers
    } catch (const await_canceled_exception &) {
        ended = true;
    }
}

static void hook_up_registers_the_collector_once_waiting() {
    std::optional<signal<int>::collector> registry;
    std::vector<int> got;
    bool ended = false;
    hooked(registry, got, ended).detach();
    CHECK(registry.has_value());
    (*registry)(5);
    (*registry)(6);
    CHECK_EQ(got.size(), 2u);
    CHECK_EQ(got[0], 5);
    CHECK_EQ(got[1], 6);
    CHECK(!ended);
    registry.reset();  // the producer drops the only collector
    CHECK(ended);
}

static future<void> hooked_to_a_thread(std::thread &producer, std::vector<int> &got) {
    auto e = signal<int>::hook_up([&](signal<int>::collector c) {
        producer = std::thread([c] {
            for (int i = 1; i <= 4; i++) c(i * 10);  // the coroutine runs on this thread
        });
    });
    try {
        for (;;) got.push_back(co_await e);
    } catch (const await_canceled_exception &) {
    }
}

static void hook_up_misses_nothing_from_a_producer_thread() {
    std::thread producer;
    std::vector<int> got;
    hooked_to_a_thread(producer, got).wait();  // ends when the thread drops its collector
    producer.join();
    CHECK_EQ(got.size(), 4u);
    for (int i = 0; i < 4; i++) CHECK_EQ(got[i], (i + 1) * 10);
}

static void connect_calls_back_until_false() {
    signal<int> sig;
    std::vector<int> seen;
    sig.connect([&](int v) {
        seen.push_back(v);
        return seen.size() < 2;
    });
    auto c = sig.get_collector();
    CHECK_EQ(std::size_t(c(1)), 1u);
    c(2);
    CHECK_EQ(std::size_t(c(3)), 0u);  // the callback said false after 2
    CHECK_EQ(seen.size(), 2u);
    CHECK_EQ(seen[1], 2);
    int forever = 0;
    sig.connect([&](int) { return ++forever > 0; });
    c(4);
    CHECK_EQ(forever, 1);
}  // the second callback is freed with the signal (LeakSanitizer checks)

static async<void> void_listener(signal<void>::emitter e, int &count) {
    try {
        for (;;) {
            co_await e;
            count++;
        }
    } catch (const await_canceled_exception &) {
        count += 100;
    }
}

static void a_void_signal_only_wakes() {
    int count = 0;
    {
        signal<void> sig;
        void_listener(sig.get_emitter(), count).detach();
        auto c = sig.get_collector();
        c();
        c();
        CHECK_EQ(count, 2);
    }
    CHECK_EQ(count, 102);
}

int main() {
    RUN(two_emitters_receive_the_same_values_and_end_with_the_signal);
    RUN(the_collectors_thread_runs_the_emitters_before_the_call_returns);
    RUN(a_consumer_busy_elsewhere_misses_values);
    RUN(a_coroutine_collector_switches_to_the_emitters_by_co_await);
    RUN(an_emitter_without_a_signal_is_canceled_at_once);
    RUN(hook_up_registers_the_collector_once_waiting);
    RUN(hook_up_misses_nothing_from_a_producer_thread);
    RUN(connect_calls_back_until_false);
    RUN(a_void_signal_only_wakes);
    return 0;
}
