// queue<T> and limited_queue<T>: awaitable multi-producer multi-consumer
// queues, safe from any thread. pop() returns a future<T>, ready at once when
// a value is queued; otherwise the popper waits and the next push hands its
// value straight to the oldest popper. limited_queue's push() waits while the
// queue is full.
//
// A lock (std::mutex by default) guards the items and the waiting promises;
// promises are always set after the lock is released, so the woken
// coroutines never run under it.
#ifndef COCLS_QUEUE_H_INCLUDED
#define COCLS_QUEUE_H_INCLUDED

#include <algorithm>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <queue>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "exceptions.h"
#include "future.h"
#include "suspend_point.h"
#include "common.h"

namespace cocls {

namespace primitives {

/// A lock that does nothing (a queue used by one thread only).
class no_lock {
public:
    void lock() noexcept {}
    void unlock() noexcept {}
    bool try_lock() noexcept { return true; }
};

/// std::queue, and for void a counter (a queue of nothing is a semaphore).
template <typename T>
class std_queue : public std::queue<T> {
public:
    using std::queue<T>::queue;
};

template <>
class std_queue<void> {
public:
    void emplace() noexcept { ++m_count; }
    void pop() noexcept {
        if (m_count) --m_count;
    }
    std::size_t size() const noexcept { return m_count; }
    bool empty() const noexcept { return m_count == 0; }

private:
    std::size_t m_count = 0;
};

/// A queue of at most one item (one consumer); a second emplace throws.
template <typename T>
class single_item_queue {
public:
    bool empty() const noexcept { return !m_item.has_value(); }
    std::size_t size() const noexcept { return m_item.has_value() ? 1 : 0; }
    template <typename... Args>
    void emplace(Args &&...args) {
        if (m_item.has_value()) throw std::runtime_error("cocls: single item queue is full");
        m_item.emplace(std::forward<Args>(args)...);
    }
    T &front() { return *m_item; }
    const T &front() const { return *m_item; }
    void pop() noexcept { m_item.reset(); }
    void clear() noexcept { m_item.reset(); }

private:
    std::optional<T> m_item;
};

}  // namespace primitives

/// An unlimited queue. Queue holds the items, CoroQueue the waiting poppers'
/// promises (primitives::single_item_queue for one consumer), Lock guards
/// both.
template <typename T, template <typename> class Queue = primitives::std_queue,
          template <typename> class CoroQueue = primitives::std_queue, typename Lock = std::mutex>
class queue {
public:
    queue() = default;
    queue(const queue &) = delete;
    queue &operator=(const queue &) = delete;

    /// Pending pops resolve with await_canceled_exception (their coroutines
    /// run here in normal mode, queued in coro mode); they must not use the
    /// queue again.
    ~queue() { cancel_pops(); }

    /// Adds a value constructed from `args`. If a popper waits, the value
    /// goes straight to the oldest one, which is in the returned suspend
    /// point (value true): discard it to resume the popper by the thread's
    /// mode (in normal mode it runs here, before push returns), co_await it
    /// to switch to it now. False: nobody waited, the value is queued.
    template <typename... Args>
    suspend_point<bool> push(Args &&...args) {
        std::unique_lock lk(m_lock);
        if (m_poppers.empty()) {
            m_items.emplace(std::forward<Args>(args)...);
            return false;
        }
        promise<T> p = take_popper();
        lk.unlock();
        return p(std::forward<Args>(args)...);
    }

    /// The next value: a ready future if one is queued, else a pending one
    /// that the next push (or unblock_pop, or the queue's destruction)
    /// resolves, on the pusher's thread. `co_await q.pop()` or
    /// `q.pop().wait()`.
    future<T> pop() {
        return future<T>([this](promise<T> p) {
            std::lock_guard lk(m_lock);
            if (m_items.empty()) m_poppers.emplace(std::move(p));
            else take_item(p);  // nobody waits on the future yet: safe under the lock
        });
    }

    /// Resolves the oldest waiting pop with exception `e` (a timeout, say).
    /// Does nothing and returns false if nobody waits. The popper is in the
    /// suspend point, as for push.
    suspend_point<bool> unblock_pop(std::exception_ptr e) {
        std::unique_lock lk(m_lock);
        if (m_poppers.empty()) return false;
        promise<T> p = take_popper();
        lk.unlock();
        return p(std::move(e));
    }

    /// No value queued?
    bool empty() {
        std::lock_guard lk(m_lock);
        return m_items.empty();
    }
    /// The number of queued values.
    std::size_t size() {
        std::lock_guard lk(m_lock);
        return m_items.size();
    }

protected:
    promise<T> take_popper() {
        promise<T> p = std::move(m_poppers.front());
        m_poppers.pop();
        return p;
    }
    // Moves the oldest item into `p` (under the lock).
    void take_item(promise<T> &p) {
        if constexpr (std::is_void_v<T>) p();
        else p(std::move(m_items.front()));
        m_items.pop();
    }
    void cancel_pops() noexcept {
        for (;;) {
            std::unique_lock lk(m_lock);
            if (m_poppers.empty()) return;
            promise<T> p = take_popper();
            lk.unlock();
            p(drop);
        }
    }

    Lock m_lock;
    Queue<T> m_items;
    CoroQueue<promise<T>> m_poppers;
};

/// A queue of at most `limit` values: push() returns a future<void> that is
/// ready at once while there is room, else resolves when a pop made room (the
/// value waits with the producer meanwhile). BlockedQueue holds the waiting
/// producers.
template <typename T, template <typename> class Queue = primitives::std_queue,
          template <typename> class CoroQueue = primitives::std_queue,
          template <typename> class BlockedQueue = primitives::std_queue, typename Lock = std::mutex>
class limited_queue : protected queue<T, Queue, CoroQueue, Lock> {
    using base = queue<T, Queue, CoroQueue, Lock>;
    using item = typename detail::future_value<T>::type;

    // A producer waiting for room, with its value.
    struct blocked {
        std::optional<item> value;
        promise<void> done;
    };

public:
    /// `limit` values at most (a limit of 0 counts as 1).
    explicit limited_queue(std::size_t limit) : m_limit(std::max<std::size_t>(limit, 1)) {}

    /// Producers still waiting get await_canceled_exception, then pending
    /// pops do (as for queue).
    ~limited_queue() {
        for (;;) {
            std::unique_lock lk(this->m_lock);
            if (m_blocked.empty()) break;
            promise<void> p = take_blocked().done;
            lk.unlock();
            p(drop);
        }
    }

    /// Adds a value constructed from `args`. Ready at once if a popper took
    /// it or there was room; else pending until a pop moves the value into
    /// the queue (the producer is resumed by the popping thread). co_await
    /// it or wait() on it: destroying it pending is an error.
    template <typename... Args>
    future<void> push(Args &&...args) {
        return future<void>([&](promise<void> room) {
            std::unique_lock lk(this->m_lock);
            if (!this->m_poppers.empty()) {
                promise<T> p = this->take_popper();
                lk.unlock();
                p(std::forward<Args>(args)...);
                room();
            } else if (this->m_items.size() < m_limit) {
                this->m_items.emplace(std::forward<Args>(args)...);
                room();  // nobody waits on the future yet
            } else {
                blocked b{std::nullopt, std::move(room)};
                if constexpr (std::is_void_v<T>) b.value.emplace();
                else b.value.emplace(std::forward<Args>(args)...);
                m_blocked.emplace(std::move(b));
            }
        });
    }

    /// As queue::pop; taking a value lets the oldest waiting producer's
    /// value in and resumes that producer (by this thread's mode).
    future<T> pop() {
        return future<T>([this](promise<T> p) {
            std::unique_lock lk(this->m_lock);
            if (this->m_items.empty()) {
                this->m_poppers.emplace(std::move(p));
                return;
            }
            this->take_item(p);
            if (m_blocked.empty()) return;
            blocked b = take_blocked();
            if constexpr (std::is_void_v<T>) this->m_items.emplace();
            else this->m_items.emplace(std::move(*b.value));
            lk.unlock();
            b.done();
        });
    }

    /// Fails the oldest waiting push with `e` (its value is dropped); false
    /// if no producer waits.
    suspend_point<bool> unblock_push(std::exception_ptr e) {
        std::unique_lock lk(this->m_lock);
        if (m_blocked.empty()) return false;
        promise<void> p = take_blocked().done;
        lk.unlock();
        return p(std::move(e));
    }

    using base::empty;
    using base::size;
    using base::unblock_pop;

private:
    blocked take_blocked() {
        blocked b = std::move(m_blocked.front());
        m_blocked.pop();
        return b;
    }

    BlockedQueue<blocked> m_blocked;
    std::size_t m_limit;
};

}  // namespace cocls

#endif
