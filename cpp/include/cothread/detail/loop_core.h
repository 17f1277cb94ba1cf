// detail::loop_core: what tasks and awaiters see of a cothread::loop. The
// native cot_loop, whether the calling thread runs it, and its inbox: a
// lock-free chain of nodes that any thread may push (cot_chain_push) and the
// loop thread runs, woken by one async handle (cot_async_send).
#ifndef COTHREAD_DETAIL_LOOP_CORE_H_INCLUDED
#define COTHREAD_DETAIL_LOOP_CORE_H_INCLUDED

#include <cothread.h>

#include <atomic>
#include <cstddef>
#include <new>

namespace cothread::detail {

struct strand;

/// A job for the loop thread. `next` is first: the core links through it.
/// `run` owns the node once called (it frees it if it was allocated).
struct inbox_node {
    inbox_node *next = nullptr;
    void (*run)(inbox_node *self) noexcept = nullptr;
};

class loop_core {
public:
    loop_core(const loop_core &) = delete;
    loop_core &operator=(const loop_core &) = delete;

    cot_loop *native() const noexcept { return m_loop; }

    /// Is the calling thread running this loop (run(), sync_wait, ~loop)?
    bool is_current() const noexcept { return current() == this; }

    /// Runs `n->run(n)` on the loop thread, soon. Safe from any thread; the
    /// loop must not be destroyed before this returns (a root waiting for
    /// this push, or the work count, keeps it).
    void push(inbox_node *n) noexcept {
        m_senders.fetch_add(1, std::memory_order_acq_rel);
        cot_chain_push(reinterpret_cast<void **>(&m_inbox), n, nullptr);
        cot_async_send(m_loop, m_async.load(std::memory_order_acquire));
        m_senders.fetch_sub(1, std::memory_order_acq_rel);
    }

    /// Counts live roots, pending posts and work guards: run() returns when it is 0.
    void add_work() noexcept { m_work.fetch_add(1, std::memory_order_relaxed); }
    /// On the loop thread: one root or post ended.
    void work_done() noexcept {
        if (m_work.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        if (m_release_when_idle) release_native();
        else if (m_running) cot_loop_stop(m_loop);
    }

    /// Live strands (loop thread only), for ~loop.
    strand *m_strands = nullptr;
    /// ~loop is ending every strand: new roots get a stop request at once.
    bool m_closing = false;

protected:
    explicit loop_core(cot_loop *lp, bool owned) : m_loop(lp), m_owned(owned) {
        cot_handle async = 0;
        if (!m_loop || cot_async_init(m_loop, &on_async, this, &async) != 0) {
            if (m_owned && m_loop) cot_loop_close(m_loop);
            throw std::bad_alloc();
        }
        m_async.store(async, std::memory_order_release);
    }
    ~loop_core() = default;

    static loop_core *&current() noexcept {
        constinit static thread_local loop_core *t_current = nullptr;
        return t_current;
    }

    /// Marks this thread as the loop's for a scope (run, sync_wait, ~loop).
    struct enter {
        loop_core *prev;
        loop_core &self;
        explicit enter(loop_core &s) noexcept : prev(current()), self(s) {
            current() = &s;
            s.m_running = true;
        }
        ~enter() {
            self.m_running = false;
            current() = prev;
        }
    };

    /// Closes the inbox's async handle, which alone keeps the native loop
    /// alive when no work is left: a loop_group's shutdown lets that loop
    /// end so. Later pushes wait in the chain for ~loop's drain. Once.
    void release_native() noexcept {
        if (cot_handle h = m_async.exchange(0, std::memory_order_acq_rel)) cot_close(m_loop, h, nullptr);
    }

    /// Runs what the inbox holds, oldest first.
    void drain() noexcept {
        auto *n = static_cast<inbox_node *>(cot_chain_take(reinterpret_cast<void **>(&m_inbox), nullptr, nullptr));
        while (n) {
            inbox_node *next = n->next;  // `run` may free n
            n->run(n);
            n = next;
        }
    }
    bool inbox_empty() const noexcept { return m_inbox.load(std::memory_order_acquire) == nullptr; }

    static void on_async(cot_loop *, cot_handle, void *data) { static_cast<loop_core *>(data)->drain(); }

    cot_loop *m_loop;
    bool m_owned;
    bool m_running = false;
    std::atomic<cot_handle> m_async{0};  // 0 once released; read by pushes on any thread
    bool m_release_when_idle = false;  // release_native() when the work ends
    std::atomic<inbox_node *> m_inbox{nullptr};
    std::atomic<std::size_t> m_work{0};
    std::atomic<int> m_senders{0};
};

}  // namespace cothread::detail

#endif
