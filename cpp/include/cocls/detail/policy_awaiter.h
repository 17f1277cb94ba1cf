// Resumption policies (`co_await pool(x)`, `co_await parallel(x)`,
// `co_await immediately(x)`): an awaiter wrapping the awaiter of `x` that
// decides where the coroutine resumes once `x` had to wait. If `x` is ready,
// nothing changes: the coroutine goes on at once, on its thread.
//
// The wrapped awaiter learns that it should call the policy, not resume the
// coroutine, in one of two ways:
//  - it offers `bool await_suspend(awaiter::resume_fn fn, void *ctx)` (the
//    COCLS protocol: subscribe a callback instead of a coroutine; false means
//    ready, nothing subscribed). The resumer then calls the policy itself,
//    inside the call that made `x` ready (e.g. inside `p(42)`). A future is
//    awaited this way through its public subscribe().
//  - otherwise it is given a relay: a tiny coroutine whose only job is to call
//    the policy when resumed. The resumer resumes the relay by its thread's
//    mode (queued in coro mode), so the policy runs a little later than with
//    the protocol; for `pool` and `parallel` that makes no difference. The
//    relay's frame is allocated on the heap.
#ifndef COCLS_DETAIL_POLICY_AWAITER_H_INCLUDED
#define COCLS_DETAIL_POLICY_AWAITER_H_INCLUDED

#include <concepts>
#include <coroutine>
#include <exception>
#include <type_traits>
#include <utility>

#include "../awaiter.h"
#include "../coro_queue.h"
#include "../future.h"
#include "../generics.h"
#include "../suspend_point.h"

namespace cocls::detail {

/// The awaiter `co_await a` would use (see get_awaiter); futures get theirs
/// below.
template <typename A>
decltype(auto) awaiter_for(A &&a) {
    return get_awaiter(std::forward<A>(a));
}

/// The awaiter a policy uses for a future: the future's public subscription,
/// so that the policy runs inside the call that sets the promise.
template <typename T>
class [[nodiscard]] future_callback_awaiter {
public:
    explicit future_callback_awaiter(future<T> &f) noexcept : m_future(f) {}
    bool await_ready() const noexcept { return m_future.ready(); }
    bool await_suspend(awaiter::resume_fn fn, void *ctx) noexcept {
        m_node.set_resume_fn(fn, ctx);
        return m_future.subscribe(&m_node);
    }
    decltype(auto) await_resume() { return m_future.value(); }

private:
    future<T> &m_future;
    awaiter m_node;
};

template <typename T>
future_callback_awaiter<T> awaiter_for(future<T> &f) noexcept {
    return future_callback_awaiter<T>(f);
}
template <typename T>
future_callback_awaiter<T> awaiter_for(future<T> &&f) noexcept {
    return future_callback_awaiter<T>(f);
}

/// How a wrapper keeps the awaiter of `A`: by value when it is a temporary (a
/// returned awaiter, or an rvalue awaitable that is its own awaiter), by
/// reference when it is a named awaiter.
template <typename A>
using awaiter_storage_t = std::conditional_t<std::is_lvalue_reference_v<decltype(awaiter_for(std::declval<A>()))>,
                                             decltype(awaiter_for(std::declval<A>())),
                                             std::remove_cvref_t<decltype(awaiter_for(std::declval<A>()))>>;

/// The result of `co_await a`.
template <typename A>
using await_result_t = decltype(std::declval<awaiter_storage_t<A> &>().await_resume());

/// The awaiter takes a callback instead of a coroutine (see the top).
template <typename Awt>
concept callback_suspendable = requires(Awt &a, awaiter::resume_fn fn, void *ctx) {
    { a.await_suspend(fn, ctx) } -> std::convertible_to<bool>;
};

/// The relay: resumed by the wrapped awaiter, it calls `fn(nullptr, ctx)` and
/// stays suspended; its owner destroys it.
class relay {
public:
    struct promise_type {
        relay get_return_object() noexcept {
            return relay(std::coroutine_handle<promise_type>::from_promise(*this));
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };

    relay() = default;
    relay(relay &&o) noexcept : m_h(std::exchange(o.m_h, {})) {}
    relay &operator=(relay &&o) noexcept {
        std::swap(m_h, o.m_h);
        return *this;
    }
    ~relay() {
        if (m_h) m_h.destroy();
    }

    /// A suspended relay that calls `fn(nullptr, ctx)` when resumed.
    static relay make(awaiter::resume_fn fn, void *ctx) { return body(fn, ctx); }
    std::coroutine_handle<> handle() const noexcept { return m_h; }

private:
    explicit relay(std::coroutine_handle<promise_type> h) noexcept : m_h(h) {}

    // Runs the policy once the relay is suspended: the policy may let the
    // owner destroy the relay, so nothing in the frame is touched after it.
    struct fire {
        awaiter::resume_fn m_fn;
        void *m_ctx;
        bool await_ready() const noexcept { return false; }
        std::coroutine_handle<> await_suspend(std::coroutine_handle<>) noexcept {
            awaiter::resume_fn fn = m_fn;
            void *ctx = m_ctx;
            suspend_point<void> ready = fn(nullptr, ctx);
            std::coroutine_handle<> next = ready.take();  // the rest, if any, by the thread's mode
            return next ? next : coro_queue::next();
        }
        void await_resume() const noexcept {}
    };

    static relay body(awaiter::resume_fn fn, void *ctx) { co_await fire{fn, ctx}; }

    std::coroutine_handle<promise_type> m_h;
};

/// `co_await policy(x)`: awaits `x` through its awaiter `Awt`; if that had to
/// wait, `Policy::resume(h)` (called on the thread that made `x` ready, or by
/// the relay) decides where the coroutine `h` resumes. Policy is a small
/// copyable object: `suspend_point<void> resume(std::coroutine_handle<>) const
/// noexcept`, which must not touch the awaiter (it may be gone once `h` runs).
template <typename Awt, typename Policy>
class [[nodiscard]] policy_awaiter {
public:
    template <typename A>
    policy_awaiter(A &&a, Policy policy) : m_policy(policy), m_awt(awaiter_for(std::forward<A>(a))) {}
    policy_awaiter(const policy_awaiter &) = delete;
    policy_awaiter &operator=(const policy_awaiter &) = delete;

    bool await_ready() { return m_awt.await_ready(); }

    /// Suspends (unless `x` turns out ready: then the coroutine goes on here)
    /// and switches to the next coroutine queued on this thread.
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) {
        m_h = h;
        if constexpr (callback_suspendable<Awt>) {
            // Subscribed: the policy may run (elsewhere) before this returns.
            return m_awt.await_suspend(&on_ready, this) ? coro_queue::next() : h;
        } else {
            m_relay = relay::make(&on_ready, this);
            std::coroutine_handle<> r = m_relay.handle();
            using result = decltype(m_awt.await_suspend(r));
            if constexpr (std::is_void_v<result>) {
                m_awt.await_suspend(r);
                return coro_queue::next();
            } else if constexpr (std::is_same_v<result, bool>) {
                return m_awt.await_suspend(r) ? coro_queue::next() : h;
            } else {
                std::coroutine_handle<> next = m_awt.await_suspend(r);
                // Asked to resume the relay at once: `x` is ready, go on here.
                return next == r ? h : next;
            }
        }
    }

    decltype(auto) await_resume() { return m_awt.await_resume(); }

private:
    static suspend_point<void> on_ready(awaiter *, void *ctx) noexcept {
        auto *self = static_cast<policy_awaiter *>(ctx);
        Policy policy = self->m_policy;  // copied out: `self` may go away
        return policy.resume(self->m_h);
    }

    Policy m_policy;
    std::coroutine_handle<> m_h;
    relay m_relay;
    Awt m_awt;
};

}  // namespace cocls::detail

#endif
