// detail::strand: one running root (a spawned task, a sync_wait, a when_*
// child: detail/when.h). It holds the root's loop, its stop source (the
// token every operation of the root uses), the coroutine that waits on the strand's loop
// task, and that loop task (made on first use: only sleeps and yields use it,
// a budget yield included), and the count of operations of its turn.
// Everything here is used on the loop thread, except stop requests.
// A root's life: construct (with the caller's token, if any: it stops this
// one), set `done` (and `run`, to start it from another thread through the
// inbox), set the task promise's strand, start(h) on the loop thread; the
// task's final suspend calls done(strand), which calls end(), then frees the
// strand. loop.h's spawn_root and sync_wait.h's sync_root are the examples.
#ifndef COTHREAD_DETAIL_STRAND_H_INCLUDED
#define COTHREAD_DETAIL_STRAND_H_INCLUDED

#include <cothread.h>

#include <coroutine>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <utility>

#include <cocls/coro_queue.h>
#include "loop_core.h"

namespace cothread::detail {

struct strand : inbox_node {  // the node starts the root from another thread
    explicit strand(loop_core &lp, std::stop_token outer = {}) : owner(&lp) {
        if (outer.stop_possible()) link = std::make_unique<std::stop_callback<requester>>(std::move(outer), requester{&stop});
    }
    strand(const strand &) = delete;
    strand &operator=(const strand &) = delete;

    cot_loop *native() const noexcept { return owner->native(); }
    std::stop_token token() const noexcept { return stop.get_token(); }

    /// The loop task, made on first use; false if the core refused.
    bool ensure_task() noexcept {
        if (has_task) return true;
        has_task = cot_loop_task_init(native(), &on_task, this, &task) == 0;
        return has_task;
    }

    /// The root starts on the loop thread: registers, then resumes `root`.
    void start(std::coroutine_handle<> root) noexcept {
        attach();
        cocls::coro_queue::resume(root);
    }

    /// Registers the root as live (loop thread). start() does it; a when_*
    /// child does it, then runs its task inline.
    void attach() noexcept {
        next_live = owner->m_strands;
        if (next_live) next_live->prev_live = this;
        owner->m_strands = this;
        if (owner->m_closing) stop.request_stop();
    }

    /// The root ended (loop thread): unregisters and closes the loop task.
    /// The caller then frees the strand.
    void end() noexcept {
        if (prev_live) prev_live->next_live = next_live;
        else owner->m_strands = next_live;
        if (next_live) next_live->prev_live = prev_live;
        if (has_task) cot_close(native(), task, nullptr);
        has_task = false;
    }

    loop_core *owner;
    /// A spawned root, which switch_to may move to another loop (a when_*
    /// child or a sync_wait root stays where its parent waits).
    bool movable = false;
    std::stop_source stop;
    /// Called by the root's final suspend (loop thread), with the strand.
    void (*done)(strand *) noexcept = nullptr;

    // The loop task, and who waits on it.
    cot_handle task = 0;
    bool has_task = false;
    bool task_waiting = false;           // a sleep or yield parked `waiter`
    int wake = 0;                        // COT_WAKE_* of the last wake
    std::coroutine_handle<> waiter;

    // Fairness (COT_BUDGET, the core's count per turn): the operations of
    // op.h that ran since the root last suspended in one of them, a sleep
    // or a yield. (A suspension in a future or a relay leaves the count:
    // at worst one yield comes early.)
    std::uint32_t spent = 0;
    /// Counts an operation about to try; true past the budget: yield first.
    bool spend() noexcept { return ++spent > COT_BUDGET; }

    /// Goes behind the loop's other ready work and, in its turn, calls
    /// `then(this, arg)`, which resumes the root when it should: a budget
    /// yield before an operation's try (op.h). False if the loop task could
    /// not be made: then the operation goes on without yielding.
    bool yield_then(void (*then)(strand *, void *) noexcept, void *arg) noexcept {
        if (!ensure_task() || cot_loop_task_schedule(native(), task, COT_LATER) != 1) return false;
        task_waiting = true;
        m_then = then;
        m_then_arg = arg;
        return true;
    }

    strand *prev_live = nullptr, *next_live = nullptr;

private:
    struct requester {
        std::stop_source *src;
        void operator()() noexcept { src->request_stop(); }
    };
    std::unique_ptr<std::stop_callback<requester>> link;  // the caller's token -> stop
    void (*m_then)(strand *, void *) noexcept = nullptr;  // set by yield_then
    void *m_then_arg = nullptr;

    static void on_task(cot_loop *, cot_handle, int wake, int, void *data) {
        auto *s = static_cast<strand *>(data);
        if (!s->task_waiting) return;  // a late cancel of a sleep that ended
        s->task_waiting = false;
        s->wake = wake;
        s->spent = 0;  // the loop resumed it: a new turn
        if (auto then = std::exchange(s->m_then, nullptr)) then(s, s->m_then_arg);
        else cocls::coro_queue::resume(s->waiter);
    }
};

/// Moves a strand's loop task to the ready head, out of the queue it is in
/// (a sleep's postpone). A handle already closed is refused: nothing happens.
inline void reschedule_task(cot_loop *lp, cot_handle task) noexcept {
    cot_loop_task_unschedule(lp, task);
    cot_loop_task_schedule(lp, task, COT_NEXT);
}

/// Wakes a strand's loop task from any thread (a sleep's canceller). It
/// carries the task's handle, never a pointer: once the strand is gone, the
/// handle is refused and the node does nothing.
struct wake_node : inbox_node {
    cot_loop *lp;
    cot_handle task;
    wake_node(cot_loop *l, cot_handle t) noexcept : lp(l), task(t) { run = &go; }
    static void go(inbox_node *n) noexcept {
        auto *self = static_cast<wake_node *>(n);
        reschedule_task(self->lp, self->task);
        delete self;
    }
};

/// Schedules a strand's loop task now if on its loop thread, else through
/// the inbox. For a stop_callback: it may run on any thread.
inline void wake_task(loop_core &lp, cot_handle task) noexcept {
    if (lp.is_current()) {
        reschedule_task(lp.native(), task);
        return;
    }
    auto *n = new (std::nothrow) wake_node(lp.native(), task);
    if (n) lp.push(n);  // out of memory: the sleep ends at its time
}

}  // namespace cothread::detail

#endif
