// async<T>: a lazy coroutine. Calling it creates the frame only; it runs once
// started: detach(), start() (-> future<T>), start(promise), join(),
// co_await, or by constructing a future<T> from it. Destroying one that never
// started destroys its frame and with it the arguments.
#ifndef COCLS_ASYNC_H_INCLUDED
#define COCLS_ASYNC_H_INCLUDED

#include <coroutine>
#include <exception>
#include <utility>

#include "coro_queue.h"
#include "future.h"
#include "suspend_point.h"

namespace cocls {

namespace detail {

// What every async promise does; the result goes straight into the target
// promise, and the waiters it wakes are resumed when the frame is gone.
template <typename T>
class async_promise_base {
public:
    std::suspend_always initial_suspend() noexcept { return {}; }

    struct final_awaiter {
        bool await_ready() const noexcept { return false; }
        template <typename P>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
            suspend_point<void> ready = std::move(h.promise().m_ready);
            h.destroy();
            std::coroutine_handle<> next = ready.take();
            return next ? next : coro_queue::next();  // the rest of `ready` is queued
        }
        void await_resume() const noexcept {}
    };
    final_awaiter final_suspend() noexcept { return {}; }

    void unhandled_exception() noexcept { m_ready << m_target(std::current_exception()); }

    promise<T> m_target;
    suspend_point<void> m_ready;
};

}  // namespace detail

template <typename T>
class async_promise : public detail::async_promise_base<T> {
public:
    async<T> get_return_object() noexcept;
    template <typename U>
    void return_value(U &&v) {
        this->m_ready << this->m_target(std::forward<U>(v));
    }
};

template <>
class async_promise<void> : public detail::async_promise_base<void> {
public:
    async<void> get_return_object() noexcept;
    void return_void() { m_ready << m_target(); }
};

template <typename T>
class async_awaiter;

namespace detail {
/// Starts a coroutine whose result a future<T> waits for (start(), a
/// coroutine returning future<T>, future<T>(async)): in normal mode the
/// thread enters coro mode, runs it, then what it queued; in coro mode it runs
/// at once, nested in the caller as a function call would, until it first
/// suspends (COCLS: "coroutines are started immediately"). Only detach() and
/// suspend points queue a coroutine in coro mode.
inline void start_now(std::coroutine_handle<> h) noexcept {
    if (coro_queue::is_active()) h.resume();
    else coro_queue::resume(h);
}

/// What a coroutine returning future<T> returns: the future links itself as
/// the target, and the coroutine starts once it is both linked and suspended
/// at its start (compilers differ on which comes first).
template <typename T>
struct future_starter {
    std::coroutine_handle<future_promise<T>> h;
};
}  // namespace detail

/// The promise type of coroutines returning future<T>.
template <typename T>
class future_promise : public async_promise<T> {
public:
    detail::future_starter<T> get_return_object() noexcept {
        return {std::coroutine_handle<future_promise>::from_promise(*this)};
    }
    struct start_awaiter {
        bool await_ready() const noexcept { return false; }
        bool await_suspend(std::coroutine_handle<future_promise> h) noexcept {
            if (!h.promise().m_linked) {
                h.promise().m_suspended = true;
                return true;
            }
            if (coro_queue::is_active()) return false;  // runs on at once, see detail::start_now
            coro_queue::resume(h);
            return true;
        }
        void await_resume() const noexcept {}
    };
    start_awaiter initial_suspend() noexcept { return {}; }

    bool m_linked = false;
    bool m_suspended = false;
};

template <typename T>
class [[nodiscard]] async {
public:
    using promise_type = async_promise<T>;
    using value_type = T;
    using handle = std::coroutine_handle<promise_type>;

    async() noexcept = default;
    explicit async(handle h) noexcept : m_h(h) {}
    async(async &&o) noexcept : m_h(std::exchange(o.m_h, {})) {}
    async &operator=(async &&o) noexcept {
        if (this != &o) {
            reset();
            m_h = std::exchange(o.m_h, {});
        }
        return *this;
    }
    ~async() { reset(); }

    /// Starts it with nobody waiting for the result (an exception is
    /// dropped). Discarding the suspend point runs it at once in normal mode
    /// or queues it in coro mode; co_await it to switch to it now.
    suspend_point<void> detach() noexcept { return std::coroutine_handle<>(std::exchange(m_h, {})); }

    /// Starts it at once (in coro mode too, nested in the caller until it
    /// first suspends); the future resolves with its result.
    future<T> start() { return future<T>(std::move(*this)); }
    future<T> operator()() { return start(); }

    /// Starts it; its result sets `p` (which is left empty). As detach(),
    /// the returned suspend point runs it when discarded (at once in normal
    /// mode, queued in coro mode) or switches to it when awaited.
    suspend_point<void> start(promise<T> &p) { return start(std::move(p)); }
    suspend_point<void> start(promise<T> &&p) {
        handle h = std::exchange(m_h, {});
        h.promise().m_target = std::move(p);
        return std::coroutine_handle<>(h);
    }

    /// Starts it and blocks the thread until it finished; its result.
    T join() {
        future<T> f(std::move(*this));
        if constexpr (std::is_void_v<T>) f.wait();
        else return std::forward<T>(f.wait());
    }

    /// The awaiter of `co_await coro` (COCLS's name).
    using co_awaiter = async_awaiter<T>;
    /// Runs it as a child of the awaiting coroutine (no queueing: the caller
    /// suspends and the child runs at once on this thread).
    async_awaiter<T> operator co_await() && noexcept { return async_awaiter<T>(std::move(*this)); }
    async_awaiter<T> operator co_await() & noexcept { return async_awaiter<T>(std::move(*this)); }

    /// Has it a frame (not started yet)?
    bool valid() const noexcept { return static_cast<bool>(m_h); }

private:
    friend class future<T>;
    friend class async_awaiter<T>;
    handle release() noexcept { return std::exchange(m_h, {}); }
    void reset() noexcept {
        if (m_h) std::exchange(m_h, {}).destroy();
    }

    handle m_h;
};

/// `co_await coro()`: the child starts by symmetric transfer and, when it
/// ends, transfers back to the caller.
template <typename T>
class [[nodiscard]] async_awaiter {
public:
    explicit async_awaiter(async<T> &&coro) noexcept : m_coro(std::move(coro)) {}
    bool await_ready() const noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> me) noexcept {
        auto h = m_coro.release();
        h.promise().m_target = m_future.get_promise();
        m_waiter.set_handle(me);
        m_future.subscribe(&m_waiter);
        return h;
    }
    T await_resume() {
        if constexpr (std::is_void_v<T>) m_future.value();
        else return std::forward<T>(m_future.value());
    }

private:
    async<T> m_coro;
    awaiter m_waiter;
    future<T> m_future;
};

template <typename T>
async<T> async_promise<T>::get_return_object() noexcept {
    return async<T>(std::coroutine_handle<async_promise<T>>::from_promise(*this));
}
inline async<void> async_promise<void>::get_return_object() noexcept {
    return async<void>(std::coroutine_handle<async_promise<void>>::from_promise(*this));
}

template <typename T>
future<T>::future(detail::future_starter<T> &&s) : m_chain(nullptr) {
    auto &p = s.h.promise();
    p.m_target = promise<T>(*this);
    if (p.m_suspended) detail::start_now(s.h);
    else p.m_linked = true;
}

template <typename T>
future<T>::future(async<T> &&coro) : m_chain(nullptr) {
    auto h = coro.release();
    h.promise().m_target = promise<T>(*this);
    detail::start_now(h);
}

}  // namespace cocls

#endif
