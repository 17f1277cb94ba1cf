// detail::when_state: what when_all and when_any share. Each argument becomes
// a child task (when_wrap) that stores its result in the state; each child
// runs on its own strand (when_child), whose stop source is linked to the
// parent's token. The state lives in the parent's awaiter, in the parent's
// frame; every child end comes to it on the loop thread. The parent resumes
// only when every started child has ended: losers are joined, never
// abandoned, so the references the children hold stay valid.
#ifndef COTHREAD_DETAIL_WHEN_H_INCLUDED
#define COTHREAD_DETAIL_WHEN_H_INCLUDED

#include <cocls/async.h>
#include <cocls/future.h>

#include <coroutine>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "../error.h"
#include "../task.h"
#include "hop.h"
#include "strand.h"
#include "trampoline.h"

namespace cothread::detail {

template <typename A>
inline constexpr bool is_async = false;
template <typename T>
inline constexpr bool is_async<cocls::async<T>> = true;

template <typename A>
inline constexpr bool is_cocls_future = false;
template <typename T>
inline constexpr bool is_cocls_future<cocls::future<T>> = true;

template <typename A>
inline constexpr bool is_task_vector = false;
template <typename T>
inline constexpr bool is_task_vector<std::vector<task<T>>> = true;

template <typename T>
using void_to_monostate = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <typename A, bool = is_async<std::remove_cvref_t<A>>>
struct when_value {  // what `co_await a` gives in a task
    using type = std::remove_cvref_t<decltype(std::declval<awaiter_of<A> &>().await_resume())>;
};
template <typename A>
struct when_value<A, true> {  // an async is awaited as a future of its type
    using type = std::remove_cvref_t<typename std::remove_cvref_t<A>::value_type>;
};
/// The result of argument `A` in a when_*: void becomes std::monostate.
template <typename A>
using when_value_t = void_to_monostate<typename when_value<A>::type>;

/// The child task of argument `a`: awaits it, stores the result in `out`.
/// `A` is a reference for an lvalue (a cocls future: awaited in place, so a
/// stop ends this wait at once) and a value otherwise (moved into the frame).
template <typename A, typename R>
task<void> when_wrap(A a, std::optional<R> &out) {
    if constexpr (is_async<std::remove_cvref_t<A>>) {
        // A temporary future: cocls cannot cancel it, so it is waited for.
        using T = typename std::remove_cvref_t<A>::value_type;
        if constexpr (std::is_void_v<T>) {
            co_await cocls::future<T>(std::move(a));
            out.emplace();
        } else {
            out.emplace(co_await cocls::future<T>(std::move(a)));
        }
    } else if constexpr (std::is_void_v<typename when_value<A>::type>) {
        co_await static_cast<A &&>(a);
        out.emplace();
    } else {
        out.emplace(co_await static_cast<A &&>(a));
    }
}

class when_state;

/// A child's root: owns the child task's frame until the task ends.
struct when_child final : strand {
    when_child(loop_core &lp, std::stop_token parent, cothread::task<void> &&t, when_state *st, std::size_t i)
        : strand(lp, std::move(parent)), h(t.release()), state(st), index(i) {
        h.promise().m_strand = this;
        done = &finish;
    }
    ~when_child() {
        if (h) h.destroy();  // never started
    }
    static void finish(strand *s) noexcept;

    cothread::task<void>::handle_type h;
    when_state *state;
    std::size_t index;
};

class when_state {
public:
    when_state(when_state &&) noexcept = default;  // before the await only
    when_state &operator=(when_state &&) = delete;

protected:
    static constexpr std::size_t npos = std::size_t(-1);

    explicit when_state(bool any) noexcept : m_any(any) {}

    /// Makes the children, then starts them in order, each until it first
    /// suspends; stops starting once a when_any has a winner or a when_all
    /// has failed. Returns whether the parent must wait.
    template <typename P>
    bool start(std::coroutine_handle<P> parent) {
        static_assert(std::is_base_of_v<task_promise_base, P>, "when_all and when_any are awaited by a cothread::task");
        strand *ps = parent.promise().get_strand();
        m_parent = parent;
        m_parent_token = ps->token();
        std::size_t n = m_tasks.size();
        m_children.reserve(n);  // everything that may throw comes before any start
        for (std::size_t i = 0; i < n; i++)
            m_children.push_back(std::make_unique<when_child>(*ps->owner, m_parent_token, std::move(m_tasks[i]), this, i));
        m_remaining = n;
        m_starting = true;
        for (std::size_t i = 0; i < n; i++) {
            if (m_stopping) {
                m_remaining -= n - i;  // never started: freed with the state
                break;
            }
            when_child &c = *m_children[i];
            c.attach();
            trampoline::run_now(c.h);
        }
        m_starting = false;
        return m_remaining > 0;
    }

    /// Rethrows the error that ended the wait (when_all's first, when_any's winner's).
    void check() const {
        if (m_error) std::rethrow_exception(m_error);
    }

    std::vector<task<void>> m_tasks;  // the children, before the start
    std::size_t m_winner = npos;      // when_any: who ended first

private:
    friend struct when_child;

    // Child i ended (loop thread). The decision and the stops come before
    // the count: the last end resumes the parent, which frees the state.
    void ended(std::size_t i, std::exception_ptr e) noexcept {
        if (!m_stopping && (m_any || e)) {
            m_stopping = true;
            m_winner = i;
            m_error = std::move(e);
            if (m_any && m_error && m_parent_token.stop_requested())
                m_error = std::make_exception_ptr(std::system_error(make_error(COT_ECANCELED)));
            for (std::size_t j = 0; j < m_children.size(); j++)
                if (j != i) m_children[j]->stop.request_stop();
        }
        if (--m_remaining == 0 && !m_starting) trampoline::run(m_parent);
    }

    bool m_any;
    bool m_starting = false;
    bool m_stopping = false;
    std::size_t m_remaining = 0;
    std::exception_ptr m_error;
    std::coroutine_handle<> m_parent;
    std::stop_token m_parent_token;
    std::vector<std::unique_ptr<when_child>> m_children;
};

inline void when_child::finish(strand *s) noexcept {
    auto *self = static_cast<when_child *>(s);
    std::exception_ptr e;
    try {
        self->h.promise().result();
    } catch (...) {
        e = std::current_exception();
    }
    std::exchange(self->h, {}).destroy();
    self->end();
    self->state->ended(self->index, std::move(e));  // may free `self`: last
}

/// The awaiter of a variadic when_*: the arguments (references for lvalues,
/// values otherwise) until it is awaited, then the results, in tuples. It may
/// be moved until then (g++ moves an awaiter); the children are made at the
/// await, when it stays put.
template <bool Any, typename... A>
class when_tuple : public when_state {
public:
    template <typename... B>
    explicit when_tuple(B &&...b) : when_state(Any), m_args(std::forward<B>(b)...) {}
    when_tuple(when_tuple &&) = default;

    using cothread_awaitable = void;
    bool await_ready() const noexcept { return false; }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) {
        m_tasks.reserve(sizeof...(A));
        wrap(std::index_sequence_for<A...>{});
        return start(h);
    }
    auto await_resume() {
        check();
        if constexpr (Any) return pick(std::index_sequence_for<A...>{});
        else return std::apply([](auto &...o) { return std::tuple<when_value_t<A>...>(std::move(*o)...); }, m_results);
    }

private:
    template <std::size_t... I>
    void wrap(std::index_sequence<I...>) {
        (m_tasks.push_back(when_wrap<A, when_value_t<A>>(static_cast<A &&>(std::get<I>(m_args)), std::get<I>(m_results))), ...);
    }
    template <std::size_t... I>
    std::variant<when_value_t<A>...> pick(std::index_sequence<I...>) {
        std::optional<std::variant<when_value_t<A>...>> v;
        ((m_winner == I ? (void)v.emplace(std::in_place_index<I>, std::move(*std::get<I>(m_results))) : void()), ...);
        return std::move(*v);
    }

    std::tuple<A...> m_args;
    std::tuple<std::optional<when_value_t<A>>...> m_results;
};

/// The awaiter of a vector when_*: the tasks, then the results, in vectors.
template <bool Any, typename T>
class when_vector : public when_state {
    using R = void_to_monostate<T>;

public:
    explicit when_vector(std::vector<cothread::task<T>> &&v) : when_state(Any), m_args(std::move(v)) {
        if (m_args.empty()) throw std::system_error(std::make_error_code(std::errc::invalid_argument));
    }
    when_vector(when_vector &&) = default;

    using cothread_awaitable = void;
    bool await_ready() const noexcept { return false; }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) {
        m_results.resize(m_args.size());
        m_tasks.reserve(m_args.size());
        for (std::size_t i = 0; i < m_args.size(); i++)
            m_tasks.push_back(when_wrap<cothread::task<T>, R>(std::move(m_args[i]), m_results[i]));
        return start(h);
    }
    auto await_resume() {
        check();
        if constexpr (Any) {
            return std::pair<std::size_t, R>(m_winner, std::move(*m_results[m_winner]));
        } else {
            std::vector<R> out;
            out.reserve(m_results.size());
            for (auto &o : m_results) out.push_back(std::move(*o));
            return out;
        }
    }

private:
    std::vector<cothread::task<T>> m_args;
    std::vector<std::optional<R>> m_results;
};

/// The checks of a when_* argument list.
template <typename... A>
constexpr bool when_args_ok() {
    static_assert(sizeof...(A) > 0, "when_all() and when_any() need at least one argument");
    static_assert(((!is_cocls_future<std::remove_cvref_t<A>> || std::is_lvalue_reference_v<A>) && ...),
                  "pass a cocls::future to when_all/when_any as an lvalue: it must outlive the call");
    return true;
}

}  // namespace cothread::detail

#endif
