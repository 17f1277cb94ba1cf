// thread_pool: threads of the core's pool (cot_pool) that run functions and
// coroutines. Each job runs in coro mode: the thread enters its resume queue,
// runs the job, runs what the job made ready (in order), and leaves.
//
// Stopping (stop() or the destructor) refuses new work and takes out what
// has not started; that is settled on the thread calling stop():
//   run(fn) / run(async)       the future resolves without a value: its
//                              value() throws await_canceled_exception;
//   run_detached(fn | async)   dropped: fn is destroyed uncalled, the
//                              coroutine's frame is destroyed unstarted;
//   co_await pool              the coroutine resumes on the stopping thread
//                              and the co_await throws await_canceled_exception;
//   resume(sp), pool(x),       the coroutines were ready (their value is
//   resolve(p, ...)            there): they resume on the stopping thread,
//                              by its mode; resolve() sets the promise there.
// After stop(), the same happens at once on the calling thread.
#ifndef COCLS_THREAD_POOL_H_INCLUDED
#define COCLS_THREAD_POOL_H_INCLUDED

#include <atomic>
#include <concepts>
#include <coroutine>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "async.h"
#include "coro_queue.h"
#include "detail/core.h"
#include "detail/policy_awaiter.h"
#include "detail/tsan.h"
#include "exceptions.h"
#include "future.h"
#include "resume.h"
#include "suspend_point.h"

// What COCLS's thread_pool.h also brings in (programs written for it may rely on it).
#include "function.h"
#include "generics.h"

// COCLS's thread_pool.h names these standard headers; programs written for it may rely on them.
#include <condition_variable>
#include <queue>

namespace cocls {

class thread_pool;
class scheduler;

namespace detail {

template <typename T>
struct is_async : std::false_type {};
template <typename T>
struct is_async<async<T>> : std::true_type {};
template <typename T>
struct is_suspend_point : std::false_type {};
template <typename T>
struct is_suspend_point<suspend_point<T>> : std::true_type {};

/// What run(fn) resolves its future with: fn's result, rvalue references
/// taken by value.
template <typename Fn>
using run_result_t = std::conditional_t<std::is_rvalue_reference_v<std::invoke_result_t<Fn>>,
                                        std::remove_cvref_t<std::invoke_result_t<Fn>>, std::invoke_result_t<Fn>>;

/// A job that must hear of the pool's stop while it runs (a scheduler's timer
/// loop blocks a pool thread: stop() would wait for it forever).
struct pool_stop_hook {
    pool_stop_hook *m_next = nullptr;
    pool_stop_hook *m_prev = nullptr;
    void (*m_fn)(pool_stop_hook *) noexcept = nullptr;
};

}  // namespace detail

/// Policy of `co_await pool(x)`: the coroutine resumes on a pool thread.
struct thread_pool_policy {
    thread_pool *m_pool;
    suspend_point<void> resume(std::coroutine_handle<> h) const noexcept;
};

/// The awaiter of `co_await pool`: moves the coroutine to a pool thread.
class [[nodiscard]] thread_pool_awaiter {
public:
    explicit thread_pool_awaiter(thread_pool &pool) noexcept : m_pool(&pool) {}

    bool await_ready() const noexcept { return false; }
    /// Queues the coroutine as a pool job and switches to the next coroutine
    /// of this thread (or returns to the resumer). A stopped pool refuses it:
    /// the coroutine goes on here and await_resume throws.
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept;
    /// Throws await_canceled_exception if the pool stopped instead of
    /// running the coroutine (it then runs on the stopping thread).
    void await_resume() const {
        if (m_canceled) throw await_canceled_exception();
    }

private:
    static void on_job(void *data, int status) noexcept {
        detail::tsan_acquire(data);
        auto *self = static_cast<thread_pool_awaiter *>(data);
        if (status != 0) self->m_canceled = true;
        coro_queue::resume(self->m_h);  // a pool thread: enter, run, drain, leave
    }

    thread_pool *m_pool;
    std::coroutine_handle<> m_h;
    bool m_canceled = false;
};

class thread_pool {
public:
    /// The awaiter of `co_await pool` (COCLS's name).
    using co_awaiter = thread_pool_awaiter;
    /// A job's type in COCLS's own queue (a move-only function); the jobs
    /// here are the core pool's, this only names the type.
    using q_item = function<void()>;
    /// The awaiter of `co_await pool(x)` (COCLS's name).
    template <typename Awt>
    using enqueue_awaiter = detail::policy_awaiter<Awt, thread_pool_policy>;

    /// A pool of `threads` threads (0: one per core), started lazily as jobs
    /// come. Throws std::bad_alloc if the core cannot make one.
    explicit thread_pool(unsigned int threads = 0) : m_pool(cot_pool_new(threads)) {
        if (!m_pool) throw std::bad_alloc();
    }
    thread_pool(const thread_pool &) = delete;
    thread_pool &operator=(const thread_pool &) = delete;
    /// Stops the pool (see stop()) and frees it.
    ~thread_pool() {
        stop();
        cot_pool_free(m_pool);
    }

    /// `co_await pool`: the coroutine continues on a pool thread. On a thread
    /// of this pool it is like pause(), except that the coroutine goes to the
    /// end of the pool's queue and may continue on another of its threads.
    thread_pool_awaiter operator co_await() noexcept { return thread_pool_awaiter(*this); }

    /// `co_await pool(x)`: awaits `x`; if it had to wait, the coroutine
    /// resumes on a pool thread instead of the thread that made `x` ready.
    /// No thread switch when `x` is ready.
    template <typename Awaitable>
    enqueue_awaiter<detail::awaiter_storage_t<Awaitable>> operator()(Awaitable &&x) {
        return {std::forward<Awaitable>(x), thread_pool_policy{this}};
    }

    /// Runs `fn()` on a pool thread; the future resolves with its result or
    /// exception. One heap allocation (the job).
    template <typename Fn>
        requires std::invocable<Fn &> && (!detail::is_async<std::remove_cvref_t<Fn>>::value) &&
                 (!detail::is_suspend_point<std::remove_cvref_t<Fn>>::value)
    future<detail::run_result_t<Fn &>> run(Fn &&fn) {
        using R = detail::run_result_t<Fn &>;
        return [&](promise<R> p) {
            struct job {
                std::decay_t<Fn> fn;
                promise<R> p;
            };
            submit_owned(new job{std::forward<Fn>(fn), std::move(p)}, [](job &j) noexcept {
                promise<R> p = std::move(j.p);
                try {
                    if constexpr (std::is_void_v<R>) {
                        j.fn();
                        p();
                    } else {
                        p(j.fn());
                    }
                } catch (...) {
                    p(std::current_exception());
                }
            });
        };
    }

    /// Starts coroutine `coro` on a pool thread; the future resolves with its
    /// result. One heap allocation (the job).
    template <typename T>
    future<T> run(async<T> &&coro) {
        return [&](promise<T> p) {
            struct job {
                async<T> coro;
                promise<T> p;
            };
            submit_owned(new job{std::move(coro), std::move(p)}, [](job &j) noexcept { j.coro.start(j.p); });
        };
    }
    template <typename T>
    future<T> run(async<T> &coro) {
        return run(std::move(coro));
    }

    /// Same as resume(sp) (COCLS's older spelling: `pool.run(p(42))`).
    template <typename T>
    T run(suspend_point<T> &&sp) {
        return resume(std::move(sp));
    }
    template <typename T>
    T run(suspend_point<T> &sp) {
        return resume(sp);
    }

    /// Runs `fn()` on a pool thread; its result and exceptions are ignored.
    /// A small trivially copyable `fn` (a lambda capturing references or
    /// numbers: at most COT_POOL_COPY_MAX bytes) travels as bytes in the
    /// core's queue, with no allocation; any other is moved to the heap.
    template <typename Fn>
        requires std::invocable<Fn &> && (!detail::is_async<std::remove_cvref_t<Fn>>::value)
    void run_detached(Fn &&fn) {
        using F = std::decay_t<Fn>;
        if constexpr (travels_as_bytes<F>) {
            F f(std::forward<Fn>(fn));
            cot_pool_submit_copy(m_pool, &copied_job<F>, &f, sizeof f);  // refused: dropped
        } else {
            struct job {
                F fn;
            };
            submit_owned(new job{std::forward<Fn>(fn)}, [](job &j) noexcept {
                try {
                    j.fn();
                } catch (...) {
                }
            });
        }
    }

    /// Starts coroutine `coro` on a pool thread, nobody waiting for it. No
    /// allocation.
    template <typename T>
    void run_detached(async<T> &&coro) {
        std::coroutine_handle<> h = coro.detach().take();
        if (!h) return;
        if (submit(m_pool, &start_job, h.address()) != 0) h.destroy();
    }
    template <typename T>
    void run_detached(async<T> &coro) {
        run_detached(std::move(coro));
    }

    /// Resumes the coroutines `sp` holds on pool threads (one job each, no
    /// allocation) instead of this one; returns the suspend point's value.
    /// `pool.resume(p(34))` sets the promise here and resumes its waiter on
    /// the pool.
    template <typename T>
    T resume(suspend_point<T> &sp) {
        while (std::coroutine_handle<> h = sp.take()) submit_resume(h);
        if constexpr (!std::is_void_v<T>) return sp.value();
    }
    template <typename T>
    T resume(suspend_point<T> &&sp) {
        return resume(sp);
    }

    /// Sets promise `p` (moved from) with a value built from `args` (copied)
    /// on a pool thread, so its waiter resumes there (COCLS documentation's
    /// spelling of `pool.resume(p(args...))`). One heap allocation.
    template <typename T, typename... Args>
    void resolve(promise<T> &p, Args &&...args) {
        resolve(std::move(p), std::forward<Args>(args)...);
    }
    template <typename T, typename... Args>
    void resolve(promise<T> &&p, Args &&...args) {
        struct job {
            promise<T> p;
            std::tuple<std::decay_t<Args>...> args;
        };
        // Cancelled or not, the value is set (on the stopping thread then).
        auto set = [](job &j) noexcept {
            promise<T> p = std::move(j.p);
            try {
                std::apply([&](auto &...a) { p(std::move(a)...); }, j.args);
            } catch (...) {
                p(std::current_exception());
            }
        };
        auto *j = new job{std::move(p), {std::forward<Args>(args)...}};
        if (submit(m_pool, &owned_job<job, decltype(set), true>, j) != 0) owned_job<job, decltype(set), true>(j, 0);
    }

    /// Do jobs wait for a free pool thread? (A snapshot.) Code running on
    /// the pool should then avoid blocking.
    bool any_enqueued() const noexcept { return cot_pool_any_enqueued(m_pool); }

    /// Was stop() called?
    bool is_stopped() const noexcept { return m_stopped.load(std::memory_order_acquire); }

    /// Is the calling thread one of this pool's?
    friend bool is_current(const thread_pool &pool) noexcept { return cot_pool_is_current(pool.m_pool); }

    /// Stops the pool: refuses new work, settles what has not started (see
    /// the top of this header) on this thread, waits for running jobs and
    /// joins the threads (all but this one, when called from a pool job).
    /// A scheduler running on the pool ends its timer loop first. Calling it
    /// again only waits for the threads again.
    void stop() noexcept {
        m_stopped.store(true, std::memory_order_release);
        {
            std::lock_guard lk(m_hooks_mx);
            for (auto *h = m_hooks; h; h = h->m_next) h->m_fn(h);
        }
        cot_pool_stop(m_pool);
    }

private:
    friend class thread_pool_awaiter;
    friend struct thread_pool_policy;
    friend class scheduler;

    // Jobs without allocation: the data is a coroutine's address.
    static void resume_job(void *data, int) noexcept {
        detail::tsan_acquire(data);
        coro_queue::resume(std::coroutine_handle<>::from_address(data));
    }
    static void start_job(void *data, int status) noexcept {
        detail::tsan_acquire(data);
        auto h = std::coroutine_handle<>::from_address(data);
        if (status == 0) coro_queue::resume(h);
        else h.destroy();
    }
    // A heap job: Run(job&) in coro mode, then the job is freed (before what
    // it made ready runs). Cancelled: freed uncalled, unless RunCancelled.
    template <typename Job, typename Run, bool RunCancelled = false>
    static void owned_job(void *data, int status) noexcept {
        detail::tsan_acquire(data);
        std::unique_ptr<Job> j(static_cast<Job *>(data));
        if (status != 0 && !RunCancelled) return;
        coro_queue::install_queue_and_call([&] {
            Run{}(*j);
            j.reset();
        });
    }
    // A callable that a byte copy may move and that needs no destructor.
    template <typename F>
    static constexpr bool travels_as_bytes = std::is_trivially_copyable_v<F> &&
                                             std::is_trivially_destructible_v<F> &&
                                             sizeof(F) <= COT_POOL_COPY_MAX && alignof(F) <= alignof(void *);
    // A job of run_detached whose callable is the bytes the core copied:
    // copied out (which makes it an object here), called in coro mode.
    // Cancelled: dropped (nothing to destroy).
    template <typename F>
    static void copied_job(void *data, int status) noexcept {
        if (status != 0) return;
        alignas(F) unsigned char bytes[sizeof(F)];
        std::memcpy(bytes, data, sizeof(F));
        F &fn = *std::launder(reinterpret_cast<F *>(bytes));
        coro_queue::install_queue_and_call([&] {
            try {
                fn();
            } catch (...) {
            }
        });
    }
    template <typename Job, typename Run>
    void submit_owned(Job *j, Run) {
        if (submit(m_pool, &owned_job<Job, Run>, j) != 0) delete j;
    }

    // cot_pool_submit: 0 or a refusal (stopped, no thread), `fn` then uncalled.
    static int submit(cot_pool *p, cot_pool_fn fn, void *data) noexcept {
        detail::tsan_release(data);  // the core's handoff, for TSan
        return cot_pool_submit(p, fn, data);
    }

    void submit_resume(std::coroutine_handle<> h) noexcept {
        if (submit(m_pool, &resume_job, h.address()) != 0) coro_queue::resume(h);
    }

    void add_hook(detail::pool_stop_hook *h) {
        std::lock_guard lk(m_hooks_mx);
        h->m_next = m_hooks;
        h->m_prev = nullptr;
        if (m_hooks) m_hooks->m_prev = h;
        m_hooks = h;
    }
    void remove_hook(detail::pool_stop_hook *h) {
        std::lock_guard lk(m_hooks_mx);
        if (h->m_prev) h->m_prev->m_next = h->m_next;
        else if (m_hooks == h) m_hooks = h->m_next;
        if (h->m_next) h->m_next->m_prev = h->m_prev;
        h->m_next = h->m_prev = nullptr;
    }

    cot_pool *m_pool;
    std::atomic<bool> m_stopped{false};
    std::mutex m_hooks_mx;
    detail::pool_stop_hook *m_hooks = nullptr;
};

inline std::coroutine_handle<> thread_pool_awaiter::await_suspend(std::coroutine_handle<> h) noexcept {
    m_h = h;
    if (thread_pool::submit(m_pool->m_pool, &on_job, this) != 0) {
        m_canceled = true;
        return h;
    }
    return coro_queue::next();  // the coroutine may already run on the pool: touch nothing
}

inline suspend_point<void> thread_pool_policy::resume(std::coroutine_handle<> h) const noexcept {
    m_pool->submit_resume(h);
    return {};
}

}  // namespace cocls

#endif
