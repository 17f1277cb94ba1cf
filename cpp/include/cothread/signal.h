// signal_set: operating-system signals of a cothread::loop, awaited by its
// tasks (over the C ABI's cot_signal_*):
//
//   cothread::signal_set sigs(lp, {SIGINT, SIGTERM});
//   int signo = co_await sigs.wait(5s).stop_on(tok);
//
// The set watches its signals from construction to destruction: each is
// blocked in the calling thread and read by the loop (a signalfd), so make
// the set on the thread that runs the loop, before starting other threads
// (they inherit the mask; a thread that does not block a signal may get it
// instead). A signal that comes while no task waits is kept for the next
// wait; the same signal again before that wait counts once, as the kernel's
// own pending signals do. Waits take the oldest first.
// One task waits at a time; a second wait while one is pending fails with
// std::errc::device_or_resource_busy. A wait is an operation of
// detail/op.h: a deadline (timed_out), the root's stop token and its own
// (.stop_on(tok); operation_canceled), the std::error_code& form, the
// fairness budget. Destroying or closing the set ends a pending wait with
// operation_canceled at the loop's next turn; a signal that came but was
// not read yet then meets no watcher (its default action, unless blocked).
// Bad input: a signal the core refuses (outside 1..64, SIGKILL, SIGSTOP)
// or no signal at all throws std::errc::invalid_argument; a wait on a
// moved-from or closed set gives std::errc::bad_file_descriptor.
// Make, close and destroy a set on the loop's thread (or while no thread
// runs the loop), before the loop.
#ifndef COTHREAD_SIGNAL_H_INCLUDED
#define COTHREAD_SIGNAL_H_INCLUDED

#include <cothread.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

#include "deadline.h"
#include "detail/loop_core.h"
#include "detail/op.h"
#include "error.h"
#include "loop.h"

namespace cothread {

namespace detail {

class signal_wait_op;

// What the set's handles point to (their data): its signals' handles, a
// timer for the deadline of a wait (its key names the set in a cancel),
// the signals kept for the next wait, and the waiter. On the heap, so that
// the set may move while a task waits.
struct signal_state final : handle_target {
    explicit signal_state(loop &l) noexcept : owner(&l), lp(l.native()) { cancel = &on_cancel; }
    ~signal_state() {
        for (cot_handle h : handles) cot_close(lp, h, nullptr);
        if (timer) cot_close(lp, timer, nullptr);
    }
    signal_state(const signal_state &) = delete;
    signal_state &operator=(const signal_state &) = delete;

    void *data() noexcept { return static_cast<handle_target *>(this); }
    static signal_state *from(void *data) noexcept {
        return static_cast<signal_state *>(static_cast<handle_target *>(data));
    }

    inline void complete(int r) noexcept;

    loop_core *owner;
    cot_loop *lp;
    cot_handle timer = 0;
    std::vector<cot_handle> handles;
    std::vector<int> pending;  // reserved for every signal: no allocation in a callback
    signal_wait_op *waiter = nullptr;
    int timer_code = COT_ETIMEDOUT;  // what the timer's firing means: a deadline, or a cancel

    static void on_signal(cot_loop *, cot_handle, int signo, void *data) {
        signal_state *st = from(data);
        if (st->waiter) st->complete(signo);
        else if (std::find(st->pending.begin(), st->pending.end(), signo) == st->pending.end()) st->pending.push_back(signo);
    }
    static void on_timer(cot_loop *, cot_handle, void *data) {
        signal_state *st = from(data);
        if (st->waiter) st->complete(st->timer_code);
    }
    // A stop (loop thread): the wait ends from the timer, at the next
    // turn, not inside request_stop.
    static void on_cancel(handle_target *t) noexcept {
        auto *st = static_cast<signal_state *>(t);
        if (!st->waiter) return;
        st->timer_code = COT_ECANCELED;
        cot_timer_start(st->lp, st->timer, &on_timer, 0, 0);
    }
};

class signal_wait_op : public op<signal_wait_op, int> {
public:
    signal_wait_op(cot_loop *lp, cot_handle timer, deadline dl, std::error_code *ec) noexcept
        : op(lp, op_kind::handle, 0, dl, ec) {
        m_key = timer;
    }
    signal_wait_op(signal_wait_op &&) noexcept = default;  // before the await only (op.h)

    std::int64_t try_now() noexcept {
        void *data = nullptr;
        if (cot_handle_data(m_lp, m_key, &data) != 0 || !data) return COT_EBADF;  // the set was closed
        m_state = signal_state::from(data);
        if (m_state->waiter) return COT_EBUSY;
        if (m_state->pending.empty()) return COT_EAGAIN;
        int signo = m_state->pending.front();
        m_state->pending.erase(m_state->pending.begin());
        return signo;
    }
    int start(std::uint64_t ns) noexcept {
        if (ns != COT_FOREVER) {
            m_state->timer_code = COT_ETIMEDOUT;
            if (int e = cot_timer_start(m_lp, m_state->timer, &signal_state::on_timer, ns, 0)) return e;
        }
        m_state->waiter = this;
        return 0;
    }
    int done() noexcept { return static_cast<int>(m_res); }
    int failed() noexcept { return 0; }

    /// The set's end of the wait (loop thread): a signal, the deadline, a stop.
    void complete(int r) noexcept { finish(r); }

    /// The set was closed while this waited: ends it with COT_ECANCELED
    /// through the inbox (the loop's next turn; the awaiter outlives that,
    /// its task being suspended here).
    void orphan(loop_core &owner) noexcept {
        m_closed.self = this;
        owner.push(&m_closed);
    }

private:
    struct closed_node : inbox_node {
        signal_wait_op *self = nullptr;
        closed_node() noexcept { run = &go; }
        closed_node(closed_node &&) noexcept : closed_node() {}
        static void go(inbox_node *n) noexcept { static_cast<closed_node *>(n)->self->finish(COT_ECANCELED); }
    };
    signal_state *m_state = nullptr;  // set by try_now, for start
    closed_node m_closed;
};

inline void signal_state::complete(int r) noexcept {
    signal_wait_op *w = std::exchange(waiter, nullptr);
    cot_timer_stop(lp, timer);
    timer_code = COT_ETIMEDOUT;
    w->complete(r);
}

}  // namespace detail

class signal_set {
public:
    /// Watches `signals` on `lp` (see above). Throws
    /// std::errc::invalid_argument for a bad or empty list, std::bad_alloc.
    signal_set(loop &lp, std::initializer_list<int> signals)
        : signal_set(lp, std::span<const int>(signals.begin(), signals.size())) {}
    signal_set(loop &lp, std::span<const int> signals) {
        if (signals.empty()) throw_error(COT_EINVAL);
        auto st = std::make_unique<detail::signal_state>(lp);
        st->handles.reserve(signals.size());
        st->pending.reserve(signals.size());
        check(cot_timer_init(st->lp, st->data(), &st->timer));
        std::vector<int> seen;
        for (int signo : signals) {
            if (std::find(seen.begin(), seen.end(), signo) != seen.end()) continue;  // one handle per signal
            cot_handle h = 0;
            check(cot_signal_init(st->lp, st->data(), &h));
            st->handles.push_back(h);
            check(cot_signal_start(st->lp, h, &detail::signal_state::on_signal, signo));
            seen.push_back(signo);
        }
        m_state = st.release();
    }

    signal_set(signal_set &&o) noexcept : m_state(std::exchange(o.m_state, nullptr)) {}
    signal_set &operator=(signal_set &&o) noexcept {
        if (this != &o) {
            close();
            m_state = std::exchange(o.m_state, nullptr);
        }
        return *this;
    }
    ~signal_set() { close(); }

    /// `co_await sigs.wait(dl)`: the number of the next signal of the set.
    detail::signal_wait_op wait(deadline dl = deadline::never()) noexcept { return {native_loop(), key(), dl, nullptr}; }
    detail::signal_wait_op wait(std::error_code &ec) noexcept { return {native_loop(), key(), deadline::never(), &ec}; }
    detail::signal_wait_op wait(deadline dl, std::error_code &ec) noexcept { return {native_loop(), key(), dl, &ec}; }

    /// Stops watching now (the signals are unblocked again, unless they
    /// were blocked before); a pending wait ends with operation_canceled at
    /// the loop's next turn. Closing twice is fine.
    void close() noexcept {
        detail::signal_state *st = std::exchange(m_state, nullptr);
        if (!st) return;
        if (st->waiter) std::exchange(st->waiter, nullptr)->orphan(*st->owner);
        delete st;  // closes the handles: a late cancel's lookup is refused
    }

    explicit operator bool() const noexcept { return m_state != nullptr; }
    cot_loop *native_loop() const noexcept { return m_state ? m_state->lp : nullptr; }

private:
    static void check(int r) {
        if (r < 0) throw_error(r);
    }
    cot_handle key() const noexcept { return m_state ? m_state->timer : 0; }

    detail::signal_state *m_state = nullptr;
};

}  // namespace cothread

#endif
