// suspend_point<T>: what a call returns when it made coroutines ready (set a
// promise, released a mutex...), with the call's own result T. co_await it to
// switch to them now; discard it and they run by the thread's mode (at once
// in normal mode, queued in coro mode); or move it elsewhere first.
#ifndef COCLS_SUSPEND_POINT_H_INCLUDED
#define COCLS_SUSPEND_POINT_H_INCLUDED

#include <coroutine>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "coro_queue.h"

namespace cocls {

namespace detail {

/// The coroutines a call made ready, in the order they became ready. The
/// first is kept inline and the rest in a vector made only when needed: one
/// ready coroutine (the common case) costs no heap, and moving a set is two
/// pointer copies.
class ready_set {
    using more_t = std::vector<std::coroutine_handle<>>;

public:
    ready_set() = default;
    explicit ready_set(std::coroutine_handle<> h) noexcept : m_first(h) {}
    ready_set(ready_set &&o) noexcept : m_first(std::exchange(o.m_first, {})), m_more(std::move(o.m_more)) {}
    ready_set &operator=(ready_set &&o) noexcept {
        if (this != &o) {
            flush();
            m_first = std::exchange(o.m_first, {});
            m_more = std::move(o.m_more);
        }
        return *this;
    }
    ~ready_set() { flush(); }

    bool empty() const noexcept { return !m_first; }
    std::size_t size() const noexcept { return m_first ? 1 + (m_more ? m_more->size() : 0) : 0; }

    void add(std::coroutine_handle<> h) {
        if (!h) return;
        if (!m_first) m_first = h;
        else more().push_back(h);
    }

    void add(ready_set &&o) {
        if (o.empty()) return;
        if (empty()) {
            m_first = std::exchange(o.m_first, {});
            m_more = std::move(o.m_more);
            return;
        }
        more().push_back(std::exchange(o.m_first, {}));
        if (o.m_more) {
            m_more->insert(m_more->end(), o.m_more->begin(), o.m_more->end());
            o.m_more.reset();
        }
    }

    /// Takes the first ready coroutine out (null if none).
    std::coroutine_handle<> pop() noexcept {
        auto h = std::exchange(m_first, {});
        if (m_more && !m_more->empty()) {
            m_first = m_more->front();
            m_more->erase(m_more->begin());
        }
        return h;
    }

    /// Resumes them all by the thread's mode (see coro_queue::resume).
    void flush() noexcept {
        if (!m_first) return;
        if (!m_more) [[likely]]
            return coro_queue::resume(std::exchange(m_first, {}));
        flush_more();
    }

    /// For `co_await`: queues the others, then `me`, and returns the first to
    /// switch to. Outside coro mode (a coroutine resumed by foreign code) they
    /// run here and `me` goes on.
    std::coroutine_handle<> switch_from(std::coroutine_handle<> me) noexcept {
        if (!coro_queue::is_active()) {
            flush();
            return me;
        }
        cot_resume_queue *q = coro_queue::here();
        if (m_more) {
            for (auto h : *m_more) detail::queue_push(q, h.address());
            m_more.reset();
        }
        detail::queue_push(q, me.address());
        return std::exchange(m_first, {});
    }

private:
    // flush() with more than one: out of line, so that the common case
    // (one coroutine) inlines into every discarded suspend point.
    [[gnu::noinline]] void flush_more() noexcept {
        auto first = std::exchange(m_first, {});
        auto more = std::move(m_more);
        coro_queue::resume(first, more->data(), more->size());
    }

    more_t &more() {
        if (!m_more) m_more = std::make_unique<more_t>();
        return *m_more;
    }

    std::coroutine_handle<> m_first;
    std::unique_ptr<more_t> m_more;
};

struct no_value {};

}  // namespace detail

/// Discarding one is normal (not [[nodiscard]]): the coroutines then run by
/// the thread's mode.
template <typename T = void>
class suspend_point {
    using storage = std::conditional_t<std::is_void_v<T>, detail::no_value, T>;

public:
    using value_type = T;

    suspend_point() = default;
    /// Nothing ready, with the call's result.
    template <typename U = storage, typename = std::enable_if_t<!std::is_void_v<T>, U>>
    suspend_point(U value) : m_value(std::move(value)) {}
    /// One coroutine ready.
    suspend_point(std::coroutine_handle<> h) noexcept : m_ready(h) {}
    /// One coroutine ready, with the call's result.
    template <typename U = storage, typename = std::enable_if_t<!std::is_void_v<T>, U>>
    suspend_point(std::coroutine_handle<> h, U value) : m_ready(h), m_value(std::move(value)) {}
    /// The coroutines of `sp`, with the call's result.
    template <typename U = storage, typename = std::enable_if_t<!std::is_void_v<T>, U>>
    suspend_point(suspend_point<void> &&sp, U value) : m_ready(std::move(sp.m_ready)), m_value(std::move(value)) {}
    suspend_point(suspend_point &&) noexcept = default;
    /// Takes the coroutines of a suspend point with a result (in COCLS a
    /// suspend_point<T> is a suspend_point<void>: `return p(v);` from a
    /// function returning suspend_point<void>).
    template <typename U>
        requires(std::is_void_v<T> && !std::is_void_v<U>)
    suspend_point(suspend_point<U> &&other) noexcept : m_ready(std::move(other.m_ready)) {}
    /// Moving onto a suspend point first resumes what it held.
    suspend_point &operator=(suspend_point &&) noexcept = default;

    /// Adds the coroutines another suspend point held (it ends up empty).
    template <typename U>
    suspend_point &operator<<(suspend_point<U> &&other) {
        m_ready.add(std::move(other.m_ready));
        return *this;
    }
    template <typename U>
    suspend_point &operator<<(suspend_point<U> &other) {
        return *this << std::move(other);
    }
    suspend_point &operator<<(std::coroutine_handle<> h) {
        m_ready.add(h);
        return *this;
    }

    /// How many coroutines it holds inline (more go to a vector on the heap).
    static constexpr int inline_count = 1;

    /// Resumes the ready coroutines now, by the thread's mode.
    void flush() noexcept { m_ready.flush(); }
    /// Same as flush() (COCLS's later name).
    void clear() noexcept { m_ready.flush(); }
    /// Same as flush() (COCLS's name).
    void suspend_now() noexcept { m_ready.flush(); }
    /// Does it hold no ready coroutine?
    bool empty() const noexcept { return m_ready.empty(); }
    /// How many ready coroutines it holds.
    std::size_t size() const noexcept { return m_ready.size(); }
    /// Takes one ready coroutine out, to resume it elsewhere; when empty,
    /// std::noop_coroutine() (so that an await_suspend may `return sp.pop();`).
    std::coroutine_handle<> pop() noexcept {
        std::coroutine_handle<> h = m_ready.pop();
        return h ? h : std::noop_coroutine();
    }
    /// Takes one ready coroutine out; a null handle when empty.
    std::coroutine_handle<> take() noexcept { return m_ready.pop(); }

    /// The call's result.
    const storage &value() const noexcept { return m_value; }
    operator const storage &() const noexcept { return m_value; }

    /// co_await: if coroutines are ready, the caller suspends, the first of
    /// them runs now on this thread, the others and then the caller are
    /// queued; returns the call's result.
    bool await_ready() const noexcept { return m_ready.empty(); }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> me) noexcept { return m_ready.switch_from(me); }
    /// The result by reference, as COCLS (T need not be copyable); it lives
    /// in the suspend point, so read it in the same full expression when the
    /// suspend point is a temporary (`bool won = co_await p(1);`).
    std::add_lvalue_reference_t<T> await_resume() noexcept {
        if constexpr (!std::is_void_v<T>) return m_value;
    }

private:
    template <typename U>
    friend class suspend_point;

    detail::ready_set m_ready;
    [[no_unique_address]] storage m_value{};
};

template <typename Fn>
auto coro_queue::create_suspend_point(Fn &&fn) {
    using R = std::invoke_result_t<Fn>;
    return install_queue_and_call([&] {
        cot_resume_queue *q = here();
        const std::size_t before = detail::queue_len(q);
        // Moves what fn queued (behind the `before` entries) into `sp`: the
        // core's queue is FIFO, so the older entries go round to the tail.
        auto take = [&](auto &sp) {
            const std::size_t after = detail::queue_len(q);
            if (after <= before) return;
            for (std::size_t i = 0; i < before; i++) detail::queue_push(q, detail::queue_pop(q));
            for (std::size_t i = before; i < after; i++)
                sp << std::coroutine_handle<>::from_address(detail::queue_pop(q));
        };
        if constexpr (std::is_void_v<R>) {
            std::forward<Fn>(fn)();
            suspend_point<void> sp;
            take(sp);
            return sp;
        } else {
            suspend_point<R> sp(std::forward<Fn>(fn)());
            take(sp);
            return sp;
        }
    });
}

}  // namespace cocls

#endif
