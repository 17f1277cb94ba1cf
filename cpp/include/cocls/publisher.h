// publisher<T> / subscriber<T>: one producer publishes a stream of values,
// any number of subscribers read it, each at its own pace, from coroutines
// (`co_await sub.next()`) or threads (`if (sub.next())`, range-for).
//
// The values live in a queue shared by the publisher and its subscribers
// (a std::deque under a std::mutex). Each value has a position: the first
// published is 1, 0 means "none". The queue keeps what the slowest
// subscriber has not read yet (at least `min_queue_len` values, at most
// `max_queue_len`). A subscriber that falls out of the kept window either
// ends (all_values) or skips ahead (skip_if_behind); skip_to_recent always
// reads the newest value.
#ifndef COCLS_PUBLISHER_H_INCLUDED
#define COCLS_PUBLISHER_H_INCLUDED

#include <algorithm>
#include <cassert>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <deque>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "awaiter.h"
#include "coro_queue.h"
#include "suspend_point.h"

// What COCLS's publisher.h also brings in (programs written for it may rely on it).
#include "future.h"
#include "iterator.h"

// COCLS's publisher.h names these standard headers; programs written for it may rely on them.
#include <map>
#include <queue>
#include <set>

namespace cocls {

/// How a subscriber reads (COCLS's spelling).
enum class subscribtion_type {
    /// Every value in order; a subscriber left behind the kept window ends.
    all_values,
    /// Every value in order, but one left behind skips to the oldest kept.
    skip_if_behind,
    /// Only the newest value each time (no history).
    skip_to_recent
};
using subscription_type = subscribtion_type;

template <typename T>
class subscriber;
template <typename T>
class subscriber_awaiter;

template <typename T>
class publisher {
public:
    /// An enumeration without values, kept from COCLS (which declares it
    /// and uses it nowhere); subscribtion_type says how a subscriber reads.
    enum class read_mode {};

    /// The shared stream state; subscribers keep it alive.
    class queue {
    public:
        /// Keeps at least `min_queue_len` (>= 1) and at most `max_queue_len`
        /// values.
        explicit queue(std::size_t max_queue_len = std::numeric_limits<std::size_t>::max(),
                       std::size_t min_queue_len = 1)
            : m_max(max_queue_len), m_min(min_queue_len) {
            assert(m_min > 0 && m_max >= m_min);
        }
        queue(const queue &) = delete;
        queue &operator=(const queue &) = delete;

    private:
        friend class publisher<T>;
        friend class subscriber<T>;
        friend class subscriber_awaiter<T>;

        // A subscriber's registration (embedded in the subscriber).
        struct reg {
            const subscriber<T> *owner = nullptr;  // identity for kick()
            std::size_t pos = 0;                   // the position last read
            subscribtion_type type = subscribtion_type::all_values;
            awaiter *waiting = nullptr;  // the suspended next(), if any
            bool kicked = false;
        };
        enum class poll_result { value, end, wait };

        void join(reg &r, std::optional<std::size_t> pos) {
            std::lock_guard lk(m_lock);
            r.pos = pos ? *pos : m_last;
            m_regs.push_back(&r);
        }
        void join_at(reg &r, const reg &from) {
            std::lock_guard lk(m_lock);
            r.pos = from.pos;
            m_regs.push_back(&r);
        }
        void leave(reg &r) {
            std::lock_guard lk(m_lock);
            m_regs.erase(std::find(m_regs.begin(), m_regs.end(), &r));
        }
        std::size_t position(const reg &r) {
            std::lock_guard lk(m_lock);
            return r.pos;
        }

        // The next value for `r` into `out`, the end, or nothing yet (then
        // `w`, if given, waits for the next publish, close or kick).
        poll_result poll(reg &r, std::optional<T> &out, awaiter *w = nullptr) {
            std::lock_guard lk(m_lock);
            if (r.kicked) return poll_result::end;
            if (r.pos >= m_last) {
                if (m_closed) return poll_result::end;
                if (w) r.waiting = w;
                return poll_result::wait;
            }
            std::size_t first = m_last + 1 - m_items.size();  // position of m_items.front()
            std::size_t next = r.pos + 1;
            switch (r.type) {
            case subscribtion_type::all_values:
                if (next < first) return poll_result::end;  // left behind: dropped
                break;
            case subscribtion_type::skip_if_behind: next = std::max(next, first); break;
            case subscribtion_type::skip_to_recent: next = m_last; break;
            }
            r.pos = next;
            out.emplace(m_items[next - first]);
            return poll_result::value;
        }

        template <typename... Args>
        void push(Args &&...args) {
            std::unique_lock lk(m_lock);
            if (m_closed) return;
            m_items.emplace_back(std::forward<Args>(args)...);
            m_last++;
            wake(lk);
        }
        template <typename It>
        void push_range(It from, It to) {
            std::unique_lock lk(m_lock);
            if (m_closed) return;
            std::size_t before = m_items.size();
            for (; from != to; ++from) m_items.emplace_back(*from);
            if (m_items.size() == before) return;
            m_last += m_items.size() - before;
            wake(lk);
        }
        void close() {
            std::unique_lock lk(m_lock);
            if (m_closed) return;
            m_closed = true;
            wake(lk);
        }
        void kick(const subscriber<T> *who) {
            std::unique_lock lk(m_lock);
            awaiter *w = nullptr;
            for (reg *r : m_regs) {
                if (r->owner != who) continue;
                r->kicked = true;
                w = std::exchange(r->waiting, nullptr);
            }
            lk.unlock();
            if (w) w->resume();
        }

        // Trims the kept window, then wakes every waiting subscriber (after
        // unlocking: by this thread's mode, on this thread).
        void wake(std::unique_lock<std::mutex> &lk) {
            std::size_t need = m_min;
            std::vector<awaiter *> ready;
            for (reg *r : m_regs) {
                if (r->kicked) continue;
                std::size_t unread = m_last - std::min(r->pos, m_last);
                if (r->type == subscribtion_type::skip_to_recent) unread = std::min<std::size_t>(unread, 1);
                need = std::max(need, unread);
                if (r->waiting) ready.push_back(std::exchange(r->waiting, nullptr));
            }
            need = std::min(need, m_max);
            while (m_items.size() > need) m_items.pop_front();
            lk.unlock();
            for (awaiter *w : ready) w->resume();
        }

        std::mutex m_lock;
        std::deque<T> m_items;  // the kept window, oldest first; the newest is at m_last
        std::size_t m_last = 0;
        std::vector<reg *> m_regs;
        const std::size_t m_max;
        const std::size_t m_min;
        bool m_closed = false;
    };

    /// Keeps at least one value and whatever the subscribers still need.
    publisher() : m_q(std::make_shared<queue>()) {}
    /// Keeps at most `max_queue_len` values (a subscriber left further
    /// behind ends or skips) and at least `min_queue_len` (a subscriber made
    /// at an older position can still read them).
    explicit publisher(std::size_t max_queue_len, std::size_t min_queue_len = 1)
        : m_q(std::make_shared<queue>(max_queue_len, min_queue_len)) {}
    publisher(const publisher &) = delete;
    publisher &operator=(const publisher &) = delete;
    /// Closes the stream: subscribers read what is left, then end.
    ~publisher() { m_q->close(); }

    /// Publishes a value (any thread). Waiting subscribers resume by this
    /// thread's mode (in normal mode they run here, before the call
    /// returns). Nothing happens once closed.
    template <typename X>
        requires std::constructible_from<T, X &&>
    void publish(X &&x) {
        m_q->push(std::forward<X>(x));
    }
    /// Publishes several values at once (one wake-up).
    template <std::input_iterator It>
    void publish(It begin, It end) {
        m_q->push_range(std::move(begin), std::move(end));
    }

    /// Ends the stream (subscribers read what is left, then end).
    void close() { m_q->close(); }
    /// Ends `who`'s reading: its next() gives false (a waiting one resumes).
    /// The pointer only identifies the subscriber; a stale one does nothing.
    void kick(const subscriber<T> *who) { m_q->kick(who); }

    std::shared_ptr<queue> get_queue() const { return m_q; }

private:
    std::shared_ptr<queue> m_q;
};

/// The awaitable of subscriber::next(): `co_await sub.next()` is true with a
/// new value in sub.value(), false at the end of the stream (closed, kicked,
/// or dropped for falling behind). Suspends if no value is there yet; the
/// publisher's thread resumes it. As a bool, it blocks the thread instead.
template <typename T>
class [[nodiscard]] subscriber_awaiter : public awaiter {
    using poll_result = typename publisher<T>::queue::poll_result;

public:
    explicit subscriber_awaiter(subscriber<T> &s) noexcept : m_sub(s) {}

    bool await_ready() {
        m_result = m_sub.poll(nullptr);
        return m_result != poll_result::wait;
    }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) {
        set_handle(h);
        m_result = m_sub.poll(this);  // registered under the queue's lock if still nothing
        return m_result == poll_result::wait ? coro_queue::next() : h;
    }
    bool await_resume() {
        if (m_result == poll_result::wait) m_result = m_sub.poll(nullptr);  // woken: value or end
        return m_result == poll_result::value;
    }

    /// Blocks the thread until a value or the end.
    bool wait() {
        for (;;) {
            if (await_ready()) break;
            sync_awaiter w;
            m_result = m_sub.poll(&w);
            if (m_result != poll_result::wait) break;
            w.wait_sync();  // a publish, close or kick wakes it: poll again
        }
        return m_result == poll_result::value;
    }
    operator bool() { return wait(); }
    bool operator!() { return !wait(); }

private:
    subscriber<T> &m_sub;
    poll_result m_result = poll_result::wait;
};

/// Reads a publisher's stream. Use from one coroutine or thread at a time.
template <typename T>
class subscriber {
    using queue_type = typename publisher<T>::queue;

public:
    using queue = queue_type;
    using next_awt = subscriber_awaiter<T>;
    using read_mode = typename publisher<T>::read_mode;

    /// Reads the values published from now on.
    explicit subscriber(publisher<T> &pub, subscribtion_type t = subscribtion_type::all_values)
        : m_q(pub.get_queue()) {
        init(t);
        m_q->join(m_reg, std::nullopt);
    }
    /// Reads from the value after position `pos` (0: from the first still
    /// kept, if the window reaches back that far).
    subscriber(publisher<T> &pub, std::size_t pos, subscribtion_type t = subscribtion_type::all_values)
        : m_q(pub.get_queue()) {
        init(t);
        m_q->join(m_reg, pos);
    }
    /// A second reader at the same position.
    subscriber(const subscriber &o) : m_q(o.m_q) {
        init(o.m_reg.type);
        m_q->join_at(m_reg, o.m_reg);
    }
    subscriber &operator=(const subscriber &) = delete;
    ~subscriber() { m_q->leave(m_reg); }

    /// The next value: `co_await sub.next()` or `if (sub.next())` (blocks).
    next_awt next() noexcept { return next_awt(*this); }

    /// Takes the next value if one is there, never waits; false also at the
    /// end (next() tells which).
    bool next_ready() { return poll(nullptr) == queue_type::poll_result::value; }

    /// The position of the current value (0: none read yet).
    std::size_t position() const { return m_q->position(m_reg); }

    /// Ends this subscriber's reading (any thread).
    void kick_me() { m_q->kick(this); }

    /// The current value (after next() gave true).
    T &value() { return *m_value; }
    const T &value() const { return *m_value; }

    /// Blocking iteration over the values until the end of the stream.
    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = T;
        using difference_type = std::ptrdiff_t;
        using pointer = T *;
        using reference = T &;

        iterator() = default;
        T &operator*() const { return m_sub->value(); }
        T *operator->() const { return &m_sub->value(); }
        iterator &operator++() {
            if (!m_sub->next().wait()) m_sub = nullptr;
            return *this;
        }
        void operator++(int) { ++*this; }
        bool operator==(const iterator &o) const noexcept { return m_sub == o.m_sub; }

    private:
        friend class subscriber;
        explicit iterator(subscriber *s) noexcept : m_sub(s) {}
        subscriber *m_sub = nullptr;
    };
    /// Blocks for the first value.
    iterator begin() { return next().wait() ? iterator(this) : iterator(); }
    iterator end() noexcept { return iterator(); }

private:
    friend class subscriber_awaiter<T>;

    void init(subscribtion_type t) noexcept {
        m_reg.owner = this;
        m_reg.type = t;
    }
    typename queue_type::poll_result poll(awaiter *w) { return m_q->poll(m_reg, m_value, w); }

    std::shared_ptr<queue_type> m_q;
    typename queue_type::reg m_reg;
    std::optional<T> m_value;
};

}  // namespace cocls

#endif
