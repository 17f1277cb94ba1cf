// work_guard: keeps a loop's run() going while nothing else would. run()
// returns when no task or post is left; a worker loop that gets its work
// from other threads (spawn, post) holds a guard meanwhile:
//
//   cothread::loop lp;
//   cothread::work_guard g(lp);
//   std::thread worker([&] { lp.run(); });   // stays up
//   lp.post(job);                            // from any thread
//   g.reset();                               // run() returns once the rest is done
//   worker.join();
//
// A guard counts as one unit of the loop's work, as a live task does: made,
// it adds one; reset() (or the destructor) takes it back. On the loop's
// thread that happens at once; elsewhere through the loop's inbox (the same
// path as post), so a reset from any thread ends a run() that waits for
// I/O. The node for that is allocated when the guard is made, so reset()
// never fails.
// Thread safety: one guard object is used by one thread at a time (as any
// object); different guards of one loop may be made and reset on different
// threads at once. Reset every guard before ~loop: ~loop waits for it, as
// it waits for a task.
#ifndef COTHREAD_WORK_GUARD_H_INCLUDED
#define COTHREAD_WORK_GUARD_H_INCLUDED

#include <utility>

#include "detail/loop_core.h"
#include "loop.h"

namespace cothread {

class work_guard {
public:
    /// Holds `lp`'s run() up until reset(). Any thread. Throws std::bad_alloc.
    explicit work_guard(loop &lp) : m_node(new node(lp)) { lp.add_work(); }
    work_guard(work_guard &&o) noexcept : m_node(std::exchange(o.m_node, nullptr)) {}
    /// Resets this guard, then takes `o`'s hold.
    work_guard &operator=(work_guard &&o) noexcept {
        if (this != &o) {
            reset();
            m_node = std::exchange(o.m_node, nullptr);
        }
        return *this;
    }
    ~work_guard() { reset(); }

    /// Lets run() return once the loop's other work is done. Any thread;
    /// a second reset does nothing.
    void reset() noexcept {
        node *n = std::exchange(m_node, nullptr);
        if (!n) return;
        if (n->lp->is_current()) node::release(n);
        else n->lp->push(n);
    }

    /// Does this guard still hold its loop?
    bool owns_work() const noexcept { return m_node != nullptr; }

private:
    // Runs on the loop thread: work_done() may stop the loop's run.
    struct node : detail::inbox_node {
        detail::loop_core *lp;
        explicit node(detail::loop_core &l) noexcept : lp(&l) { run = &release; }
        static void release(detail::inbox_node *self) noexcept {
            auto *n = static_cast<node *>(self);
            detail::loop_core *l = n->lp;
            delete n;
            l->work_done();
        }
    };
    node *m_node;
};

}  // namespace cothread

#endif
