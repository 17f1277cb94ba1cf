// sleep_for, sleep_until, yield: awaitables of a task that park its strand's
// loop task (cot_loop_task_delay / cot_loop_task_schedule). No frame and no
// allocation per sleep; a sleep is a plain postpone in the scheduler's heap of
// grouped deadlines, no timer handle. The task then wakes with
// COT_WAKE_RESUMED whether it slept or was stopped: a stop is told by the
// stop token, which is set before its canceller runs.
// A sleep counts from the co_await (one clock read per sleep). A negative
// duration throws std::errc::invalid_argument (unlike std::this_thread);
// a past time point ends at the next turn. When the task's stop token fires,
// the sleep ends at once with std::errc::operation_canceled.
#ifndef COTHREAD_TIMER_H_INCLUDED
#define COTHREAD_TIMER_H_INCLUDED

#include <cothread.h>

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <optional>
#include <stop_token>

#include "deadline.h"
#include "detail/strand.h"
#include "error.h"

namespace cothread {

namespace detail {

class sleep_awaiter {
public:
    using cothread_awaitable = void;
    // `absolute`: a time point, converted with a fresh loop time (a duration
    // needs none: the core reads the clock when it postpones).
    sleep_awaiter(deadline dl, bool absolute) noexcept : m_dl(dl), m_absolute(absolute) {}
    // Moved only before it is awaited (nothing registered yet).
    sleep_awaiter(sleep_awaiter &&o) noexcept : m_dl(o.m_dl), m_absolute(o.m_absolute) {}

    bool await_ready() const noexcept { return false; }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        m_strand = h.promise().get_strand();
        strand &s = *m_strand;
        std::uint64_t ns;
        if (m_absolute) cot_loop_update_time(s.native());  // from now, not from the turn's start
        if ((m_err = m_dl.timeout_ns(s.native(), ns)) != 0) return false;
        std::stop_token tok = s.token();
        if (tok.stop_requested()) {
            m_err = COT_ECANCELED;
            return false;
        }
        if (!s.ensure_task()) {
            m_err = COT_ENOMEM;
            return false;
        }
        if (ns > k_max_ns) ns = k_max_ns;  // never, in practice
        if (cot_loop_task_delay(s.native(), s.task, ns) != 1) {  // in a queue already: a bug
            m_err = COT_EINVAL;
            return false;
        }
        s.waiter = h;
        s.task_waiting = true;
        if (tok.stop_possible()) m_stop.emplace(tok, canceller{s.owner, s.task});
        return true;
    }
    void await_resume() {
        m_stop.reset();
        if (m_err) throw_error(m_err);
        // The only early wake is a stop's canceller (wake_task).
        if (m_strand->stop.stop_requested()) throw_error(COT_ECANCELED);
    }

private:
    static constexpr std::uint64_t k_max_ns = std::uint64_t(1) << 62;
    struct canceller {
        loop_core *lp;
        cot_handle task;
        void operator()() noexcept { wake_task(*lp, task); }
    };
    deadline m_dl;
    bool m_absolute;
    int m_err = 0;
    strand *m_strand = nullptr;
    std::optional<std::stop_callback<canceller>> m_stop;
};

class yield_awaiter {
public:
    using cothread_awaitable = void;
    bool await_ready() const noexcept { return false; }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        strand &s = *h.promise().get_strand();
        if (!s.ensure_task() || cot_loop_task_schedule(s.native(), s.task, COT_LATER) != 1) return false;
        s.waiter = h;
        s.task_waiting = true;
        return true;
    }
    void await_resume() const noexcept {}
};

}  // namespace detail

/// `co_await sleep_for(d)`: suspends the task for `d` (see above).
template <typename Rep, typename Period>
detail::sleep_awaiter sleep_for(std::chrono::duration<Rep, Period> d) noexcept {
    return detail::sleep_awaiter(deadline(d), false);
}

/// `co_await sleep_until(tp)`: suspends the task until `tp`.
template <typename Duration>
detail::sleep_awaiter sleep_until(std::chrono::time_point<std::chrono::steady_clock, Duration> tp) noexcept {
    return detail::sleep_awaiter(deadline(tp), true);
}

/// `co_await yield()`: lets the loop's other ready work run (one turn), then
/// goes on. Never throws.
inline detail::yield_awaiter yield() noexcept { return {}; }

}  // namespace cothread

#endif
