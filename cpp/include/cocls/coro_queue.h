// Coro mode: each thread has a queue of coroutines ready to run, kept by the
// core (cot_resume_queue_*). A coroutine resumed while another one runs on the
// thread is queued, not nested; the queue drains as coroutines suspend or end.
#ifndef COCLS_CORO_QUEUE_H_INCLUDED
#define COCLS_CORO_QUEUE_H_INCLUDED

#include <coroutine>
#include <cstddef>

#include "detail/core.h"

namespace cocls {

class coro_queue {
public:
    /// Resumes `h` by the rules of the thread's mode. In normal mode the thread
    /// enters coro mode, resumes `h` here and now, then every coroutine queued
    /// meanwhile, in order, and returns to normal mode. In coro mode (called
    /// from a coroutine) `h` is queued and runs when the current one suspends.
    static void resume(std::coroutine_handle<> h) noexcept {
        if (!cot_resume_queue_enter()) {
            cot_resume_queue_push(h.address());
            return;
        }
        h.resume();
        drain();
    }

    /// Is the calling thread in coro mode (a cocls coroutine is running on it)?
    static bool is_active() noexcept { return cot_resume_queue_active(); }

    /// The coroutine to switch to when the current one suspends: the head of
    /// the queue, or std::noop_coroutine() (back to whoever resumed it).
    static std::coroutine_handle<> next() noexcept {
        void *n = cot_resume_queue_pop();
        return n ? std::coroutine_handle<>::from_address(n) : std::noop_coroutine();
    }

    /// Resumes `first`, then `rest` in order, by the rules of resume(): in
    /// normal mode they all run here, before anything they queue.
    static void resume(std::coroutine_handle<> first, const std::coroutine_handle<> *rest,
                       std::size_t n) noexcept {
        bool entered = cot_resume_queue_enter();
        if (!entered) cot_resume_queue_push(first.address());
        for (std::size_t i = 0; i < n; i++) cot_resume_queue_push(rest[i].address());
        if (entered) {
            first.resume();
            drain();
        }
    }

    /// Number of coroutines queued on this thread.
    static std::size_t size() noexcept { return cot_resume_queue_len(); }

private:
    // Runs what is queued until the queue is empty, then leaves coro mode.
    static void drain() noexcept {
        while (void *n = cot_resume_queue_pop()) std::coroutine_handle<>::from_address(n).resume();
        cot_resume_queue_leave();
    }
};

/// Awaiter of pause(): requeues the current coroutine at the tail of the
/// thread's queue and switches to the head (itself if nothing else waits).
class [[nodiscard]] pause_awaiter {
public:
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) const noexcept {
        return std::coroutine_handle<>::from_address(cot_resume_queue_yield(h.address()));
    }
    void await_resume() const noexcept {}
};

/// `co_await pause();` lets the other ready coroutines of this thread run
/// (cooperative multitasking); the caller resumes after them, on this thread.
inline pause_awaiter pause() noexcept { return {}; }

}  // namespace cocls

#endif
