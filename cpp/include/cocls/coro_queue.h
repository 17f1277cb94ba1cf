// Coro mode: each thread has a queue of coroutines ready to run, kept by the
// core (cot_resume_queue, stepped inline by detail/resume_queue.h). A coroutine resumed while another one runs on the
// thread is queued, not nested; the queue drains as coroutines suspend or end.
#ifndef COCLS_CORO_QUEUE_H_INCLUDED
#define COCLS_CORO_QUEUE_H_INCLUDED

#include <coroutine>
#include <cstddef>
#include <utility>

#include "detail/core.h"
#include "detail/resume_queue.h"
#include "common.h"

// COCLS's coro_queue.h names these standard headers; programs written for it may rely on them.
#include <cassert>
#include <deque>
#include <vector>

namespace cocls {

/// Calls a function when the block that holds it ends (however it ends): a
/// scope guard, `trailer t = [&] { cleanup(); };`. The function may throw
/// (the destructor is noexcept(false)), as in COCLS.
template <typename Fn>
class trailer {
public:
    trailer(Fn &&fn) : m_fn(std::forward<Fn>(fn)) {}
    ~trailer() noexcept(false) { m_fn(); }

protected:
    Fn m_fn;
};
template <typename Fn>
trailer(Fn) -> trailer<Fn>;

class coro_queue {
public:
    /// Resumes `h` by the rules of the thread's mode. In normal mode the thread
    /// enters coro mode, resumes `h` here and now, then every coroutine queued
    /// meanwhile, in order, and returns to normal mode. In coro mode (called
    /// from a coroutine) `h` is queued and runs when the current one suspends.
    static void resume(std::coroutine_handle<> h) noexcept {
        cot_resume_queue *q = here();
        if (!detail::queue_enter(q)) {
            detail::queue_push(q, h.address());
            return;
        }
        h.resume();
        drain();
    }

    /// Is the calling thread in coro mode (a cocls coroutine is running on it)?
    static bool is_active() noexcept { return detail::queue_active(here()); }

    /// The coroutine to switch to when the current one suspends: the head of
    /// the queue, or std::noop_coroutine() (back to whoever resumed it).
    static std::coroutine_handle<> next() noexcept {
        void *n = detail::queue_pop(here());
        return n ? std::coroutine_handle<>::from_address(n) : std::noop_coroutine();
    }

    /// Resumes `first`, then `rest` in order, by the rules of resume(): in
    /// normal mode they all run here, before anything they queue.
    static void resume(std::coroutine_handle<> first, const std::coroutine_handle<> *rest,
                       std::size_t n) noexcept {
        cot_resume_queue *q = here();
        bool entered = detail::queue_enter(q);
        if (!entered) detail::queue_push(q, first.address());
        for (std::size_t i = 0; i < n; i++) detail::queue_push(q, rest[i].address());
        if (entered) {
            first.resume();
            drain();
        }
    }

    /// This thread's queue in the core, looked up once per thread (the core's
    /// thread-local lookup costs as much as a queue operation).
    static cot_resume_queue *here() noexcept {
        constinit static thread_local cot_resume_queue *t_queue = nullptr;
        if (!t_queue) [[unlikely]]
            t_queue = cot_resume_queue_current();
        return t_queue;
    }

    /// Number of coroutines queued on this thread.
    static std::size_t size() noexcept { return detail::queue_len(here()); }

    /// Calls `fn(args...)` in coro mode and returns its result. In normal
    /// mode the thread enters coro mode for the call; the coroutines resumed
    /// meanwhile are queued and run, in order, after `fn` returns (or throws)
    /// and before this does; then the thread is back in normal mode. Already
    /// in coro mode, `fn` is just called (COCLS would nest a second queue; the
    /// thread has one, so what `fn` resumes runs when the current coroutine
    /// suspends).
    template <typename Fn, typename... Args>
    static decltype(auto) install_queue_and_call(Fn &&fn, Args &&...args) {
        struct leave_guard {
            bool entered;
            ~leave_guard() {
                if (entered) drain();
            }
        } guard{detail::queue_enter(here())};
        return std::forward<Fn>(fn)(std::forward<Args>(args)...);
    }

    /// Resumes `h` in coro mode and returns once it and everything it queued
    /// ran (in normal mode). Already in coro mode, `h` is queued instead
    /// (COCLS would nest a second queue; see install_queue_and_call).
    static void install_queue_and_resume(std::coroutine_handle<> h) noexcept { resume(h); }

    /// Queues `h` (a coroutine being suspended) at the tail and returns the
    /// head to switch to, `h` itself if nothing else waits. In normal mode
    /// returns `h` (nothing is queued).
    static std::coroutine_handle<> swap_coroutine(std::coroutine_handle<> h) noexcept {
        if (!is_active()) return h;
        return std::coroutine_handle<>::from_address(detail::queue_yield(here(), h.address()));
    }

    /// The coroutine to switch to when the current one suspends: next().
    static std::coroutine_handle<> resume_handle_next() noexcept { return next(); }
    /// The handle to resume `h` by: `h` itself.
    static constexpr std::coroutine_handle<> resume_handle(std::coroutine_handle<> h) noexcept { return h; }

    /// May the calling thread block without delaying coroutines? (normal mode,
    /// or coro mode with nothing queued)
    static bool can_block() noexcept { return !is_active() || size() == 0; }

    /// COCLS's flag that a coroutine's first resumption goes through the
    /// queue (initial_awaiter): always true.
    static constexpr bool initialize_policy() noexcept { return true; }

    /// An initial suspend for a promise type: the coroutine runs at once in
    /// coro mode; in normal mode it suspends and is resumed in coro mode (the
    /// thread enters it, runs the coroutine and what it queued, and leaves).
    struct initial_awaiter {
        initial_awaiter(coro_queue &) noexcept {}
        static bool await_ready() noexcept { return is_active(); }
        static void await_suspend(std::coroutine_handle<> h) noexcept { install_queue_and_resume(h); }
        static constexpr void await_resume() noexcept {}
    };

    /// Calls `fn()` in coro mode and returns, in a suspend point, the
    /// coroutines it made ready on this thread (those it resumed, which coro
    /// mode queued), with `fn`'s result as the suspend point's value
    /// (suspend_point<void> when `fn` returns nothing). They are taken out of
    /// the thread's queue (what was queued before stays, in order), so they run
    /// where the suspend point goes: `co_await` it to switch to them now,
    /// discard it to queue them again, or move it (to a pool...). Defined in
    /// suspend_point.h.
    template <typename Fn>
    static auto create_suspend_point(Fn &&fn);

private:
    // Runs what is queued until the queue is empty, then leaves coro mode.
    static void drain() noexcept {
        cot_resume_queue *q = here();
        while (void *n = detail::queue_pop(q)) std::coroutine_handle<>::from_address(n).resume();
        detail::queue_leave(q);
    }
};

/// Awaiter of pause(): requeues the current coroutine at the tail of the
/// thread's queue and switches to the head (itself if nothing else waits).
class [[nodiscard]] pause_awaiter {
public:
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) const noexcept {
        return std::coroutine_handle<>::from_address(detail::queue_yield(coro_queue::here(), h.address()));
    }
    void await_resume() const noexcept {}
};

/// `co_await pause();` lets the other ready coroutines of this thread run
/// (cooperative multitasking); the caller resumes after them, on this thread.
inline pause_awaiter pause() noexcept { return {}; }

}  // namespace cocls

#endif
