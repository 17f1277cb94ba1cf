// scheduler: time. sleep_for / sleep_until give a future<void> resolved at a
// deadline; cancel(ident) resolves a sleep early with an exception. The
// deadlines, their queue and the cancellation by identifier are the core's
// (cot_timers, CLOCK_MONOTONIC = std::chrono::steady_clock); the scheduler
// adds a timer loop, which takes due entries out and sets their promises.
//
// The loop runs on one thread at a time:
//   scheduler(pool)     as a job of a thread_pool, for the scheduler's life
//                       (it blocks one pool thread); woken coroutines resume
//                       on the pool's other threads;
//   start_thread()      on a new thread of its own (scheduler(std::thread&):
//                       on a new thread stored in the given std::thread, which
//                       the caller joins after destroying the scheduler);
//                       woken coroutines resume on that thread;
//   start(awaitable)    on the calling thread, until the awaitable is ready
//                       (single-thread mode); woken coroutines resume there.
#ifndef COCLS_SCHEDULER_H_INCLUDED
#define COCLS_SCHEDULER_H_INCLUDED

#include <atomic>
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <stop_token>
#include <thread>
#include <type_traits>
#include <utility>

#include "async.h"
#include "coro_queue.h"
#include "detail/core.h"
#include "detail/policy_awaiter.h"
#include "detail/tsan.h"
#include "exceptions.h"
#include "future.h"
#include "generator.h"
#include "suspend_point.h"
#include "thread_pool.h"

// What COCLS's scheduler.h also brings in (programs written for it may rely on it).
#include "callback_awaiter.h"

// COCLS's scheduler.h names these standard headers; programs written for it may rely on them.
#include <condition_variable>
#include <variant>

namespace cocls {

class scheduler {
public:
    /// Identifies sleeps for cancel(): any address unique to the sleeper
    /// (e.g. of a variable in its frame). nullptr: not cancellable.
    using ident = const void *;
    /// What schedule() takes.
    using promise = ::cocls::promise<void>;

    /// A scheduler without a loop: drive it with start(awaitable) or
    /// start_thread(). Throws std::bad_alloc if the core cannot make one.
    scheduler() : m_timers(cot_timers_new()) {
        if (!m_timers) throw std::bad_alloc();
    }
    /// A scheduler whose loop runs as a job of `pool` until the scheduler is
    /// destroyed or the pool stopped; it blocks one pool thread. Woken
    /// coroutines resume on the pool (on the loop's thread if the pool has
    /// only that one).
    explicit scheduler(thread_pool &pool) : scheduler() { start_in(pool); }
    /// A scheduler whose loop runs on a new thread, stored in `thr` (join it
    /// after destroying the scheduler).
    explicit scheduler(std::thread &thr) : scheduler() { start_in(thr); }

    scheduler(const scheduler &) = delete;
    scheduler &operator=(const scheduler &) = delete;

    /// Ends the loop (waits for it if it runs on another thread) and drops
    /// the sleeps still pending: their futures resolve without a value
    /// (await_canceled_exception), their waiters resume on this thread.
    /// Must not run while start() runs.
    ~scheduler() {
        if (m_pool) m_pool->remove_hook(&m_hook);
        if (m_bg_done.initialized()) {
            signal(m_bg_stop);
            m_bg_done.sync();
        }
        while (m_inflight.load(std::memory_order_acquire) != 0) std::this_thread::yield();
        drop_all();
        [[maybe_unused]] int r = cot_timers_free(m_timers);
        assert(r == 0);
    }

    /// A future resolved at `tp` (any clock; steady_clock is the core's own),
    /// on the loop's thread; or with an exception by cancel(`id`). One heap
    /// allocation (the sleep). Safe from any thread.
    template <typename Clock, typename Dur>
    future<void> sleep_until(std::chrono::time_point<Clock, Dur> tp, ident id = nullptr) {
        return [&](promise p) { schedule_ns(to_ns(tp), id, std::move(p)); };
    }
    /// A future resolved `dur` from now (counted from this call, not from the
    /// co_await); see sleep_until.
    template <typename Rep, typename Period>
    future<void> sleep_for(std::chrono::duration<Rep, Period> dur, ident id = nullptr) {
        return [&](promise p) { schedule_ns(after_ns(dur), id, std::move(p)); };
    }

    /// Sets `p` at `tp` (COCLS's lower-level call under sleep_until).
    template <typename Clock, typename Dur>
    void schedule(ident id, promise p, std::chrono::time_point<Clock, Dur> tp) {
        schedule_ns(to_ns(tp), id, std::move(p));
    }

    /// Cancels the sleep of `id` due first: its future resolves with `e`
    /// (await_canceled_exception by default). The result is true if one was
    /// found; the waiter resumes when the suspend point is discarded (here,
    /// by this thread's mode) or co_awaited, or where it is moved to (e.g.
    /// `pool.resume(sch.cancel(id))`). Safe from any thread.
    suspend_point<bool> cancel(ident id) { return cancel(id, std::make_exception_ptr(await_canceled_exception())); }
    suspend_point<bool> cancel(ident id, std::exception_ptr e) {
        promise p = remove(id);
        if (!p) return false;
        return p(std::move(e));
    }

    /// Takes out the sleep of `id` due first and returns its promise (empty
    /// if none), unset.
    promise remove(ident id) {
        if (!id) return {};
        void *d = cot_timers_cancel(m_timers, id);
        if (!d) return {};
        return take(d);
    }

    /// Runs the loop on this thread until `awt` (any awaitable: a future,
    /// async, ...; an lvalue is awaited in place) is ready, then returns its
    /// result (or throws its exception). Sleeps left pending stay for the
    /// next start(). If the loop already runs on another thread (pool,
    /// start_thread), this just blocks until `awt` is ready. Called from a
    /// coroutine that the loop woke, it runs a nested loop. Do not start()
    /// the same scheduler from two threads at once.
    template <typename Awt>
    auto start(Awt &&awt) {
        using R = std::decay_t<detail::await_result_t<Awt>>;
        start_state<R> st;
        start_helper<Awt, R>(std::forward<Awt>(awt), st, *this).detach();  // queued in coro mode
        if (m_bg_running.load(std::memory_order_acquire) && !loop_runs_here()) {
            const auto *w = reinterpret_cast<const std::uint32_t *>(&st.done);
            while (st.done.load(std::memory_order_acquire) == 0) cot_park(w, 0, COT_FOREVER);
        } else {
            run_loop(st.done);
        }
        if (st.error) std::rethrow_exception(st.error);
        if constexpr (!std::is_void_v<R>) return std::move(*st.value);
    }

    /// Starts the loop as a job of `pool` (as scheduler(pool); COCLS's
    /// spelling). Once per scheduler.
    void start(thread_pool &pool) { start_in(pool); }
    /// Starts the loop on a new thread stored in `thr` (as scheduler(thr)).
    void start(std::thread &thr) { start_in(thr); }

    /// Starts the loop on a new detached thread (once; not with a pool).
    void start_thread() {
        std::thread thr;
        start_in(thr);
        thr.detach();
    }

    /// A generator of ticks every `dur`: each call (`co_await gen()`,
    /// `gen().wait()`, `co_await gen.next()`) sleeps until the next tick and
    /// gives its number (0, 1, ...). Ticks are counted from the previous
    /// one, however long the caller took between calls, unless it took more
    /// than a whole interval past the tick: then the next one is `dur` from
    /// now. `token` ends it: a pending tick then resolves with no value (the
    /// generator finishes). Destroy it only between calls.
    template <typename Rep, typename Period>
    generator<std::size_t> interval(std::chrono::duration<Rep, Period> dur, std::stop_token token = {}) {
        char tag = 0;  // the identifier of this generator's sleeps: an address in its frame
        std::stop_callback on_stop(token, [this, &tag] { cancel(&tag); });
        const std::uint64_t step = to_ns_count(dur);
        std::uint64_t deadline = cot_monotonic_ns() + step;
        for (std::size_t tick = 0; !token.stop_requested(); ++tick) {
            future<void> f;
            f << [&] { return sleep_until_ns(deadline, &tag); };
            if (token.stop_requested()) cancel(&tag);  // stopped before the sleep was there to cancel
            try {
                co_await f;
            } catch (const await_canceled_exception &) {
                co_return;
            }
            co_yield tick;
            std::uint64_t now = cot_monotonic_ns();
            deadline = now > deadline && now - deadline > step ? now + step : deadline + step;
        }
    }

private:
    // A sleep: its promise, kept on a list too, so the destructor can find
    // the core's entries (it cancels them by identifier).
    struct timer_node {
        promise p;
        const void *key;  // the core's identifier: the user's, or &m_anonymous
        timer_node *prev = nullptr;
        timer_node *next = nullptr;
    };

    template <typename R>
    struct start_state {
        std::atomic<std::uint32_t> done{0};
        std::optional<R> value;
        std::exception_ptr error;
    };
    template <typename R>
        requires std::is_void_v<R>
    struct start_state<R> {
        std::atomic<std::uint32_t> done{0};
        std::exception_ptr error;
    };

    struct stop_hook : detail::pool_stop_hook {
        scheduler *m_owner = nullptr;
    };

    // The loops running on this thread (nested start() calls), innermost first.
    struct loop_frame {
        const scheduler *m_owner;
        loop_frame *m_outer;
    };
    static loop_frame *&loops_here() noexcept {
        thread_local loop_frame *top = nullptr;
        return top;
    }
    bool loop_runs_here() const noexcept {
        for (loop_frame *f = loops_here(); f; f = f->m_outer)
            if (f->m_owner == this) return true;
        return false;
    }

    // Awaits `awt` (started by detach(): at once in normal mode) and tells
    // the loop when it is done.
    template <typename Awt, typename R>
    static async<void> start_helper(Awt &&awt, start_state<R> &st, scheduler &s) {
        try {
            if constexpr (std::is_void_v<R>) co_await std::forward<Awt>(awt);
            else st.value.emplace(co_await std::forward<Awt>(awt));
        } catch (...) {
            st.error = std::current_exception();
        }
        s.signal(st.done);  // `st` may be gone after this
    }

    // Raises `flag` and wakes the loop (any thread). The destructor waits
    // for m_inflight: the waker may still touch the timers after the flag.
    void signal(std::atomic<std::uint32_t> &flag) noexcept {
        m_inflight.fetch_add(1, std::memory_order_acq_rel);
        const auto *w = reinterpret_cast<const std::uint32_t *>(&flag);
        flag.store(1, std::memory_order_release);
        cot_timers_interrupt(m_timers);
        cot_unpark_all(w);  // a start() blocked while another thread runs the loop
        m_inflight.fetch_sub(1, std::memory_order_release);
    }

    // Serves the timers on this thread until `stop` is raised. In coro mode
    // (a nested start()) it first runs what is queued on this thread.
    void run_loop(const std::atomic<std::uint32_t> &stop) {
        loop_frame frame{this, loops_here()};
        loops_here() = &frame;
        struct restore {
            loop_frame &f;
            ~restore() { loops_here() = f.m_outer; }
        } r{frame};
        for (;;) {
            while (coro_queue::size() != 0) coro_queue::next().resume();
            if (stop.load(std::memory_order_acquire) != 0) break;
            if (void *d = cot_timers_wait(m_timers, UINT64_MAX)) fire(d);
        }
    }

    // A sleep fell due: its waiter resumes by this thread's mode, or on the
    // pool the loop runs on.
    void fire(void *d) noexcept {
        promise p = take(d);
        if (m_fire_on_pool) m_pool->resume(p());
        else p();
    }

    template <typename Clock, typename Dur>
    static std::uint64_t to_ns(std::chrono::time_point<Clock, Dur> tp) noexcept {
#ifdef __linux__
        if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
            auto ns = std::chrono::ceil<std::chrono::nanoseconds>(tp.time_since_epoch()).count();
            return ns < 0 ? 0 : static_cast<std::uint64_t>(ns);
        }
#endif
        auto left = std::chrono::ceil<std::chrono::nanoseconds>(tp - Clock::now()).count();
        std::uint64_t now = cot_monotonic_ns();
        if (left <= 0) return now;
        return add_ns(now, static_cast<std::uint64_t>(left));
    }
    template <typename Rep, typename Period>
    static std::uint64_t to_ns_count(std::chrono::duration<Rep, Period> dur) noexcept {
        auto ns = std::chrono::ceil<std::chrono::nanoseconds>(dur).count();
        return ns < 0 ? 0 : static_cast<std::uint64_t>(ns);
    }
    template <typename Rep, typename Period>
    static std::uint64_t after_ns(std::chrono::duration<Rep, Period> dur) noexcept {
        return add_ns(cot_monotonic_ns(), to_ns_count(dur));
    }
    static std::uint64_t add_ns(std::uint64_t a, std::uint64_t b) noexcept {
        return b >= UINT64_MAX - 1 - a ? UINT64_MAX - 1 : a + b;
    }

    future<void> sleep_until_ns(std::uint64_t ns, ident id) {
        return [&](promise p) { schedule_ns(ns, id, std::move(p)); };
    }

    void schedule_ns(std::uint64_t deadline_ns, ident id, promise p) {
        auto *n = new timer_node{std::move(p), id ? id : &m_anonymous};
        {
            std::lock_guard lk(m_nodes_mx);
            n->next = m_nodes;
            if (m_nodes) m_nodes->prev = n;
            m_nodes = n;
        }
        detail::tsan_release(n);
        cot_timers_add(m_timers, deadline_ns, n->key, n);  // cannot fail: both are non-null
    }

    // The core gave entry `d` back (due or cancelled): unlist it, free it and
    // return its promise.
    promise take(void *d) noexcept {
        detail::tsan_acquire(d);
        auto *n = static_cast<timer_node *>(d);
        {
            std::lock_guard lk(m_nodes_mx);
            if (n->prev) n->prev->next = n->next;
            else m_nodes = n->next;
            if (n->next) n->next->prev = n->prev;
        }
        promise p = std::move(n->p);
        delete n;
        return p;
    }

    void drop_all() noexcept {
        for (;;) {
            const void *key;
            {
                std::lock_guard lk(m_nodes_mx);
                if (!m_nodes) return;
                key = m_nodes->key;
            }
            void *d = cot_timers_cancel(m_timers, key);
            assert(d && "a listed sleep is in the core");
            if (!d) return;
            take(d);  // the promise dies unset: the waiter gets await_canceled_exception
        }
    }

    void start_in(thread_pool &pool) {
        assert(!m_bg_done.initialized() && "the scheduler's loop is already started");
        m_pool = &pool;
        m_fire_on_pool = cot_pool_size(pool.m_pool) > 1;
        m_hook.m_owner = this;
        m_hook.m_fn = [](detail::pool_stop_hook *h) noexcept {
            scheduler *s = static_cast<stop_hook *>(h)->m_owner;
            s->signal(s->m_bg_stop);
        };
        pool.add_hook(&m_hook);
        m_bg_promise = m_bg_done.get_promise();
        m_bg_running.store(true, std::memory_order_release);
        if (thread_pool::submit(pool.m_pool, &pool_loop, this) != 0) pool_loop(this, COT_ECANCELED);
    }
    void start_in(std::thread &thr) {
        assert(!m_bg_done.initialized() && "the scheduler's loop is already started");
        m_bg_promise = m_bg_done.get_promise();
        m_bg_running.store(true, std::memory_order_release);
        detail::tsan_release(this);
        thr = std::thread([this] { pool_loop(this, 0); });
    }
    // The background loop (a pool job or a thread of its own). Cancelled (the
    // pool stopped first): just says it ended.
    static void pool_loop(void *data, int status) noexcept {
        detail::tsan_acquire(data);
        auto *s = static_cast<scheduler *>(data);
        if (status == 0) s->run_loop(s->m_bg_stop);
        s->m_bg_running.store(false, std::memory_order_release);
        promise done = std::move(s->m_bg_promise);
        done();  // the destructor may go on now: `s` is not touched again
    }

    cot_timers *m_timers;
    thread_pool *m_pool = nullptr;
    bool m_fire_on_pool = false;
    stop_hook m_hook;
    std::atomic<std::uint32_t> m_bg_stop{0};
    std::atomic<bool> m_bg_running{false};
    future<void> m_bg_done;
    promise m_bg_promise;
    std::atomic<unsigned> m_inflight{0};
    std::mutex m_nodes_mx;
    timer_node *m_nodes = nullptr;
    char m_anonymous = 0;  // its address: the core's identifier of sleeps without one
};

}  // namespace cocls

#endif
