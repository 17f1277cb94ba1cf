// sync_wait(lp, t): runs task `t` on loop `lp`, running the loop on the
// calling thread until `t` ends, and returns its result (or rethrows). Other
// tasks of the loop run meanwhile. Throws
// std::errc::resource_deadlock_would_occur if the loop already runs on this
// thread (inside one of its tasks: co_await the task instead).
#ifndef COTHREAD_SYNC_WAIT_H_INCLUDED
#define COTHREAD_SYNC_WAIT_H_INCLUDED

#include <cothread.h>

#include <system_error>
#include <utility>

#include "detail/strand.h"
#include "loop.h"
#include "task.h"

namespace cothread {

namespace detail {

// The root of a sync_wait: the frame stays the caller's task's.
template <typename T>
struct sync_root : strand {
    bool finished = false;
    explicit sync_root(loop_core &l) : strand(l) {
        done = &finish;
        run = &begin;
    }
    std::coroutine_handle<> h;
    static void begin(inbox_node *n) noexcept {
        auto *self = static_cast<sync_root *>(n);
        self->start(self->h);
    }
    static void finish(strand *s) noexcept {
        auto *self = static_cast<sync_root *>(s);
        self->finished = true;
        self->end();
        self->owner->work_done();
        cot_loop_stop(self->native());
    }
};

}  // namespace detail

template <typename T>
T sync_wait(loop &lp, task<T> t) {
    if (lp.is_current()) throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur));
    if (!t) throw std::system_error(std::make_error_code(std::errc::invalid_argument));
    detail::sync_root<T> root(lp);
    root.h = t.handle();
    t.handle().promise().m_strand = &root;
    lp.add_work();
    lp.run_until([&] { return root.finished; }, &root);
    return t.handle().promise().result();
}

}  // namespace cothread

#endif
