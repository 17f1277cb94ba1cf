// sync_wait(lp, t): runs task `t` on loop `lp`, running the loop on the
// calling thread until `t` ends, and returns its result (or rethrows). Other
// tasks of the loop run meanwhile. Throws
// std::errc::resource_deadlock_would_occur if the loop already runs on this
// thread (inside one of its tasks: co_await the task instead).
// sync_wait(lp, a) takes anything a task can co_await as well (when_all,
// when_any, a socket operation, a sleep, a cocls::future...): it awaits `a`
// in a task of its own and gives what `co_await a` gives: a value, void, a
// reference, or the exception rethrown. `a` is awaited in place (not moved),
// so a reference it gives stays valid as long as `a` does.
#ifndef COTHREAD_SYNC_WAIT_H_INCLUDED
#define COTHREAD_SYNC_WAIT_H_INCLUDED

#include <cothread.h>

#include <concepts>
#include <coroutine>
#include <memory>
#include <system_error>
#include <type_traits>
#include <utility>

#include "detail/hop.h"
#include "detail/in_place.h"
#include "detail/strand.h"
#include "loop.h"
#include "task.h"

namespace cothread {

namespace detail {

// The root of a sync_wait: the frame stays the caller's task's.
template <typename T>
struct sync_root : strand {
    bool finished = false;
    explicit sync_root(loop_core &l) : strand(l) {
        done = &finish;
        run = &begin;
    }
    std::coroutine_handle<> h;
    static void begin(inbox_node *n) noexcept {
        auto *self = static_cast<sync_root *>(n);
        self->start(self->h);
    }
    static void finish(strand *s) noexcept {
        auto *self = static_cast<sync_root *>(s);
        self->finished = true;
        self->end();
        self->owner->work_done();
        cot_loop_stop(self->native());
    }
};

/// What `co_await a` gives for an `A`.
template <typename A>
using await_result_t = decltype(get_awaiter(std::declval<A>()).await_resume());

/// Something with an awaiter (await_ready, await_suspend, await_resume):
/// a task awaits it, natively, through a hop or through a relay (task.h).
template <typename A>
concept awaitable = requires(awaiter_of<A> &aw) {
    { aw.await_ready() } -> std::convertible_to<bool>;
    aw.await_resume();
};

// A task<T&> does not exist: a reference travels as a pointer.
template <typename R>
using carried_t = std::conditional_t<std::is_reference_v<R>, std::remove_reference_t<R> *, std::remove_cv_t<R>>;

template <typename R, typename V>
carried_t<R> carry(V &&v) {
    if constexpr (std::is_reference_v<R>) return std::addressof(v);
    else return static_cast<V &&>(v);
}

/// The task that sync_wait runs for an awaitable: `a` is the caller's (a
/// reference in the frame), alive until sync_wait returns. A cocls or
/// foreign awaitable goes through the task's hop or relay, which await it
/// in place too.
template <typename A, typename R = await_result_t<A>>
task<carried_t<R>> await_in_task(A &&a) {
    if constexpr (native_awaitable<A>) {
        auto &&aw = get_awaiter(static_cast<A &&>(a));
        if constexpr (std::is_void_v<R>) co_await in_place<decltype(aw)>{aw};
        else co_return carry<R>(co_await in_place<decltype(aw)>{aw});
    } else {
        if constexpr (std::is_void_v<R>) co_await static_cast<A &&>(a);
        else co_return carry<R>(co_await static_cast<A &&>(a));
    }
}

}  // namespace detail

template <typename T>
T sync_wait(loop &lp, task<T> t) {
    if (lp.is_current()) throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur));
    if (!t) throw std::system_error(std::make_error_code(std::errc::invalid_argument));
    detail::sync_root<T> root(lp);
    root.h = t.handle();
    t.handle().promise().m_strand = &root;
    lp.add_work();
    lp.run_until([&] { return root.finished; }, &root);
    return t.handle().promise().result();
}

/// Awaits `a` (anything a task can co_await but a task itself) on `lp` and
/// returns what `co_await a` would (see above).
template <typename A>
    requires(!detail::is_task<std::remove_cvref_t<A>> && detail::awaitable<A>)
detail::await_result_t<A> sync_wait(loop &lp, A &&a) {
    using R = detail::await_result_t<A>;
    if constexpr (std::is_void_v<R>) sync_wait(lp, detail::await_in_task(std::forward<A>(a)));
    else if constexpr (std::is_reference_v<R>) return static_cast<R>(*sync_wait(lp, detail::await_in_task(std::forward<A>(a))));
    else return sync_wait(lp, detail::await_in_task(std::forward<A>(a)));
}

}  // namespace cothread

#endif
