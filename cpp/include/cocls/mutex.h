// mutex: a lock for coroutines. `co_await mx.lock()` suspends the coroutine
// (not the thread) while another owner holds the lock and returns an
// `ownership`; destroying it or calling release() unlocks. Waiters get the
// lock in the order they asked (FIFO handoff: the unlocking owner hands it to
// the oldest waiter, the lock never goes free in between).
//
// The lock state and the waiter queue are the core's cot_mutex (two words
// embedded here, no heap); the waiting awaiter itself is the queue node. The
// two uncontended steps (lock a free mutex, unlock with nobody waiting) are
// inline atomic operations, as cot_mutex's documentation allows: no call into
// the core unless someone waits.
#ifndef COCLS_MUTEX_H_INCLUDED
#define COCLS_MUTEX_H_INCLUDED

#include <atomic>
#include <cassert>
#include <coroutine>
#include <utility>

#include "awaiter.h"
#include "coro_queue.h"
#include "detail/core.h"
#include "detail/tsan.h"
#include "suspend_point.h"

namespace cocls {

class mutex_awaiter;

class mutex {
public:
    /// Holds the lock. Movable, not copyable; unlocks when destroyed (the new
    /// owner then runs by the thread's mode: queued in coro mode, at once in
    /// normal mode).
    class ownership {
    public:
        /// Holds nothing.
        ownership() noexcept = default;
        /// `mutex::ownership own = mx.lock();` blocks the thread until locked.
        ownership(mutex_awaiter &&awt);
        ownership(const ownership &) = delete;
        ownership &operator=(const ownership &) = delete;
        ownership(ownership &&o) noexcept : m_mx(std::exchange(o.m_mx, nullptr)) {}
        /// Releases what this held first (discarding the suspend point).
        ownership &operator=(ownership &&o) noexcept {
            if (this != &o) {
                release();
                m_mx = std::exchange(o.m_mx, nullptr);
            }
            return *this;
        }
        ~ownership() {
            if (!m_mx) return;
            // The suspend point is made only if someone waited (no cost otherwise).
            // m_mx is left as it is: the object ends here.
            if (awaiter *next = m_mx->unlock()) [[unlikely]]
                next->resume();
        }

        /// Unlocks. The oldest waiter (if any) owns the mutex now; it is in
        /// the returned suspend point: `co_await` it to switch to the new
        /// owner at once (the caller is queued behind it, on this thread), or
        /// discard it (coro mode: the new owner is queued and runs when the
        /// caller suspends or ends; normal mode: it runs now, on this thread).
        /// A thread blocked in lock().wait() is woken instead. Releasing an
        /// empty ownership does nothing.
        suspend_point<void> release() noexcept {
            mutex *mx = std::exchange(m_mx, nullptr);
            if (!mx) return {};
            awaiter *next = mx->unlock();
            if (!next) return {};
            return next->resume();
        }

        /// Does it hold the lock?
        explicit operator bool() const noexcept { return m_mx != nullptr; }
        bool operator!() const noexcept { return m_mx == nullptr; }

    private:
        friend class mutex;
        friend class mutex_awaiter;
        explicit ownership(mutex *mx) noexcept : m_mx(mx) {}

        mutex *m_mx = nullptr;
    };

    mutex() noexcept = default;
    mutex(const mutex &) = delete;
    mutex &operator=(const mutex &) = delete;
    /// Must not be locked (asserted in debug builds).
    ~mutex() { assert(!cot_mutex_is_locked(&m_state) && "cocls: destroying a locked mutex"); }

    /// `co_await mx.lock()` -> ownership: continues at once if the mutex is
    /// free, else suspends; the owner that unlocks resumes it (by that
    /// thread's mode, on that thread). `mx.lock().wait()` blocks the thread
    /// instead.
    mutex_awaiter lock() noexcept;

    /// Locks if free, never waits (any thread, any mode). The ownership
    /// tests false if the mutex was locked.
    ownership try_lock() noexcept {
        if (!lock_if_free()) return ownership();
        detail::tsan_acquire(this);
        return ownership(this);
    }

private:
    friend class mutex_awaiter;

    // cot_mutex_try_lock, inline: state NULL -> the mutex's address.
    bool lock_if_free() noexcept {
        void *free = nullptr;
        return std::atomic_ref<void *>(m_state.state)
            .compare_exchange_strong(free, &m_state, std::memory_order_acquire, std::memory_order_relaxed);
    }

    // Unlocks: the new owner (the oldest waiter, to be resumed), or null.
    // With nobody waiting it is one inline exchange (state: the mutex's
    // address -> NULL, the queue being the owner's and empty); otherwise
    // the core hands the mutex over.
    awaiter *unlock() noexcept {
        detail::tsan_release(this);
        if (std::atomic_ref<void *>(m_state.queue).load(std::memory_order_relaxed) == nullptr) {
            void *locked = &m_state;
            if (std::atomic_ref<void *>(m_state.state)
                    .compare_exchange_strong(locked, nullptr, std::memory_order_release, std::memory_order_relaxed))
                return nullptr;
        }
        void *next = cot_mutex_unlock(&m_state);
        if (next) detail::tsan_acquire(next);  // what the waiter did before it queued
        return static_cast<awaiter *>(next);
    }

    cot_mutex m_state{};
};

/// The awaiter of mutex::lock(). While it waits it is the node of the core's
/// queue (awaiter::_next is the link).
class [[nodiscard]] mutex_awaiter : public awaiter {
public:
    // The awaiter's fields are set only if it waits (await_suspend).
    explicit mutex_awaiter(mutex &mx) noexcept : awaiter(unset_t{}), m_mx(mx) {}
    mutex_awaiter(const mutex_awaiter &) = delete;
    mutex_awaiter &operator=(const mutex_awaiter &) = delete;

    bool await_ready() noexcept { return m_mx.lock_if_free(); }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
        cot_mutex *state = &m_mx.m_state;
        set_handle(h);
        awaiter *node = this;
        detail::tsan_release(node);
        // Queued: from here on the unlocking owner may resume us on its thread.
        if (cot_mutex_lock(state, node)) return h;
        return std::noop_coroutine();  // back to the resumer, which runs the next one
    }
    mutex::ownership await_resume() noexcept {
        detail::tsan_acquire(&m_mx);
        return mutex::ownership(&m_mx);
    }

    /// Blocks the thread until it owns the mutex (normal mode).
    mutex::ownership wait() {
        if (!m_mx.lock_if_free()) {
            cot_mutex *state = &m_mx.m_state;
            sync_awaiter w;
            awaiter *node = &w;
            detail::tsan_release(node);
            if (!cot_mutex_lock(state, node)) w.wait_sync();
        }
        return await_resume();
    }

private:
    mutex &m_mx;
};

inline mutex_awaiter mutex::lock() noexcept { return mutex_awaiter(*this); }

inline mutex::ownership::ownership(mutex_awaiter &&awt) : ownership(awt.wait()) {}

}  // namespace cocls

#endif
