// signal_set: raise and kill while a task waits, a signal kept for the next
// wait (once, however often it came), two signals in a set, two sets on
// one signal, deadlines (and the error_code form), the root's stop and a
// wait's own (from the loop thread and another thread), a second waiter,
// closing, moving and destroying the set while a task waits, ~loop with a
// waiting task, sync_wait of a wait, and bad input. Only SIGUSR1 and
// SIGUSR2 are raised, and only while a set watches them.
#include <cothread/error.h>
#include <cothread/loop.h>
#include <cothread/signal.h>
#include <cothread/sync_wait.h>
#include <cothread/task.h>
#include <cothread/timer.h>
#include <cothread/when_all.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stop_token>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "check.h"

using namespace std::chrono_literals;
using cothread::signal_set;
using cothread::task;
using steady = std::chrono::steady_clock;

// Is `signo` blocked in this thread?
static bool blocked(int signo) {
    sigset_t set;
    sigemptyset(&set);
    CHECK_EQ(pthread_sigmask(SIG_BLOCK, nullptr, &set), 0);
    return sigismember(&set, signo) == 1;
}

// The error a wait ended with (0: none).
template <typename A>
static task<std::error_code> error_of(A wait) {
    try {
        co_await std::move(wait);
    } catch (const std::system_error &e) {
        co_return e.code();
    }
    co_return std::error_code();
}

static task<void> raise_later(int signo) {
    co_await cothread::yield();  // after the waiter suspended
    CHECK_EQ(::raise(signo), 0);
}

static task<int> wait_for_raise(signal_set *s) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    lp.spawn_detached(raise_later(SIGUSR1));
    co_return co_await s->wait(30s);
}

static task<void> kill_later(int signo) {
    co_await cothread::yield();
    CHECK_EQ(::kill(::getpid(), signo), 0);  // to the process, not the thread
}

static task<int> wait_for_kill(signal_set *s) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    lp.spawn_detached(kill_later(SIGUSR2));
    co_return co_await s->wait();
}

static void test_raise_and_kill() {
    cothread::loop lp;
    CHECK(!blocked(SIGUSR1));
    {
        signal_set s(lp, {SIGUSR1, SIGUSR2});
        CHECK(s);
        CHECK(s.native_loop() == lp.native());
        CHECK(blocked(SIGUSR1));
        CHECK(blocked(SIGUSR2));
        CHECK_EQ(cothread::sync_wait(lp, wait_for_raise(&s)), SIGUSR1);
        CHECK_EQ(cothread::sync_wait(lp, wait_for_kill(&s)), SIGUSR2);
    }
    CHECK(!blocked(SIGUSR1));  // destroyed: no longer watched
    CHECK(!blocked(SIGUSR2));
}

// Signals that come while nobody waits are kept; a signal that came twice
// before it was read counts once (the kernel merges them as well).
static task<void> kept(signal_set *s) {
    CHECK_EQ(::raise(SIGUSR1), 0);
    CHECK_EQ(::raise(SIGUSR1), 0);
    CHECK_EQ(co_await s->wait(30s), SIGUSR1);
    std::error_code ec;
    CHECK_EQ(co_await s->wait(20ms, ec), 0);
    CHECK(ec == std::errc::timed_out);

    // Two signals read by the loop while nobody waits on `s`: `other`
    // watches them too, and once its two waits have ended, the loop has
    // read both. `s` kept them: its waits end at once, before their
    // deadline of "now".
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    signal_set other(lp, {SIGUSR1, SIGUSR2});
    CHECK_EQ(::raise(SIGUSR2), 0);
    CHECK_EQ(::raise(SIGUSR1), 0);
    int x = co_await other.wait(30s);
    int y = co_await other.wait(30s);
    CHECK(x != y && x + y == SIGUSR1 + SIGUSR2);
    int a = co_await s->wait(steady::now());
    int b = co_await s->wait(steady::now());
    CHECK(a != b && a + b == SIGUSR1 + SIGUSR2);
    ec.clear();
    co_await s->wait(20ms, ec);
    CHECK(ec == std::errc::timed_out);
    // The same signal read twice while nobody waits on `s`: kept once.
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(::raise(SIGUSR1), 0);
        CHECK_EQ(co_await other.wait(30s), SIGUSR1);
    }
    CHECK_EQ(co_await s->wait(steady::now()), SIGUSR1);
    co_await s->wait(20ms, ec);
    CHECK(ec == std::errc::timed_out);

    // One at a time, in the order they come.
    CHECK_EQ(::raise(SIGUSR2), 0);
    CHECK_EQ(co_await s->wait(30s), SIGUSR2);
    CHECK_EQ(::raise(SIGUSR1), 0);
    CHECK_EQ(co_await s->wait(30s), SIGUSR1);
}

static void test_kept() {
    cothread::loop lp;
    signal_set s(lp, {SIGUSR1, SIGUSR2, SIGUSR1});  // the repeat is watched once
    cothread::sync_wait(lp, kept(&s));
    // A wait is an awaitable of its own for sync_wait too.
    CHECK_EQ(::raise(SIGUSR2), 0);
    CHECK_EQ(cothread::sync_wait(lp, s.wait(30s)), SIGUSR2);
}

// Two sets watching one signal both get it.
static void test_two_sets() {
    cothread::loop lp;
    signal_set a(lp, {SIGUSR1});
    signal_set b(lp, {SIGUSR2, SIGUSR1});
    auto both = [](signal_set *x, signal_set *y) -> task<int> {
        cothread::loop &lp = co_await cothread::this_task::get_loop();
        lp.spawn_detached(raise_later(SIGUSR1));
        auto [p, q] = co_await cothread::when_all(x->wait(30s), y->wait(30s));
        co_return p + q;
    };
    CHECK_EQ(cothread::sync_wait(lp, both(&a, &b)), 2 * SIGUSR1);
}

static void test_deadline() {
    cothread::loop lp;
    signal_set s(lp, {SIGUSR1});
    auto t0 = steady::now();
    CHECK(cothread::sync_wait(lp, error_of(s.wait(20ms))) == std::errc::timed_out);
    CHECK(steady::now() - t0 >= 20ms);
    CHECK(cothread::sync_wait(lp, error_of(s.wait(steady::now() - 1s))) == std::errc::timed_out);  // try once
    CHECK(cothread::sync_wait(lp, error_of(s.wait(-1ms))) == std::errc::invalid_argument);
    std::error_code ec = cothread::make_error(COT_EIO);
    CHECK_EQ(::raise(SIGUSR1), 0);
    CHECK_EQ(cothread::sync_wait(lp, s.wait(30s, ec)), SIGUSR1);
    CHECK(!ec);  // cleared on success
    // A wait that timed out leaves no timer behind: a later long wait gets
    // its signal, not a stale timeout.
    CHECK_EQ(::raise(SIGUSR1), 0);
    CHECK_EQ(cothread::sync_wait(lp, s.wait(30s)), SIGUSR1);
}

struct stop_result {
    std::atomic<bool> parked{false};
    std::error_code first, again;
    int after = 0;
};

// Waits until stopped by the root's token; stop is sticky for the root.
static task<void> stopped_waiter(signal_set *s, stop_result *r) {
    r->parked = true;
    r->first = co_await error_of(s->wait());
    r->again = co_await error_of(s->wait(30s));
}

static task<void> stopper(std::stop_source *src) {
    co_await cothread::yield();
    src->request_stop();
}

static void run_root_stop(bool other_thread) {
    cothread::loop lp;
    signal_set s(lp, {SIGUSR1});
    std::stop_source src;
    stop_result r;
    lp.spawn_detached(stopped_waiter(&s, &r), src.get_token());
    std::thread t;
    if (other_thread) {
        t = std::thread([&] {
            while (!r.parked) std::this_thread::yield();
            src.request_stop();  // before or while it waits: canceled either way
        });
    } else {
        lp.spawn_detached(stopper(&src));
    }
    lp.run();
    if (t.joinable()) t.join();
    CHECK(r.first == std::errc::operation_canceled);
    CHECK(r.again == std::errc::operation_canceled);
    // The set itself goes on: another task gets the next signal.
    CHECK_EQ(::raise(SIGUSR1), 0);
    CHECK_EQ(cothread::sync_wait(lp, s.wait(30s)), SIGUSR1);
}

static void test_root_stop() { run_root_stop(false); }
static void test_root_stop_other_thread() { run_root_stop(true); }

// A wait's own token stops that wait only; a wait stopped before it
// starts leaves the signal for the next.
static task<void> own_stop(signal_set *s) {
    std::stop_source src;
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    lp.post([&src] { src.request_stop(); });
    std::error_code ec;
    CHECK_EQ(co_await s->wait(30s, ec).stop_on(src.get_token()), 0);
    CHECK(ec == std::errc::operation_canceled);
    CHECK_EQ(::raise(SIGUSR1), 0);
    CHECK(co_await error_of(s->wait().stop_on(src.get_token())) == std::errc::operation_canceled);
    CHECK_EQ(co_await s->wait(30s), SIGUSR1);  // left for the next wait; this task is not stopped
}

static void test_own_stop() {
    cothread::loop lp;
    signal_set s(lp, {SIGUSR1});
    cothread::sync_wait(lp, own_stop(&s));
}

// A second waiter is refused; the first goes on.
static task<std::error_code> second(signal_set *s) {
    std::error_code ec = co_await error_of(s->wait(30s));
    CHECK_EQ(::raise(SIGUSR1), 0);  // for the first
    co_return ec;
}

static task<void> busy(signal_set *s) {
    auto [first, ec] = co_await cothread::when_all(s->wait(30s), second(s));
    CHECK_EQ(first, SIGUSR1);
    CHECK(ec == std::errc::device_or_resource_busy);
}

static void test_busy() {
    cothread::loop lp;
    signal_set s(lp, {SIGUSR1});
    cothread::sync_wait(lp, busy(&s));
}

// Closing or destroying the set ends its wait with operation_canceled; a
// moved set goes on waiting; a moved-from or closed set is
// bad_file_descriptor.
static task<void> close_it(std::optional<signal_set> *s) {
    co_await cothread::yield();
    s->reset();
}

static task<void> destroyed_while_waiting(std::optional<signal_set> *s) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    lp.spawn_detached(close_it(s));
    CHECK(co_await error_of((*s)->wait(30s)) == std::errc::operation_canceled);
    CHECK(!s->has_value());
}

static task<void> moved_while_waiting(signal_set *from, std::optional<signal_set> *to) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    auto mover = [](signal_set *f, std::optional<signal_set> *t) -> task<void> {
        co_await cothread::yield();
        t->emplace(std::move(*f));
        CHECK_EQ(::raise(SIGUSR1), 0);
    };
    lp.spawn_detached(mover(from, to));
    CHECK_EQ(co_await from->wait(30s), SIGUSR1);
    CHECK(!*from);
    CHECK(co_await error_of(from->wait()) == std::errc::bad_file_descriptor);
}

static void test_close_and_move() {
    cothread::loop lp;
    std::optional<signal_set> s;
    s.emplace(lp, std::initializer_list<int>{SIGUSR1});
    cothread::sync_wait(lp, destroyed_while_waiting(&s));
    CHECK(!blocked(SIGUSR1));

    signal_set a(lp, {SIGUSR1});
    std::optional<signal_set> b;
    cothread::sync_wait(lp, moved_while_waiting(&a, &b));
    CHECK(b.has_value() && *b);
    auto w = b->wait();  // made before the close: refused at the await
    b->close();
    b->close();  // twice is fine
    CHECK(cothread::sync_wait(lp, error_of(std::move(w))) == std::errc::bad_file_descriptor);
    CHECK(cothread::sync_wait(lp, error_of(b->wait())) == std::errc::bad_file_descriptor);
    signal_set c(lp, {SIGUSR2});
    c = std::move(*b);  // c's own set closes; it takes b's (closed)
    CHECK(!c);
    CHECK(!blocked(SIGUSR2));
}

// ~loop stops a task waiting on a set of its own frame.
static task<void> waits_forever(std::error_code *ec) {
    cothread::loop &lp = co_await cothread::this_task::get_loop();
    signal_set s(lp, {SIGUSR1});
    *ec = co_await error_of(s.wait());
}

static void test_loop_destroyed() {
    std::error_code ec;
    {
        cothread::loop lp;
        lp.spawn_detached(waits_forever(&ec));
        lp.run_once();  // it waits
    }
    CHECK(ec == std::errc::operation_canceled);
    CHECK(!blocked(SIGUSR1));
}

static void test_bad_input() {
    cothread::loop lp;
    auto invalid = [&](std::vector<int> signals) {
        try {
            signal_set s(lp, std::span<const int>(signals));
        } catch (const std::system_error &e) {
            return e.code() == std::errc::invalid_argument && e.code() == cothread::make_error(COT_EINVAL);
        }
        return false;
    };
    CHECK(invalid({}));
    CHECK(invalid({0}));
    CHECK(invalid({-1}));
    CHECK(invalid({65}));
    CHECK(invalid({SIGKILL}));
    CHECK(invalid({SIGSTOP}));
    CHECK(invalid({SIGUSR1, 0}));  // the first was watched a moment: no longer
    CHECK(!blocked(SIGUSR1));
    // A set from another loop is refused by a task of this one.
    cothread::loop other;
    signal_set s(other, {SIGUSR2});
    CHECK(cothread::sync_wait(lp, error_of(s.wait())) == std::errc::invalid_argument);
    signal_set moved(std::move(s));
    CHECK(cothread::sync_wait(lp, error_of(s.wait())) == std::errc::bad_file_descriptor);
}

int main() {
    RUN(test_raise_and_kill);
    RUN(test_kept);
    RUN(test_two_sets);
    RUN(test_deadline);
    RUN(test_root_stop);
    RUN(test_root_stop_other_thread);
    RUN(test_own_stop);
    RUN(test_busy);
    RUN(test_close_and_move);
    RUN(test_loop_destroyed);
    RUN(test_bad_input);
    return 0;
}
