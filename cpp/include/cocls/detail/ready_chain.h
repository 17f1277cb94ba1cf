// ready_chain: a queue of awaiters that became ready, filled from any thread
// and emptied by one consumer, which may wait for the next one. It is one of
// the core's chains (cot_chain_push / cot_chain_take: lock-free, FIFO when
// taken) whose word also says that the consumer waits:
//
//   nullptr            empty, the consumer is not waiting
//   a chain of nodes   ready awaiters, newest first
//   &awaiter::disabled empty, the consumer waits (m_consumer wakes it)
//
// The producer that replaces the marker with its node wakes the consumer;
// only one can, so the consumer is woken once, and only after it stopped
// touching the queue.
#ifndef COCLS_DETAIL_READY_CHAIN_H_INCLUDED
#define COCLS_DETAIL_READY_CHAIN_H_INCLUDED

#include <atomic>

#include "../awaiter.h"
#include "../suspend_point.h"
#include "core.h"
#include "tsan.h"

namespace cocls::detail {

class ready_chain {
public:
    ready_chain() = default;
    ready_chain(const ready_chain &) = delete;
    ready_chain &operator=(const ready_chain &) = delete;

    /// Adds `node` (any thread). If the consumer waits, returns what waking
    /// it makes ready (its coroutine, to run where the caller decides).
    suspend_point<void> push(awaiter *node) noexcept {
        tsan_release(node);  // what this thread did, for the consumer that pops node
        for (;;) {
            if (cot_chain_push(word(), node, waiting())) return {};
            // The consumer waits: take the marker's place, then wake it.
            awaiter *expected = waiting();
            node->_next = nullptr;
            if (m_chain.compare_exchange_strong(expected, node, std::memory_order_acq_rel,
                                                std::memory_order_relaxed))
                return m_consumer->resume();
        }
    }

    /// The oldest ready awaiter, or null (the consumer only).
    awaiter *try_pop() noexcept {
        if (!m_taken) m_taken = static_cast<awaiter *>(cot_chain_take(word(), nullptr, waiting()));
        awaiter *a = m_taken;
        if (a) {
            tsan_acquire(a);
            m_taken = a->_next;
            a->_next = nullptr;
        }
        return a;
    }

    /// After try_pop() gave null: registers `consumer` to be resumed by the
    /// next push. False if a node came in meanwhile (nothing registered: pop
    /// again). True: it will be resumed, maybe already on another thread, so
    /// the caller touches nothing of it or of this queue any more.
    bool wait(awaiter *consumer) noexcept {
        m_consumer = consumer;  // published by the exchange below
        awaiter *expected = nullptr;
        return m_chain.compare_exchange_strong(expected, waiting(), std::memory_order_acq_rel,
                                               std::memory_order_relaxed);
    }

    /// Blocks the thread until an awaiter is ready and returns it.
    awaiter *pop_blocking() noexcept {
        for (;;) {
            if (awaiter *a = try_pop()) return a;
            sync_awaiter w;
            if (wait(&w)) w.wait_sync();
        }
    }

private:
    static awaiter *waiting() noexcept { return &awaiter::disabled; }
    void **word() noexcept { return reinterpret_cast<void **>(&m_chain); }

    awaiter_collector m_chain{nullptr};
    awaiter *m_taken = nullptr;     // taken from the chain, oldest first (the consumer's)
    awaiter *m_consumer = nullptr;  // who waits while m_chain holds the marker
};

}  // namespace cocls::detail

#endif
