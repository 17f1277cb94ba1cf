// detail::relay_awaiter: a task awaits an awaitable that is neither
// cothread's nor a cocls awaitable with a callback form (a cocls::mutex
// lock, another library's awaitable). A small coroutine, the relay, awaits it
// wherever it resumes, keeps the result, and hands the task back to the
// loop's thread (through the inbox if needed). One frame per await; not
// cancellable by the task's stop token.
#ifndef COTHREAD_DETAIL_RELAY_H_INCLUDED
#define COTHREAD_DETAIL_RELAY_H_INCLUDED

#include <cocls/coro_queue.h>

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "hop.h"
#include "in_place.h"
#include "strand.h"

namespace cothread::detail {

// The relay's coroutine type: starts at once, frees itself at its end after
// handing `hop` to the loop thread.
struct relay {
    struct promise_type {
        inbox_node *hop = nullptr;
        loop_core *lp = nullptr;
        std::coroutine_handle<> task;
        relay get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        struct final_awaiter {
            bool await_ready() const noexcept { return false; }
            void await_suspend(std::coroutine_handle<promise_type> h) noexcept {
                promise_type &p = h.promise();
                loop_core *lp = p.lp;
                inbox_node *hop = p.hop;
                std::coroutine_handle<> task = p.task;
                h.destroy();
                if (lp->is_current()) cocls::coro_queue::resume(task);  // coro mode: queued
                else lp->push(hop);
            }
            void await_resume() const noexcept {}
        };
        final_awaiter final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }  // the body catches all
    };
};

template <typename A>
class relay_awaiter : inbox_node {
    using result_t = decltype(get_awaiter(std::declval<A>()).await_resume());
    struct none {};
    template <typename R>
    struct slot_of {
        using type = std::optional<R>;
    };
    template <typename R>
    struct slot_of<R &> {
        using type = R *;
    };
    template <typename R>
    struct slot_of<R &&> {
        using type = R *;
    };

public:
    explicit relay_awaiter(A &&a) noexcept : m_a(std::forward<A>(a)) {}

    bool await_ready() const noexcept { return false; }
    template <typename P>
    void await_suspend(std::coroutine_handle<P> h) {
        run = &on_inbox;
        m_h = h;
        start(this, h.promise().get_strand()->owner);
    }
    result_t await_resume() {
        if (m_error) std::rethrow_exception(m_error);
        if constexpr (std::is_void_v<result_t>) return;
        else if constexpr (std::is_reference_v<result_t>) return static_cast<result_t>(*m_value);
        else return std::move(*m_value);
    }

private:
    static relay start(relay_awaiter *self, loop_core *lp) {
        auto &p = co_await promise_access{};
        p.hop = self;
        p.lp = lp;
        p.task = self->m_h;
        try {
            auto &&aw = get_awaiter(std::forward<A>(self->m_a));  // lives in this frame
            if constexpr (std::is_void_v<result_t>) {
                co_await in_place<decltype(aw)>{aw};
            } else if constexpr (std::is_reference_v<result_t>) {
                auto &&v = co_await in_place<decltype(aw)>{aw};  // named: an rvalue reference too
                self->m_value = std::addressof(v);
            } else {
                self->m_value.emplace(co_await in_place<decltype(aw)>{aw});
            }
        } catch (...) {
            self->m_error = std::current_exception();
        }
    }
    // Gives the relay its own promise without suspending.
    struct promise_access {
        relay::promise_type *p = nullptr;
        bool await_ready() const noexcept { return false; }
        bool await_suspend(std::coroutine_handle<relay::promise_type> h) noexcept {
            p = &h.promise();
            return false;
        }
        relay::promise_type &await_resume() const noexcept { return *p; }
    };
    static void on_inbox(inbox_node *n) noexcept { cocls::coro_queue::resume(static_cast<relay_awaiter *>(n)->m_h); }

    A &&m_a;
    std::coroutine_handle<> m_h;
    std::exception_ptr m_error;
    [[no_unique_address]] typename std::conditional_t<std::is_void_v<result_t>, std::type_identity<none>,
                                                      slot_of<result_t>>::type m_value;
};

}  // namespace cothread::detail

#endif
