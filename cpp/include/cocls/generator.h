// generator<T, Arg>: a coroutine that produces values with co_yield. It starts
// suspended; each call runs it from where it stopped to its next co_yield (a
// step). Movable, not copyable; destroying it while it waits at a co_yield (or
// before its first call) destroys its frame and what the frame holds.
//
// A synchronous generator (no co_await) runs each step on the caller's stack:
// next() resumes it and the co_yield comes straight back, with no allocation,
// atomic or core call. An asynchronous one may suspend at a co_await inside a
// step and go on elsewhere; the step then ends on whichever thread resumed it,
// and that thread wakes (next()), resumes (co_await next()) or resolves (the
// call operator's future) the caller. See detail/generator_promise.h.
//
// Ways to call it: next() then value(); `co_await gen.next()`; iterators and
// range-for; gen() / gen(arg) -> future<T>. A generator is driven by one caller
// at a time: start a step only when the previous one ended.
//
// T may be a reference, generator<U &, Arg>: the generator yields its own
// objects (co_yield an lvalue U), value() is that U &, and the call operator's
// future<U &> refers to the same object: nothing is copied. The object must
// stay where it is until the caller is done with it (until the next step).
#ifndef COCLS_GENERATOR_H_INCLUDED
#define COCLS_GENERATOR_H_INCLUDED

#include <coroutine>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

#include "awaiter.h"
#include "detail/generator_promise.h"
#include "exceptions.h"
#include "future.h"
#include "iterator.h"

// What COCLS's generator.h also brings in (programs written for it may rely on it).
#include "generics.h"

namespace cocls {

namespace detail {
struct generator_access;
}

template <typename T, typename Arg = void>
class generator {
    /// Arguments a step may take: none when Arg is void, else one.
    template <typename... A>
    static constexpr bool fits = std::is_void_v<Arg> ? sizeof...(A) == 0 : sizeof...(A) == 1;
    /// The step can point at the caller's argument itself (same type, not const).
    template <typename A>
    static constexpr bool by_address = std::is_same_v<std::remove_reference_t<A>, Arg>;

public:
    using promise_type = detail::generator_promise<T, Arg>;
    using handle = std::coroutine_handle<promise_type>;
    using value_type = T;
    /// T without a reference: what value() refers to.
    using Ret = std::remove_reference_t<T>;
    /// The call operator's future and its promise (COCLS's names).
    using future_t = future<T>;
    using promise_t = promise<T>;
    /// Arg &, or void (COCLS's names for the argument's forms).
    using reference_Arg = std::add_lvalue_reference_t<Arg>;
    using storage_Arg_ptr = std::conditional_t<std::is_void_v<Arg>, std::nullptr_t, Arg *>;
    using param_Arg = std::conditional_t<std::is_void_v<Arg>, std::nullptr_t, reference_Arg>;
    using arg_type = Arg;
    static constexpr bool arg_is_void = std::is_void_v<Arg>;
    using iterator = generator_iterator<generator>;

    class next_awaiter;
    /// COCLS's name of next()'s result.
    using next_awt = next_awaiter;

    /// No coroutine: behaves as a finished generator.
    generator() noexcept = default;
    explicit generator(handle h) noexcept : m_h(h) {}
    generator(generator &&o) noexcept : m_h(std::exchange(o.m_h, {})) {}
    generator &operator=(generator &&o) noexcept {
        if (this != &o) {
            reset();
            m_h = std::exchange(o.m_h, {});
        }
        return *this;
    }
    /// Destroys the frame: allowed before the first call, at a co_yield or
    /// after the end, never during a step.
    ~generator() { reset(); }

    /// Asks for the next value. Nothing runs yet: converting the result to
    /// bool runs the step on this thread (blocking until an asynchronous
    /// generator's step ends); `co_await` suspends the caller and switches to
    /// the generator, and the caller resumes where the step ends. Either way
    /// the result is true if the step produced a value (read it with value())
    /// or threw (value() rethrows), false once the generator has finished.
    /// `arg` (when Arg is not void) is what the co_yield that the step resumes
    /// from returns; the generator gets a reference to it, valid until the
    /// step first suspends at a co_await: use the result at once.
    template <typename... A>
        requires fits<A...>
    auto next(A &&...arg) noexcept(arg_is_void || (by_address<A> && ...)) {
        if constexpr (arg_is_void || (by_address<A> && ...)) {
            if constexpr (!arg_is_void) point_at(arg...);
            return next_awaiter(*this);
        } else {
            return next_awaiter_holding(*this, std::forward<A>(arg)...);
        }
    }

    /// The value of the last step, valid until the next one. Throws what the
    /// generator threw, no_more_values_exception once it finished, and
    /// value_not_ready_exception before its first step.
    [[gnu::always_inline]] Ret &value() {
        if (m_h) {
            if (Ret *v = m_h.promise().m_value) [[likely]]
                return *v;
        }
        throw_no_value();
    }

    /// Runs a step and returns its result as a future: resolved with the
    /// value (copied, or moved when the co_yield gave an rvalue), with the
    /// exception the generator threw, or without a value (has_value() false)
    /// when the generator finished. Once finished, further calls give a future
    /// holding no_more_values_exception. The step starts here, on this thread;
    /// if the generator is asynchronous, the future is resolved where the step
    /// ends. `future<T> f = gen(); ... f << gen;` reuses a future.
    template <typename... A>
        requires fits<A...>
    future<T> operator()(A &&...arg) {
        if constexpr (arg_is_void || (by_address<A> && ...)) {
            if constexpr (!arg_is_void) point_at(arg...);
            return start_future();
        } else {
            std::remove_cv_t<Arg> held(std::forward<A>(arg)...);  // read by the step, which starts in start_future
            point_at(held);
            return start_future();
        }
    }

    /// Has it finished (returned or thrown; or it has no coroutine)? Only
    /// between steps.
    bool done() const noexcept { return !m_h || m_h.done(); }
    /// Has it a coroutine that has not finished? (!done())
    explicit operator bool() const noexcept { return !done(); }

    /// An identifier of the generator's coroutine (its frame's address; null
    /// without one).
    coro_id get_id() const noexcept { return m_h ? m_h.address() : nullptr; }

    /// Runs the first step; the iterator stands on its value (or is end()).
    iterator begin() { return iterator(*this, static_cast<bool>(next())); }
    iterator end() noexcept { return iterator(*this, false); }

private:
    friend struct detail::generator_access;
    class next_awaiter_holding;

    void reset() noexcept {
        if (m_h) std::exchange(m_h, {}).destroy();
    }

    template <typename A>
    void point_at(A &a) noexcept {
        if (m_h) m_h.promise().set_arg(std::addressof(a));
    }

    /// One step for a plain caller; true if it produced something.
    [[gnu::always_inline]] bool step_sync() noexcept {
        if (done()) return false;
        promise_type &p = m_h.promise();
        p.run_sync(m_h);
        return p.produced();
    }

    future<T> start_future() {
        return future<T>([this](promise<T> p) {
            if (done()) {
                p(std::make_exception_ptr(no_more_values_exception()));
                return;
            }
            m_h.promise().run_future(m_h, std::move(p));
        });
    }

    [[noreturn]] void throw_no_value() const {
        if (m_h) {
            const promise_type &p = m_h.promise();
            if (p.exception()) std::rethrow_exception(p.exception());
            if (!m_h.done()) throw value_not_ready_exception();
        }
        throw no_more_values_exception();
    }

    handle m_h;
};

/// next()'s result: convert it to bool (a synchronous step) or co_await it
/// (an asynchronous one); either gives true when a value (or an exception)
/// is ready, false when the generator has finished.
template <typename T, typename Arg>
class [[nodiscard]] generator<T, Arg>::next_awaiter {
public:
    explicit next_awaiter(generator &gen) noexcept : m_gen(gen) {}
    next_awaiter(const next_awaiter &) = delete;
    next_awaiter &operator=(const next_awaiter &) = delete;

    /// Runs the step here (the first time only), blocking until it ends.
    [[gnu::always_inline]] operator bool() const noexcept {
        if (m_state == state::unknown) m_state = m_gen.step_sync() ? state::yes : state::no;
        return m_state == state::yes;
    }
    bool operator!() const noexcept { return !static_cast<bool>(*this); }

    /// co_await: a finished generator gives false at once; otherwise the
    /// caller suspends and the generator runs by symmetric transfer on this
    /// thread. The caller is resumed by symmetric transfer where the step
    /// ends: here if the generator is synchronous, else on the thread that
    /// resumed it.
    bool await_ready() const noexcept {
        if (!m_gen.done()) return false;
        m_state = state::no;
        return true;
    }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> caller) noexcept {
        m_gen.m_h.promise().prepare_coroutine(caller);
        return m_gen.m_h;
    }
    bool await_resume() const noexcept {
        if (m_state == state::unknown) m_state = m_gen.m_h.promise().produced() ? state::yes : state::no;
        return m_state == state::yes;
    }

    /// Runs the step now; when it ends, `a->resume()` is called on the thread
    /// where it ended (what it returns runs there). False (and `a` is not
    /// called) if the generator has finished.
    bool subscribe_awaiter(awaiter *a) noexcept {
        if (m_gen.done()) return false;
        m_gen.m_h.promise().run_callback(m_gen.m_h, a);
        return true;
    }

protected:
    enum class state : unsigned char { unknown, yes, no };
    generator &m_gen;
    mutable state m_state = state::unknown;
};

/// next(arg) with an argument of another type (or const): holds a converted
/// copy for the step to point at.
template <typename T, typename Arg>
class [[nodiscard]] generator<T, Arg>::next_awaiter_holding : public next_awaiter {
public:
    template <typename A>
    next_awaiter_holding(generator &gen, A &&arg) : next_awaiter(gen), m_arg(std::forward<A>(arg)) {
        gen.point_at(m_arg);
    }

private:
    std::remove_cv_t<Arg> m_arg;
};

namespace detail {

template <typename T, typename Arg>
generator<T, Arg> generator_promise<T, Arg>::get_return_object() noexcept {
    return generator<T, Arg>(std::coroutine_handle<generator_promise>::from_promise(*this));
}

/// What generator_aggregator reads of a member between its steps.
struct generator_access {
    template <typename T, typename Arg>
    static const std::exception_ptr &exception(const generator<T, Arg> &g) noexcept {
        return g.m_h.promise().exception();
    }
};

}  // namespace detail

}  // namespace cocls

#endif
