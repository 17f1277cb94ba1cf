// detail::hop_awaiter: a task awaits a cocls awaitable (a future, a mutex...)
// and resumes on its loop's thread. cocls resumes a waiter on the thread that
// settles what it awaits; the hop takes the callback form of cocls's awaiters
// (await_suspend(resume_fn, ctx)) and, if that thread is not the loop's,
// passes the coroutine through the loop's inbox.
//
// A cocls::future lvalue awaited by a root whose stop token can fire is
// awaited through a heap copy of its awaiter: on stop the task goes on at once with
// std::errc::operation_canceled and leaves the copy subscribed (cocls chains
// cannot unsubscribe); the copy frees itself when the future resolves. The
// future must outlive its resolution, as any pending cocls future. A
// temporary future and other cocls awaitables wait in the frame (no
// allocation) and are not cancelled.
#ifndef COTHREAD_DETAIL_HOP_H_INCLUDED
#define COTHREAD_DETAIL_HOP_H_INCLUDED

#include <cocls/awaiter.h>
#include <cocls/coro_queue.h>
#include <cocls/future.h>

#include <atomic>
#include <concepts>
#include <coroutine>
#include <optional>
#include <stop_token>
#include <type_traits>
#include <utility>

#include "../error.h"
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

/// cocls awaiters with the callback form (a future's, a shared future's...).
template <typename A>
concept cocls_awaitable = std::derived_from<awaiter_of<A>, cocls::awaiter> &&
                          requires(awaiter_of<A> &aw, cocls::awaiter::resume_fn fn, void *ctx) {
                              { aw.await_suspend(fn, ctx) } -> std::convertible_to<bool>;
                          };

template <typename Aw>
inline constexpr bool is_future_awaiter = false;
template <typename T>
inline constexpr bool is_future_awaiter<cocls::future_awaiter<T>> = true;

/// Awaits `A` (as co_await would: an lvalue awaiter by reference).
template <typename A>
class hop_awaiter : inbox_node {
    using got = decltype(get_awaiter(std::declval<A>()));
    using stored = std::conditional_t<std::is_lvalue_reference_v<got>, got, std::remove_cvref_t<got>>;
    // A future's awaiter holds only a reference to the future: a copy of
    // it may outlive the frame, if the future does (an lvalue; a temporary,
    // as in `co_await lp.spawn(t())`, dies with the await: that one waits).
    static constexpr bool cancellable = is_future_awaiter<stored> && std::is_lvalue_reference_v<A>;

public:
    explicit hop_awaiter(A &&a) : m_aw(get_awaiter(std::forward<A>(a))) {}

    bool await_ready() { return m_aw.await_ready(); }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) {
        strand *s = h.promise().get_strand();
        m_h = h;
        m_lp = s->owner;
        run = &on_inbox;
        if constexpr (cancellable) {
            std::stop_token tok = s->token();
            if (tok.stop_possible()) return suspend_cancellable(std::move(tok));
        }
        return m_aw.await_suspend(&on_resume, this);  // false: ready, go on
    }
    decltype(auto) await_resume() {
        if constexpr (cancellable) {
            if (m_stopped) throw_error(COT_ECANCELED);
            if (m_copy) {
                m_stop.reset();  // waits for a canceller running elsewhere
                copy *c = std::exchange(m_copy, nullptr);
                if (c->state.load(std::memory_order_acquire) == stopped) throw_error(COT_ECANCELED);  // c is orphaned
                struct free_after {
                    copy *c;
                    ~free_after() { delete c; }
                } f{c};
                return c->aw.await_resume();  // the value lives in the future
            }
        }
        return m_aw.await_resume();
    }

private:
    enum : int { waiting, settled, stopped };
    // The heap copy of a future's awaiter; its node hops a settled wait.
    struct copy : inbox_node {
        explicit copy(stored &&a) : aw(std::move(a)) {}
        stored aw;
        std::atomic<int> state{waiting};
        std::coroutine_handle<> h;
        loop_core *lp = nullptr;
    };
    struct canceller {
        hop_awaiter *self;
        void operator()() noexcept {
            int expect = waiting;
            if (self->m_copy->state.compare_exchange_strong(expect, stopped, std::memory_order_acq_rel))
                self->m_lp->push(self);  // resumes at the next turn, never inside request_stop
        }
    };

    bool suspend_cancellable(std::stop_token tok) {
        if (tok.stop_requested()) {
            m_stopped = true;
            return false;
        }
        m_copy = new copy(std::move(m_aw));
        m_copy->h = m_h;
        m_copy->lp = m_lp;
        m_copy->run = &copy_on_inbox;
        if (!m_copy->aw.await_suspend(&copy_on_resume, m_copy)) return false;  // ready
        m_stop.emplace(std::move(tok), canceller{this});
        return true;
    }

    // On the thread that settled the awaitable.
    static cocls::suspend_point<void> on_resume(cocls::awaiter *, void *ctx) noexcept {
        auto *self = static_cast<hop_awaiter *>(ctx);
        if (self->m_lp->is_current()) return self->m_h;  // resumed by this thread's mode
        self->m_lp->push(self);
        return {};
    }
    static cocls::suspend_point<void> copy_on_resume(cocls::awaiter *, void *ctx) noexcept {
        auto *c = static_cast<copy *>(ctx);
        int expect = waiting;
        if (!c->state.compare_exchange_strong(expect, settled, std::memory_order_acq_rel)) {
            delete c;  // stopped first: the task went on without it
            return {};
        }
        if (c->lp->is_current()) return c->h;
        c->lp->push(c);
        return {};
    }
    static void on_inbox(inbox_node *n) noexcept { cocls::coro_queue::resume(static_cast<hop_awaiter *>(n)->m_h); }
    static void copy_on_inbox(inbox_node *n) noexcept { cocls::coro_queue::resume(static_cast<copy *>(n)->h); }

    stored m_aw;
    std::coroutine_handle<> m_h;
    loop_core *m_lp = nullptr;
    copy *m_copy = nullptr;
    bool m_stopped = false;
    std::optional<std::stop_callback<canceller>> m_stop;
};

}  // namespace cothread::detail

#endif
