// loop: a cot_loop (owned, or borrowed from a host) that runs tasks.
// spawn / spawn_detached start tasks and post runs functions on the loop's
// thread; all three are safe from any thread. run() runs the loop on the
// calling thread until every task and post has ended and no work_guard
// (work_guard.h) holds it (or stop()); run_once() runs one iteration.
// ~loop stops the tasks still alive (their stop tokens fire), runs the loop
// until they have ended, then frees it: no frame is destroyed while one of
// its operations is pending. A task that ignores its stop keeps ~loop waiting.
//
// For the awaitables of other headers: a loop is a detail::loop_core (the
// cot_loop, is_current(), the inbox's push()), which is all a strand holds.
#ifndef COTHREAD_LOOP_H_INCLUDED
#define COTHREAD_LOOP_H_INCLUDED

#include <cothread.h>
#include <cocls/future.h>

#include <new>
#include <stop_token>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include "detail/loop_core.h"
#include "detail/strand.h"
#include "task.h"

namespace cothread {

class loop_group;

class loop : public detail::loop_core {
public:
    /// A new cot_loop of its own; throws std::bad_alloc if the system refuses.
    loop() : loop_core(cot_loop_new(), true) {}
    /// A host's loop: the host runs it (or run() does); ~loop leaves it open.
    explicit loop(cot_loop *borrowed) : loop_core(borrowed, false) {}

    ~loop() {
        enter here(*this);
        m_closing = true;
        drain();  // start what was spawned, run what was posted
        for (detail::strand *s = m_strands; s; s = s->next_live) s->stop.request_stop();
        while (m_work.load(std::memory_order_acquire) > 0) {
            cot_loop_run(m_loop, COT_RUN_ONCE);
            drain();
        }
        release_native();
        while (m_senders.load(std::memory_order_acquire) > 0) std::this_thread::yield();
        drain();  // late cancels: their handles are refused now
        if (m_owned) {
            // Close callbacks still due (of handles closed through native()),
            // and requests still on the pool: a cancelled name lookup ends
            // at once for its task but finishes on a pool thread. Idle
            // handles do not keep this run going; a handle left active
            // through native() (a started timer) would. Again while alive:
            // a cot_loop_stop left from the last run ends a run early.
            while (cot_loop_run(m_loop, COT_RUN_DEFAULT) > 0) {
            }
            cot_loop_close(m_loop);  // COT_EBUSY if handles are left open: the loop leaks
        }
    }

    /// Runs the loop on this thread until every spawned task and posted
    /// function has ended and no work_guard holds it, or stop(). Throws
    /// std::errc::resource_deadlock_would_occur if it already runs here.
    void run() {
        if (is_current()) throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur));
        enter here(*this);
        m_stopped = false;
        while (!m_stopped && m_work.load(std::memory_order_acquire) > 0) {
            int r = cot_loop_run(m_loop, COT_RUN_DEFAULT);
            if (r < 0) throw std::system_error(-r, std::generic_category());
        }
    }

    /// Runs one iteration of the loop on this thread (waiting for I/O or a
    /// timer if nothing is ready), unless no task, post or guard is left. Returns
    /// whether some remain. Throws as run() does.
    bool run_once() {
        if (is_current()) throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur));
        if (m_work.load(std::memory_order_acquire) == 0) return false;
        enter here(*this);
        int r = cot_loop_run(m_loop, COT_RUN_ONCE);
        if (r < 0) throw std::system_error(-r, std::generic_category());
        return m_work.load(std::memory_order_acquire) > 0;
    }

    /// Makes run() return after the current iteration. Any thread.
    void stop() {
        post([this] {
            m_stopped = true;
            cot_loop_stop(m_loop);
        });
    }

    /// Runs `fn()` on the loop's thread (from run(), sync_wait or ~loop).
    /// Any thread. `fn` must not throw (std::terminate). Allocates one node.
    template <typename F>
    void post(F &&fn) {
        using node_t = post_node<std::decay_t<F>>;
        auto *n = new node_t(*this, std::forward<F>(fn));
        add_work();
        push(n);
    }

    /// Starts `t` on this loop (at once if called on the loop's thread, else
    /// at its next turn); the future resolves with its result or exception,
    /// on the loop thread. Any thread. The task's stop token fires only when
    /// ~loop ends it.
    template <typename T>
    cocls::future<T> spawn(task<T> t) {
        return cocls::future<T>([&](cocls::promise<T> p) { launch(new spawn_root<T>(*this, std::move(t), std::move(p))); });
    }

    /// spawn(t), with `tok` (the caller's) stopping it as well.
    template <typename T>
    cocls::future<T> spawn(task<T> t, std::stop_token tok) {
        return cocls::future<T>([&](cocls::promise<T> p) {
            launch(new spawn_root<T>(*this, std::move(t), std::move(p), std::move(tok)));
        });
    }

    /// A loop_group's shutdown, on the loop's thread: asks every task to
    /// stop (their stop tokens fire), and every task started from now on,
    /// at once; once no task or post is left, lets the native loop end.
    void request_stop_all() noexcept {
        m_closing = true;
        for (detail::strand *s = m_strands; s; s = s->next_live) s->stop.request_stop();
        m_release_when_idle = true;
        if (m_work.load(std::memory_order_acquire) == 0) release_native();
    }

    /// Starts `t` with nobody waiting for it; `tok` (the caller's) stops it.
    /// An exception escaping it is dropped. Any thread.
    void spawn_detached(task<void> t, std::stop_token tok = {}) {
        launch(new spawn_root<void>(*this, std::move(t), cocls::promise<void>(), std::move(tok)));
    }

    /// For sync_wait: starts `root` here, then runs the loop on this thread
    /// until `pred()`.
    template <typename Pred>
    void run_until(Pred pred, detail::strand *root) {
        enter here(*this);
        root->run(root);
        while (!pred()) {
            int r = cot_loop_run(m_loop, COT_RUN_DEFAULT);
            if (r < 0) throw std::system_error(-r, std::generic_category());
        }
    }

private:
    template <typename F>
    struct post_node : detail::inbox_node {
        loop *lp;
        F fn;
        template <typename G>
        post_node(loop &l, G &&g) : lp(&l), fn(std::forward<G>(g)) {
            run = &go;
        }
        static void go(detail::inbox_node *n) noexcept {
            auto *self = static_cast<post_node *>(n);
            loop *l = self->lp;
            self->fn();
            delete self;
            l->work_done();
        }
    };

    // A spawned root: owns the task's frame, settles the promise.
    template <typename T>
    struct spawn_root : detail::strand {
        typename cothread::task<T>::handle_type h;
        cocls::promise<T> prom;
        spawn_root(loop &l, cothread::task<T> &&t, cocls::promise<T> &&p, std::stop_token tok = {})
            : strand(l, std::move(tok)), h(t.release()), prom(std::move(p)) {
            h.promise().m_strand = this;
            movable = true;
            done = &finish;
            run = &begin;
        }
        static void begin(detail::inbox_node *n) noexcept {
            auto *self = static_cast<spawn_root *>(n);
            self->start(self->h);
        }
        static void finish(detail::strand *s) noexcept {
            auto *self = static_cast<spawn_root *>(s);
            try {
                if constexpr (std::is_void_v<T>) {
                    self->h.promise().result();
                    self->prom();
                } else {
                    self->prom(self->h.promise().result());
                }
            } catch (...) {
                self->prom(std::current_exception());
            }
            self->h.destroy();
            loop_core *owner = self->owner;
            self->end();
            delete self;
            owner->work_done();
        }
    };

    void launch(detail::strand *root) {
        add_work();
        if (is_current()) root->run(root);
        else push(root);
    }

    bool m_stopped = false;
    friend class loop_group;  // keeps a group's loop current on its thread (enter)
};

namespace this_task {

/// `co_await this_task::get_loop()`: the loop running this task.
/// Does not suspend.
struct get_loop_awaiter {
    using cothread_awaitable = void;
    loop *lp = nullptr;
    bool await_ready() const noexcept { return false; }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        lp = static_cast<loop *>(h.promise().get_strand()->owner);
        return false;
    }
    loop &await_resume() const noexcept { return *lp; }
};
inline get_loop_awaiter get_loop() noexcept { return {}; }

}  // namespace this_task

}  // namespace cothread

#endif
