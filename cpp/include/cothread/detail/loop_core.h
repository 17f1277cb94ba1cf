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
        cot_async_send(m_loop, m_async);
        m_senders.fetch_sub(1, std::memory_order_acq_rel);
    }

    /// Counts live roots, pending posts and work guards: run() returns when it is 0.
    void add_work() noexcept { m_work.fetch_add(1, std::memory_order_relaxed); }
    /// On the loop thread: one root or post ended.
    void work_done() noexcept {
        if (m_work.fetch_sub(1, std::memory_order_acq_rel) == 1 && m_running) cot_loop_stop(m_loop);
    }

    /// Live strands (loop thread only), for ~loop.
    strand *m_strands = nullptr;
    /// ~loop is ending every strand: new roots get a stop request at once.
    bool m_closing = false;

protected:
    explicit loop_core(cot_loop *lp, bool owned) : m_loop(lp), m_owned(owned) {
        if (!m_loop || cot_async_init(m_loop, &on_async, this, &m_async) != 0) {
            if (m_owned && m_loop) cot_loop_close(m_loop);
            throw std::bad_alloc();
        }
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
    cot_handle m_async = 0;
    std::atomic<inbox_node *> m_inbox{nullptr};
    std::atomic<std::size_t> m_work{0};
    std::atomic<int> m_senders{0};
};

}  // namespace cothread::detail

#endif
