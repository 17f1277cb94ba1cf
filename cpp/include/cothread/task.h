// task<T>: a lazy coroutine that runs on a cothread::loop. It starts when
// awaited by another task (at once, on the same strand, no new loop task;
// the hand-off goes through detail::trampoline, so any depth of nested awaits
// runs in constant stack, whatever the compiler does with symmetric
// transfer) or when a root starts it:
// loop::spawn, loop::spawn_detached, sync_wait. Move-only; destroying a task
// that never started frees its frame.
//
// Writing an awaitable for cothread::task
// ----------------------------------------
// A task's promise passes an awaitable through unchanged if its type (or its
// operator co_await's result) has a member `using cothread_awaitable = void;`.
// Otherwise cocls awaitables with a callback form (futures) are awaited
// through a hop back to the loop thread (detail/hop.h), and anything else
// (a cocls mutex lock, another library's awaitable) through a relay
// coroutine that awaits it and then hops (detail/relay.h, one frame).
// In `template <class P> bool await_suspend(std::coroutine_handle<P> h)`:
//   detail::strand *s = h.promise().get_strand();
//   s->native()                 the cot_loop* to start the C operation on;
//   s->token()                  the root's std::stop_token (register a
//                               std::stop_callback if stop_possible());
//   s->owner->is_current()      is this the loop thread? (a canceller may run
//                               on any thread, inside request_stop);
//   s->owner->push(node)        runs node->run(node) on the loop thread, from
//                               any thread (a detail::inbox_node, first
//                               member `next`). A canceller's node may run
//                               after the operation ended: carry a
//                               generation-checked handle (a cot_req, a
//                               socket key), not a pointer to the awaiter;
// complete on the loop thread and resume with cocls::coro_queue::resume(h).
// A completion must come exactly once per suspension: the frame is not
// destroyed while its operation is pending (~loop stops the root and waits).
// Every root's token can fire (~loop uses it), so an awaiter registers its
// stop_callback only when it suspends; timer.h's sleep_awaiter is a short
// example. A new root (a when_* child) is a detail::strand made with the
// parent's token (stopping the parent stops it), `done` set, then start(h).
#ifndef COTHREAD_TASK_H_INCLUDED
#define COTHREAD_TASK_H_INCLUDED

#include <cocls/coro_queue.h>

#include <coroutine>
#include <exception>
#include <stop_token>
#include <type_traits>
#include <utility>
#include <variant>

#include "detail/hop.h"
#include "detail/relay.h"
#include "detail/strand.h"
#include "detail/trampoline.h"

namespace cothread {

template <typename T = void>
class task;

namespace detail {

template <typename A>
concept native_awaitable = requires { typename awaiter_of<A>::cothread_awaitable; };

class task_promise_base {
public:
    std::suspend_always initial_suspend() noexcept { return {}; }

    struct final_awaiter {
        bool await_ready() const noexcept { return false; }
        template <typename P>
        void await_suspend(std::coroutine_handle<P> h) noexcept {
            task_promise_base &p = h.promise();
            if (p.m_continuation) trampoline::run(p.m_continuation);
            else p.m_strand->done(p.m_strand);  // a root: may destroy this frame
        }
        void await_resume() const noexcept {}
    };
    final_awaiter final_suspend() noexcept { return {}; }

    template <typename A>
    decltype(auto) await_transform(A &&a) {
        if constexpr (native_awaitable<A>) {
            return std::forward<A>(a);
        } else if constexpr (cocls_awaitable<A>) {
            return hop_awaiter<A>(std::forward<A>(a));
        } else {
            return relay_awaiter<A>(std::forward<A>(a));
        }
    }

    /// The strand this task runs on (set when it starts).
    strand *get_strand() const noexcept { return m_strand; }

    strand *m_strand = nullptr;
    std::coroutine_handle<> m_continuation;
};

template <typename T>
class task_promise : public task_promise_base {
public:
    task<T> get_return_object() noexcept;
    template <typename U = T>
        requires std::constructible_from<T, U>
    void return_value(U &&v) {
        m_result.template emplace<1>(std::forward<U>(v));
    }
    void unhandled_exception() noexcept { m_result.template emplace<2>(std::current_exception()); }

    /// The result: the value (moved out) or the exception rethrown.
    T result() {
        if (m_result.index() == 2) std::rethrow_exception(std::get<2>(m_result));
        return std::move(std::get<1>(m_result));
    }

private:
    std::variant<std::monostate, T, std::exception_ptr> m_result;
};

template <>
class task_promise<void> : public task_promise_base {
public:
    task<void> get_return_object() noexcept;
    void return_void() noexcept {}
    void unhandled_exception() noexcept { m_error = std::current_exception(); }
    void result() {
        if (m_error) std::rethrow_exception(m_error);
    }

private:
    std::exception_ptr m_error;
};

}  // namespace detail

template <typename T>
class [[nodiscard]] task {
public:
    static_assert(!std::is_reference_v<T>, "task<T&> is not supported: return a pointer or std::reference_wrapper");
    using promise_type = detail::task_promise<T>;
    using handle_type = std::coroutine_handle<promise_type>;

    task() noexcept = default;
    explicit task(handle_type h) noexcept : m_h(h) {}
    task(task &&o) noexcept : m_h(std::exchange(o.m_h, {})) {}
    task &operator=(task &&o) noexcept {
        if (this != &o) {
            if (m_h) m_h.destroy();
            m_h = std::exchange(o.m_h, {});
        }
        return *this;
    }
    ~task() {
        if (m_h) m_h.destroy();
    }

    explicit operator bool() const noexcept { return static_cast<bool>(m_h); }
    /// Gives up the frame (the caller destroys it).
    handle_type release() noexcept { return std::exchange(m_h, {}); }
    handle_type handle() const noexcept { return m_h; }

    class awaiter {
    public:
        using cothread_awaitable = void;
        explicit awaiter(handle_type h) noexcept : m_h(h) {}
        bool await_ready() const noexcept { return false; }
        template <typename P>
        void await_suspend(std::coroutine_handle<P> parent) noexcept {
            static_assert(std::is_base_of_v<detail::task_promise_base, P>,
                          "co_await of a cothread::task works inside a cothread::task only; "
                          "elsewhere use loop::spawn(task) and await the future it returns");
            if constexpr (std::is_base_of_v<detail::task_promise_base, P>) {
                m_h.promise().m_strand = parent.promise().m_strand;
                m_h.promise().m_continuation = parent;
                detail::trampoline::run(m_h);
            }
        }
        T await_resume() { return m_h.promise().result(); }

    private:
        handle_type m_h;
    };
    /// Runs the task on the awaiting task's strand (the task stays owned by
    /// this object, which must live until the await ends: a temporary does).
    awaiter operator co_await() && noexcept { return awaiter(m_h); }
    awaiter operator co_await() & noexcept { return awaiter(m_h); }

private:
    handle_type m_h;
};

namespace detail {
template <typename T>
task<T> task_promise<T>::get_return_object() noexcept {
    return task<T>(std::coroutine_handle<task_promise<T>>::from_promise(*this));
}
inline task<void> task_promise<void>::get_return_object() noexcept {
    return task<void>(std::coroutine_handle<task_promise<void>>::from_promise(*this));
}

/// Is A a task<T>?
template <typename A>
inline constexpr bool is_task = false;
template <typename T>
inline constexpr bool is_task<task<T>> = true;

/// The awaitable of this_task::stop_token(): never suspends.
struct stop_token_awaiter {
    using cothread_awaitable = void;
    std::stop_token token;
    bool await_ready() const noexcept { return false; }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        token = h.promise().get_strand()->token();
        return false;
    }
    std::stop_token await_resume() noexcept { return std::move(token); }
};
}  // namespace detail

namespace this_task {
/// `co_await this_task::stop_token()`: the stop token of the running root
/// (what every operation of this task uses). Does not suspend.
inline detail::stop_token_awaiter stop_token() noexcept { return {}; }
}  // namespace this_task

}  // namespace cothread

#endif
