// detail::in_place: awaits an awaiter where it is. g++ 12 copies an lvalue
// operand of co_await, so a reference into the awaiter (its result, a
// member) would dangle; awaiting `in_place<decltype(aw)>{aw}` forwards to
// the original instead. Used by relay.h and sync_wait.h.
#ifndef COTHREAD_DETAIL_IN_PLACE_H_INCLUDED
#define COTHREAD_DETAIL_IN_PLACE_H_INCLUDED

#include <coroutine>
#include <utility>

namespace cothread::detail {

template <typename Aw>
struct in_place {
    using cothread_awaitable = void;
    Aw &aw;
    bool await_ready() { return aw.await_ready(); }
    template <typename P>
    decltype(auto) await_suspend(std::coroutine_handle<P> h) {
        return aw.await_suspend(h);
    }
    decltype(auto) await_resume() { return std::forward<Aw>(aw).await_resume(); }
};

}  // namespace cothread::detail

#endif
