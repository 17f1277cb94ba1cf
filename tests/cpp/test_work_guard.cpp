// work_guard: run() stays up while a guard lives, with nothing else to do
// (a C timer, which is no work of the loop, fires meanwhile);
// work posted and tasks spawned from another thread run on the worker; a
// reset on the loop thread, or from another thread while run() waits for
// I/O, ends run(); moves and double resets; ~loop drains a reset still in
// the inbox. The threaded cases also run under ThreadSanitizer
// (scripts/tsan-c).
#include <cocls/future.h>
#include <cothread/loop.h>
#include <cothread/task.h>
#include <cothread/timer.h>
#include <cothread/work_guard.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <thread>
#include <utility>

#include "check.h"

using namespace std::chrono_literals;
using cothread::task;

// Waits for `f` far longer than it can take on a loaded machine: a
// timeout means what it waits for will never come.
template <typename F>
static bool comes(F &f) {
    return f.wait_for(60s) == std::future_status::ready;
}

static void test_without_guard() {
    cothread::loop lp;
    lp.run();  // nothing to do: returns at once
    CHECK(!lp.run_once());
}

// A C timer started through native() is no work of the loop: its callback
// runs only while run() runs for another reason. With nothing but a guard,
// it proves that run() stays up (without the guard run() returns before
// any iteration, and the timer never fires).
struct raw_timer {
    cot_loop *lp;
    cot_handle h = 0;
    std::function<void()> fn;
    raw_timer(cothread::loop &l, std::function<void()> f) : lp(l.native()), fn(std::move(f)) {
        CHECK_EQ(cot_timer_init(lp, this, &h), 0);
        CHECK_EQ(cot_timer_start(lp, h, &fire, 1000000, 0), 0);  // 1 ms
    }
    ~raw_timer() { cot_close(lp, h, nullptr); }
    static void fire(cot_loop *, cot_handle, void *data) { static_cast<raw_timer *>(data)->fn(); }
};

// On this thread: the timer fires under the guard alone, and resets it.
static void test_stays_up() {
    cothread::loop lp;
    cothread::work_guard g(lp);
    CHECK(g.owns_work());
    bool fired = false;
    raw_timer t(lp, [&] {
        fired = true;
        g.reset();  // on the loop thread: run() returns
    });
    lp.run();
    CHECK(fired);
    CHECK(!g.owns_work());
}

// A worker thread runs the loop with nothing but the guard (the timer has
// fired there); then the main thread posts to it and resets the guard
// while run() waits in epoll.
static void test_worker_stays_up() {
    cothread::loop lp;
    cothread::work_guard g(lp);
    std::promise<void> up, ran;  // outlive the worker's set_value
    std::future<void> up_f = up.get_future(), ran_f = ran.get_future();
    raw_timer t(lp, [&] { up.set_value(); });
    std::atomic<bool> returned{false};
    std::atomic<std::thread::id> ran_on{};
    std::thread worker([&] {
        lp.run();
        returned = true;
    });
    CHECK(comes(up_f));
    CHECK(!returned);
    lp.post([&] {
        ran_on = std::this_thread::get_id();
        ran.set_value();
    });
    CHECK(comes(ran_f));
    CHECK(ran_on.load() == worker.get_id());
    g.reset();  // from this thread
    CHECK(!g.owns_work());
    worker.join();
    CHECK(returned);
}

static task<int> on_worker(std::thread::id *where) {
    co_await cothread::sleep_for(1ms);
    *where = std::this_thread::get_id();
    co_return 7;
}

// Tasks spawned from another thread run on the worker; their futures are
// waited for here.
static void test_spawn_from_other_thread() {
    cothread::loop lp;
    cothread::work_guard g(lp);
    std::thread worker([&] { lp.run(); });
    for (int i = 0; i < 3; i++) {
        std::thread::id where;
        cocls::future<int> f = lp.spawn(on_worker(&where));
        CHECK_EQ(f.wait(), 7);  // blocks this thread
        CHECK(where == worker.get_id());
    }
    g.reset();
    worker.join();
}

// A guard reset by a task of the loop (on the loop thread): run() returns
// once that task has ended too.
static task<void> resetter(cothread::work_guard *g, bool *ended) {
    co_await cothread::sleep_for(1ms);
    g->reset();
    co_await cothread::yield();
    *ended = true;
}

static void test_reset_on_loop_thread() {
    cothread::loop lp;
    cothread::work_guard g(lp);
    bool ended = false;
    lp.spawn_detached(resetter(&g, &ended));
    lp.run();
    CHECK(ended);
    CHECK(!g.owns_work());
    // A post resetting it, with nothing else: run() returns.
    cothread::work_guard h(lp);
    lp.post([&] { h.reset(); });
    lp.run();
    CHECK(!h.owns_work());
}

// Many threads make and reset guards of one loop at once, while it runs;
// the main guard holds it until they are done.
static void test_many_threads() {
    cothread::loop lp;
    cothread::work_guard g(lp);
    std::thread worker([&] { lp.run(); });
    std::atomic<int> posts{0};
    std::thread threads[4];
    for (std::thread &t : threads) {
        t = std::thread([&] {
            for (int i = 0; i < 200; i++) {
                cothread::work_guard mine(lp);
                lp.post([&] { posts.fetch_add(1, std::memory_order_relaxed); });
                if (i % 2) mine.reset();  // else its destructor does
            }
        });
    }
    for (std::thread &t : threads) t.join();
    g.reset();
    worker.join();
    CHECK_EQ(posts.load(), 800);
}

// Moves, double resets and the count of holds, seen through run_once():
// it says whether work remains. Each run_once has an inbox node to run.
static void test_moves() {
    cothread::loop lp;
    cothread::work_guard a(lp), b(lp);
    a.reset();  // nobody runs the loop: through the inbox (and an async send)
    a.reset();  // nothing
    CHECK(lp.run_once());  // b holds
    cothread::work_guard c(std::move(b));
    CHECK(!b.owns_work());
    CHECK(c.owns_work());
    b.reset();  // moved-from: nothing
    cothread::work_guard d(lp);
    d = std::move(c);  // d's own hold goes, c's comes
    CHECK(!c.owns_work());
    CHECK(d.owns_work());
    CHECK(lp.run_once());  // d holds one
    d.reset();
    CHECK(!lp.run_once());
    CHECK(!lp.run_once());
}

// A reset from another thread while nobody runs the loop waits in the
// inbox; ~loop runs it (else ~loop would wait for the guard forever).
static void test_reset_then_destroy() {
    std::optional<cothread::loop> lp;
    lp.emplace();
    cothread::work_guard g(*lp);
    std::thread t([&] { g.reset(); });
    t.join();
    lp.reset();
}

int main() {
    RUN(test_without_guard);
    RUN(test_stays_up);
    RUN(test_worker_stays_up);
    RUN(test_spawn_from_other_thread);
    RUN(test_reset_on_loop_thread);
    RUN(test_many_threads);
    RUN(test_moves);
    RUN(test_reset_then_destroy);
    return 0;
}
