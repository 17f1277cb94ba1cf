// The promise of generator<T, Arg> and its awaiters. A step (one call of the
// generator) runs from a resumption to the next co_yield or to the end; who
// started it says where the generator goes when the step ends (m_step):
//
//   sync_inline  next()/value() from plain code: back to the caller, who is
//                below on this stack (h.resume() returns). No atomics.
//   sync_async   the same step, but the generator suspended at a co_await on
//                the way: the caller blocks (parks) until the step ends on
//                whichever thread resumed the generator, which wakes it.
//   coroutine    co_await gen.next(): symmetric transfer to the awaiting
//                coroutine, on the thread where the step ends.
//   future       gen(): the value goes into the caller's future.
//   callback     subscribe_awaiter(a): a->resume() (the aggregator).
//
// sync_inline turns into sync_async in await_transform, before the co_await
// hands the generator over (once handed over, it may run elsewhere): only the
// caller's own stack writes it, so the fast path needs neither atomics nor
// core calls.
#ifndef COCLS_DETAIL_GENERATOR_PROMISE_H_INCLUDED
#define COCLS_DETAIL_GENERATOR_PROMISE_H_INCLUDED

#include <atomic>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

#include "../awaiter.h"
#include "../future.h"
#include "../generics.h"
#include "core.h"

namespace cocls {

template <typename T, typename Arg>
class generator;

namespace detail {

enum class generator_step : unsigned char { sync_inline, sync_async, coroutine, future, callback };

/// The argument of the current step (a pointer to the caller's object), or
/// nothing for generators without one.
template <typename Arg>
class generator_arg {
public:
    Arg &arg() const noexcept { return *m_arg; }
    void set_arg(Arg *a) noexcept { m_arg = a; }

private:
    Arg *m_arg = nullptr;
};
template <>
class generator_arg<void> {
public:
    void arg() const noexcept {}
};

/// Wraps every co_await in a generator body (await_transform): when the
/// awaiter really suspends during a sync_inline step, the step becomes
/// sync_async first. Awt is the awaiter (held by value) or a reference to it.
template <typename Awt>
class [[nodiscard]] generator_await {
public:
    template <typename Fn>
    generator_await(generator_step &step, Fn &&get) : m_step(step), m_awt(static_cast<Fn &&>(get)()) {}

    bool await_ready() { return m_awt.await_ready(); }

    template <typename P>
    auto await_suspend(std::coroutine_handle<P> h) {
        using R = decltype(m_awt.await_suspend(h));
        generator_step &step = m_step;  // this wrapper is in the frame: touch it no more once handed over
        const bool first = step == generator_step::sync_inline;
        if (first) step = generator_step::sync_async;
        if constexpr (std::is_void_v<R>) {
            m_awt.await_suspend(h);
        } else if constexpr (std::is_same_v<R, bool>) {
            if (m_awt.await_suspend(h)) return true;
            if (first) step = generator_step::sync_inline;  // not suspended: still on the caller's stack
            return false;
        } else {
            std::coroutine_handle<> next = m_awt.await_suspend(h);
            if (first && next.address() == h.address()) step = generator_step::sync_inline;
            return next;
        }
    }

    decltype(auto) await_resume() { return m_awt.await_resume(); }

private:
    generator_step &m_step;
    Awt m_awt;
};

/// T may be a reference (generator<U &, Arg>): the generator then yields
/// references to its own objects; value() and the futures of the call
/// operator give that reference, no copy is made.
template <typename T, typename Arg>
class generator_promise : public generator_arg<Arg> {
public:
    /// The type of the yielded objects (T without a reference).
    using Ret = std::remove_reference_t<T>;

    generator<T, Arg> get_return_object() noexcept;

    /// Starts suspended: the first call runs it.
    std::suspend_always initial_suspend() noexcept { return {}; }

    /// `co_yield v`: hands v's address to the caller and suspends; the next
    /// call resumes it (on the caller's thread), and the expression gives
    /// that call's argument (Arg&, or void). Without an argument the awaiter
    /// is empty: the frame keeps nothing for it.
    template <bool Move>
    class [[nodiscard]] yield_awaiter {
        using self = std::conditional_t<std::is_void_v<Arg>, no_value, generator_promise *>;

    public:
        explicit yield_awaiter([[maybe_unused]] generator_promise *p) noexcept {
            if constexpr (!std::is_void_v<Arg>) m_p = p;
        }
        bool await_ready() const noexcept { return false; }
        std::coroutine_handle<> await_suspend(std::coroutine_handle<generator_promise> h) const noexcept {
            return h.promise().template hand_over<Move>();
        }
        decltype(auto) await_resume() const noexcept {
            if constexpr (!std::is_void_v<Arg>) return m_p->arg();
        }

    private:
        [[no_unique_address]] self m_p;
    };

    /// `co_yield` of a const lvalue: a copy, kept in this awaiter (which the
    /// frame holds while suspended).
    class [[nodiscard]] yield_copy_awaiter {
    public:
        yield_copy_awaiter(generator_promise *p, const Ret &v) : m_p(p), m_copy(v) {}
        bool await_ready() const noexcept { return false; }
        std::coroutine_handle<> await_suspend(std::coroutine_handle<>) noexcept {
            m_p->m_value = std::addressof(m_copy);
            return m_p->template hand_over<true>();
        }
        decltype(auto) await_resume() const noexcept { return m_p->arg(); }

    private:
        generator_promise *m_p;
        Ret m_copy;
    };

    /// `co_yield nullptr`: does not suspend; gives the current argument (the
    /// first call's, when it comes first).
    class [[nodiscard]] arg_awaiter {
    public:
        explicit arg_awaiter(generator_promise *p) noexcept : m_p(p) {}
        bool await_ready() const noexcept { return true; }
        void await_suspend(std::coroutine_handle<>) const noexcept {}
        decltype(auto) await_resume() const noexcept { return m_p->arg(); }

    private:
        generator_promise *m_p;
    };

    yield_awaiter<false> yield_value(Ret &v) noexcept {
        m_value = std::addressof(v);
        return yield_awaiter<false>(this);
    }
    yield_awaiter<true> yield_value(Ret &&v) noexcept {
        m_value = std::addressof(v);
        return yield_awaiter<true>(this);
    }
    /// A const lvalue is copied, except by a generator of references (which
    /// hands out the object itself) or of const values (no copy needed).
    yield_copy_awaiter yield_value(const Ret &v)
        requires(!std::is_reference_v<T> && !std::is_const_v<Ret>)
    {
        return yield_copy_awaiter(this, v);
    }
    arg_awaiter yield_value(std::nullptr_t) noexcept { return arg_awaiter(this); }

    /// At the end the value is gone; the caller learns that the generator
    /// finished (or that it threw) the way it would have got a value.
    class [[nodiscard]] final_awaiter {
    public:
        explicit final_awaiter(generator_promise *p) noexcept : m_p(p) {}
        bool await_ready() const noexcept { return false; }
        std::coroutine_handle<> await_suspend(std::coroutine_handle<>) const noexcept {
            m_p->m_value = nullptr;
            return m_p->template hand_over<true>();
        }
        void await_resume() const noexcept {}

    private:
        generator_promise *m_p;
    };
    final_awaiter final_suspend() noexcept { return final_awaiter(this); }

    void return_void() noexcept {}
    void unhandled_exception() noexcept { m_rare.m_exception = std::current_exception(); }

    generator_promise() noexcept { ::new (static_cast<void *>(&m_rare)) rare(); }
    generator_promise(const generator_promise &) = delete;
    generator_promise &operator=(const generator_promise &) = delete;
    ~generator_promise() { destroy_rare(); }

    template <typename X>
    auto await_transform(X &&x) {
        using A = decltype(get_awaiter(static_cast<X &&>(x)));
        return generator_await<A>(m_step, [&]() -> A { return get_awaiter(static_cast<X &&>(x)); });
    }

    // ---- used by generator<T, Arg> (the caller's side) ----

    /// Runs one step for a plain caller; on return the step has ended.
    [[gnu::always_inline]] void run_sync(std::coroutine_handle<> self) noexcept {
        m_step = generator_step::sync_inline;
        self.resume();
        if (m_step == generator_step::sync_async) [[unlikely]]
            wait_step();
    }
    /// Runs one step whose end resolves `target`.
    void run_future(std::coroutine_handle<> self, promise<T> &&target) noexcept {
        m_rare.m_target = std::move(target);
        m_step = generator_step::future;
        self.resume();
    }
    /// Runs one step whose end calls cb->resume().
    void run_callback(std::coroutine_handle<> self, awaiter *cb) noexcept {
        m_callback = cb;
        m_step = generator_step::callback;
        self.resume();
    }
    /// Prepares a step that ends by transfer to `waiter` (which then resumes `self`).
    void prepare_coroutine(std::coroutine_handle<> waiter) noexcept {
        m_waiter = waiter;
        m_step = generator_step::coroutine;
    }

    /// Did the step that just ended produce something (a value or an exception)?
    bool produced() const noexcept { return m_value != nullptr || static_cast<bool>(m_rare.m_exception); }
    /// What the generator threw (null if nothing).
    const std::exception_ptr &exception() const noexcept { return m_rare.m_exception; }

    /// The value of the last step; null before the first and after the end.
    Ret *m_value = nullptr;

private:
    /// Where the generator goes at the end of a step (yield or final). The
    /// plain caller's case is kept apart (and first) so that the generator's
    /// own code stays small.
    template <bool Move>
    std::coroutine_handle<> hand_over() noexcept {
        if (m_step == generator_step::sync_inline) [[likely]]
            return std::noop_coroutine();
        return hand_over_other<Move>();
    }
    template <bool Move>
    [[gnu::noinline]] std::coroutine_handle<> hand_over_other() noexcept {
        switch (m_step) {
        case generator_step::sync_inline: break;
        case generator_step::sync_async: return wake_caller();
        case generator_step::coroutine: return m_waiter;
        case generator_step::future: return deliver<Move>();
        case generator_step::callback: return m_callback->resume_handle();
        }
        return std::noop_coroutine();
    }

    // m_wake: 0 idle, 1 the step ended, 2 the caller parks.
    std::coroutine_handle<> wake_caller() noexcept {
        const std::uint32_t *w = word();  // the caller may destroy the frame once woken
        if (m_wake.exchange(1, std::memory_order_acq_rel) == 2) cot_unpark_all(w);
        return std::noop_coroutine();
    }
    [[gnu::noinline]] void wait_step() noexcept {
        std::uint32_t expected = 0;
        if (m_wake.compare_exchange_strong(expected, 2, std::memory_order_acquire, std::memory_order_acquire)) {
            while (m_wake.load(std::memory_order_acquire) == 2) cot_park(word(), 2, COT_FOREVER);
        }
        m_wake.store(0, std::memory_order_relaxed);
    }
    const std::uint32_t *word() const noexcept { return reinterpret_cast<const std::uint32_t *>(&m_wake); }

    template <bool Move>
    std::coroutine_handle<> deliver() noexcept {
        suspend_point<void> ready;
        if (m_value) {
            if constexpr (std::is_reference_v<T>) ready << m_rare.m_target(*m_value);  // the reference itself
            else if constexpr (Move || !std::is_copy_constructible_v<T>) ready << m_rare.m_target(std::move(*m_value));
            else ready << m_rare.m_target(static_cast<const T &>(*m_value));
        } else if (m_rare.m_exception) {
            ready << m_rare.m_target(m_rare.m_exception);
        } else {
            ready << m_rare.m_target(drop);
        }
        // The waiter of the future goes on here; any others by the thread's mode.
        std::coroutine_handle<> next = ready.take();
        return next ? next : std::noop_coroutine();
    }

    generator_step m_step = generator_step::sync_inline;
    std::atomic<std::uint32_t> m_wake{0};
    std::coroutine_handle<> m_waiter;
    awaiter *m_callback = nullptr;

    // The members with destructors, destroyed out of line: the frame's
    // destroy path shares the generator's code, which then needs no stack
    // frame of its own (fewer instructions per step).
    struct rare {
        std::exception_ptr m_exception;
        promise<T> m_target;
    };
    union {
        rare m_rare;
    };
    [[gnu::noinline]] void destroy_rare() noexcept { m_rare.~rare(); }
};

}  // namespace detail
}  // namespace cocls

#endif
