// Resumption policies: where a coroutine continues once what it awaited is
// ready. By default it is resumed by the thread that made it ready, by that
// thread's mode (at once in normal mode, queued in coro mode). A policy
// wraps the awaitable of a co_await and changes that, only when the
// coroutine really had to wait (a ready awaitable goes on at once, here):
//
//   co_await pool(x)         on a thread of `pool` (thread_pool.h)
//   co_await parallel(x)     on a new detached thread
//   co_await immediately(x)  at once, nested in the resumer's call, even when
//                            that thread is in coro mode
//
// and for coroutines a call already made ready (a suspend point):
//
//   pool.resume(sp)          on pool threads (thread_pool.h)
//   parallel_resume(sp)      on a new detached thread
//
// The awaiters of cocls (future's and those offering COCLS's
// `await_suspend(resume_fn, ctx)`) let the resumer apply the policy inside the
// call that made them ready; any other awaiter gets a relay coroutine (one
// heap allocation) that applies it when the resumer resumes the relay (by its
// mode: in coro mode `immediately` then waits for the resumer's coroutine to
// suspend). See detail/policy_awaiter.h.
#ifndef COCLS_RESUME_H_INCLUDED
#define COCLS_RESUME_H_INCLUDED

#include <coroutine>
#include <exception>
#include <system_error>
#include <thread>
#include <utility>

#include "coro_queue.h"
#include "detail/policy_awaiter.h"
#include "suspend_point.h"

// What COCLS's resume.h also brings in (programs written for it may rely on it).
#include "awaiter.h"
#include "generics.h"

namespace cocls {

namespace detail {

/// Resumes `h` on a new detached thread, in coro mode; if no thread can be
/// started, returns it to be resumed by the caller's mode instead.
inline suspend_point<void> resume_on_new_thread(std::coroutine_handle<> h) noexcept {
    try {
        std::thread([h] { coro_queue::resume(h); }).detach();
        return {};
    } catch (...) {
        return h;
    }
}

struct parallel_policy {
    suspend_point<void> resume(std::coroutine_handle<> h) const noexcept { return resume_on_new_thread(h); }
};

struct immediate_policy {
    // Nested: the coroutine runs now, on the resumer's stack, until it
    // suspends; in normal mode the thread enters coro mode for it.
    suspend_point<void> resume(std::coroutine_handle<> h) const noexcept {
        if (coro_queue::is_active()) h.resume();
        else coro_queue::resume(h);
        return {};
    }
};

}  // namespace detail

/// `co_await parallel(x)`: if `x` has to wait, the coroutine resumes on a new
/// detached thread (in coro mode), so it runs in parallel with the thread
/// that made `x` ready. `x` may be any awaitable (held by reference when it
/// is an lvalue awaiter, else its awaiter is held by value).
template <typename Awt>
class [[nodiscard]] parallel : public detail::policy_awaiter<Awt, detail::parallel_policy> {
public:
    template <typename A>
    explicit parallel(A &&x) : detail::policy_awaiter<Awt, detail::parallel_policy>(std::forward<A>(x), {}) {}
};
template <typename A>
parallel(A &&) -> parallel<detail::awaiter_storage_t<A>>;

/// `co_await immediately(x)`: if `x` has to wait, the coroutine resumes at
/// once when `x` becomes ready, inside the call that made it ready (nested on
/// that thread's stack, even in coro mode), and the resumer goes on when the
/// coroutine suspends or ends. Each nesting takes stack: do not chain many.
template <typename Awt>
class [[nodiscard]] immediately : public detail::policy_awaiter<Awt, detail::immediate_policy> {
public:
    template <typename A>
    explicit immediately(A &&x) : detail::policy_awaiter<Awt, detail::immediate_policy>(std::forward<A>(x), {}) {}
};
template <typename A>
immediately(A &&) -> immediately<detail::awaiter_storage_t<A>>;

/// Resumes the coroutines `sp` holds on one new detached thread (in order,
/// in coro mode) instead of this one; returns the suspend point's value.
/// `parallel_resume(p(42))` sets the promise here and resumes its waiter on
/// the new thread. If no thread can be started they resume here.
template <typename T>
T parallel_resume(suspend_point<T> &sp) {
    if (!sp.empty()) {
        suspend_point<void> ready;
        ready << sp;
        try {
            std::thread([r = std::move(ready)]() mutable { r.flush(); }).detach();
        } catch (const std::system_error &) {
            // `ready` was not moved into a thread: its coroutines resume here.
        }
    }
    if constexpr (!std::is_void_v<T>) return sp.value();
}
template <typename T>
T parallel_resume(suspend_point<T> &&sp) {
    return parallel_resume(sp);
}

}  // namespace cocls

#endif
