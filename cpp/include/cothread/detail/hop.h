// detail::hop_awaiter: a task awaits a cocls awaitable (a future, a mutex...)
// and resumes on its loop's thread. cocls resumes a waiter on the thread that
// settles what it awaits; the hop takes the callback form of cocls's awaiters
// (await_suspend(resume_fn, ctx)) and, if that thread is not the loop's,
// passes the coroutine through the loop's inbox. No allocation: the awaiter
// is its own inbox node, in the suspended frame.
#ifndef COTHREAD_DETAIL_HOP_H_INCLUDED
#define COTHREAD_DETAIL_HOP_H_INCLUDED

#include <cocls/awaiter.h>
#include <cocls/coro_queue.h>

#include <concepts>
#include <coroutine>
#include <type_traits>
#include <utility>

#include "strand.h"

namespace cothread::detail {

/// The awaiter of `co_await a`, as the language would get it.
template <typename A>
decltype(auto) get_awaiter(A &&a) {
    if constexpr (requires { std::forward<A>(a).operator co_await(); }) return std::forward<A>(a).operator co_await();
    else if constexpr (requires { operator co_await(std::forward<A>(a)); }) return operator co_await(std::forward<A>(a));
    else return std::forward<A>(a);
}

template <typename A>
using awaiter_of = std::remove_cvref_t<decltype(get_awaiter(std::declval<A>()))>;

/// cocls awaiters: they derive from cocls::awaiter and have the callback form.
template <typename A>
concept cocls_awaitable = std::derived_from<awaiter_of<A>, cocls::awaiter>;

/// Awaits `A` (as co_await would: an lvalue awaiter by reference).
template <typename A>
class hop_awaiter : inbox_node {
    using got = decltype(get_awaiter(std::declval<A>()));
    using stored = std::conditional_t<std::is_lvalue_reference_v<got>, got, std::remove_cvref_t<got>>;

public:
    explicit hop_awaiter(A &&a) : m_aw(get_awaiter(std::forward<A>(a))) {}

    bool await_ready() { return m_aw.await_ready(); }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) {
        m_h = h;
        m_lp = h.promise().get_strand()->owner;
        run = &on_inbox;
        return m_aw.await_suspend(&on_resume, this);  // false: ready, go on
    }
    decltype(auto) await_resume() { return m_aw.await_resume(); }

private:
    // On the thread that settled the awaitable.
    static cocls::suspend_point<void> on_resume(cocls::awaiter *, void *ctx) noexcept {
        auto *self = static_cast<hop_awaiter *>(ctx);
        if (self->m_lp->is_current()) return self->m_h;  // resumed by this thread's mode
        self->m_lp->push(self);
        return {};
    }
    static void on_inbox(inbox_node *n) noexcept { cocls::coro_queue::resume(static_cast<hop_awaiter *>(n)->m_h); }

    stored m_aw;
    std::coroutine_handle<> m_h;
    loop_core *m_lp = nullptr;
};

}  // namespace cothread::detail

#endif
