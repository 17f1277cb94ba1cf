// mutex: FIFO handoff, switching to the new owner with co_await release()
// versus queueing it by discarding the suspend point, try_lock, blocking
// lock().wait() from threads, coroutines and threads sharing one mutex.
#include <cocls/async.h>
#include <cocls/coro_queue.h>
#include <cocls/future.h>
#include <cocls/mutex.h>

#include <atomic>
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

// Takes the lock, lets the others queue on it (pause), then releases it either
// switching to the new owner (co_await) or leaving it queued (discarded).
static async<void> worker(int n, mutex &mx, bool switch_now) {
    std::string id = std::to_string(n);
    note(id + ":lock");
    auto own = co_await mx.lock();
    note(id + ":have");
    co_await cocls::pause();
    note(id + ":release");
    if (switch_now) co_await own.release();
    else own.release();
    note(id + ":done");
}

static future<void> three_workers(mutex &mx, bool switch_now) {
    // Discarded, the suspend points of start(promise) queue the three (coro
    // mode); a coroutine returning future<void> would run at once instead.
    future<void> f1, f2, f3;
    worker(1, mx, switch_now).start(f1.get_promise());
    worker(2, mx, switch_now).start(f2.get_promise());
    worker(3, mx, switch_now).start(f3.get_promise());
    co_await f1;
    co_await f2;
    co_await f3;
}

static void awaiting_release_switches_to_the_new_owner_at_once() {
    mutex mx;
    trace.clear();
    three_workers(mx, true).wait();
    CHECK_EQ(trace, std::string("1:lock 1:have 2:lock 3:lock 1:release 2:have 1:done "
                                "2:release 3:have 2:done 3:release 3:done"));
    CHECK(mx.try_lock());
}

static void discarding_release_queues_the_new_owner_behind_the_releaser() {
    mutex mx;
    trace.clear();
    three_workers(mx, false).wait();
    CHECK_EQ(trace, std::string("1:lock 1:have 2:lock 3:lock 1:release 1:done 2:have "
                                "2:release 2:done 3:have 3:release 3:done"));
    CHECK(mx.try_lock());
}

static async<void> take_in_turn(mutex &mx, int n, std::vector<int> &order) {
    auto own = co_await mx.lock();
    order.push_back(n);
}

static void waiters_get_the_lock_in_the_order_they_asked() {
    mutex mx;
    std::vector<int> order;
    {
        auto own = mx.try_lock();
        CHECK(own);
        for (int i = 0; i < 5; i++) take_in_turn(mx, i, order).detach();  // normal mode: each runs and queues
        CHECK(order.empty());
    }  // the last owner goes: in normal mode every waiter runs here, in order
    CHECK_EQ(order.size(), 5u);
    for (int i = 0; i < 5; i++) CHECK_EQ(order[i], i);
    CHECK(mx.try_lock());
}

static void try_lock_fails_while_locked_and_never_waits() {
    mutex mx;
    auto a = mx.try_lock();
    CHECK(a);
    auto b = mx.try_lock();
    CHECK(!b);
    CHECK(b.release().empty());  // releasing an empty ownership does nothing
    auto c = mx.try_lock();
    CHECK(!c);  // still locked by a
    a.release();
    CHECK(!a);
    auto d = mx.try_lock();
    CHECK(d);
    mutex::ownership moved = std::move(d);
    CHECK(!d);
    CHECK(moved);
    CHECK(!mx.try_lock());
    moved = mutex::ownership();  // move-assigning releases the old lock
    CHECK(mx.try_lock());
}

static void a_blocking_lock_waits_for_a_coroutine_owner() {
    mutex mx;
    future<void> gate;
    auto open = gate.get_promise();
    auto holder = [&]() -> future<void> {
        auto own = co_await mx.lock();
        co_await gate;  // holds the lock while suspended
    };
    future<void> held = holder();
    CHECK(!mx.try_lock());
    std::atomic<bool> got{false};
    std::thread t([&] {
        mutex::ownership own = mx.lock();  // blocks until the holder ends
        got = true;
    });
    open();  // the holder resumes here, ends, and hands the lock to the thread
    t.join();
    CHECK(got.load());
    held.wait();
    CHECK(mx.try_lock());
}

static void blocking_locks_from_four_threads_count_exactly() {
    mutex mx;
    long counter = 0;
    constexpr int threads = 4, rounds = 20000;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) {
        ts.emplace_back([&] {
            for (int i = 0; i < rounds; i++) {
                auto own = mx.lock().wait();
                counter++;
            }
        });
    }
    for (auto &t : ts) t.join();
    CHECK_EQ(counter, long(threads) * rounds);
    CHECK(mx.try_lock());
}

static async<void> coroutine_incrementer(mutex &mx, long &counter, int rounds) {
    for (int i = 0; i < rounds; i++) {
        auto own = co_await mx.lock();  // may resume on whichever thread unlocked
        counter++;
    }
}

static void coroutines_and_threads_share_one_mutex() {
    mutex mx;
    long counter = 0;
    constexpr int rounds = 10000;
    std::vector<std::thread> ts;
    for (int t = 0; t < 2; t++) {
        ts.emplace_back([&] { coroutine_incrementer(mx, counter, rounds).join(); });
        ts.emplace_back([&] {
            for (int i = 0; i < rounds; i++) {
                auto own = mx.lock().wait();
                counter++;
            }
        });
    }
    for (auto &t : ts) t.join();
    CHECK_EQ(counter, 4L * rounds);
    CHECK(mx.try_lock());
}

int main() {
    RUN(awaiting_release_switches_to_the_new_owner_at_once);
    RUN(discarding_release_queues_the_new_owner_behind_the_releaser);
    RUN(waiters_get_the_lock_in_the_order_they_asked);
    RUN(try_lock_fails_while_locked_and_never_waits);
    RUN(a_blocking_lock_waits_for_a_coroutine_owner);
    RUN(blocking_locks_from_four_threads_count_exactly);
    RUN(coroutines_and_threads_share_one_mutex);
    return 0;
}
