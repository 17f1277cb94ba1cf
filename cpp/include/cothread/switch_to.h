// switch_to: `co_await switch_to(lp)` goes on running the task on loop `lp`
// (another loop of a loop_group, usually): its operations, sleeps and the
// tasks it awaits run there from then on, and its stop token still works.
// A spawned task moves whole (spawn, spawn_detached, invoke_on): the task
// that awaits it, if any, is told on its own loop as before. A child of
// when_all/when_any or a sync_wait root cannot move: std::system_error
// (operation_not_supported). Switching to the loop it is on does nothing.
#ifndef COTHREAD_SWITCH_TO_H_INCLUDED
#define COTHREAD_SWITCH_TO_H_INCLUDED

#include <cocls/coro_queue.h>

#include <coroutine>
#include <system_error>

#include "detail/strand.h"
#include "loop.h"

namespace cothread {

namespace detail {

/// Moves the awaiting task's strand to `target`: it leaves its loop's list
/// (and closes its loop task there) on the old loop's thread, joins the new
/// loop's list on that loop's thread, and resumes there. The work count
/// moves with it.
class switch_awaiter : inbox_node {
public:
    using cothread_awaitable = void;
    explicit switch_awaiter(loop &target) noexcept : m_target(&target) { run = &arrive; }

    bool await_ready() const noexcept { return false; }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) {
        m_strand = h.promise().get_strand();
        loop_core *from = m_strand->owner;
        if (from == m_target) return false;
        if (!m_strand->movable) throw std::system_error(std::make_error_code(std::errc::operation_not_supported));
        m_handle = h;
        m_strand->end();
        m_strand->owner = m_target;
        m_target->add_work();
        m_target->push(this);
        from->work_done();
        return true;
    }
    void await_resume() const noexcept {}

private:
    static void arrive(inbox_node *n) noexcept {
        auto *self = static_cast<switch_awaiter *>(n);
        self->m_strand->spent = 0;
        self->m_strand->attach();
        cocls::coro_queue::resume(self->m_handle);
    }

    loop *m_target;
    strand *m_strand = nullptr;
    std::coroutine_handle<> m_handle;
};

}  // namespace detail

/// `co_await switch_to(lp)`: the task goes on on `lp` (see above).
[[nodiscard]] inline detail::switch_awaiter switch_to(loop &lp) noexcept { return detail::switch_awaiter(lp); }

}  // namespace cothread

#endif
