// callback_await<Awt>(callback, args...): awaits an awaitable without a
// coroutine of one's own and hands the result to a callback, as
// await_result<T>. Behind it is a small coroutine (one frame, from the heap
// or from a given allocator) that builds the Awt from `args` at once, on the
// calling thread, then awaits it as a detached coroutine would run: at once
// in normal mode, queued in coro mode (it starts when the calling coroutine
// suspends). The callback runs on the thread that completes the awaitable
// (by that thread's mode), or on the calling thread if it is already done.
#ifndef COCLS_CALLBACK_AWAITER_H_INCLUDED
#define COCLS_CALLBACK_AWAITER_H_INCLUDED

#include <concepts>
#include <coroutine>
#include <exception>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "coro_queue.h"
#include "generics.h"
#include "with_allocator.h"

// What COCLS's callback_awaiter.h also brings in (programs written for it may rely on it).
#include "alloca_storage.h"
#include "async.h"
#include "common.h"

namespace cocls {

/// What the callback of callback_await receives: the result of the await, or
/// the exception it threw. It points into the awaiting frame, so it is valid
/// only during the callback. On an exception the callback runs inside a
/// catch block, so std::current_exception() works there too.
template <typename T>
class await_result {
public:
    explicit await_result(T *value) noexcept : m_value(value) {}
    explicit await_result(std::exception_ptr e) noexcept : m_exception(std::move(e)) {}

    /// The value; rethrows the exception if the await failed (a dropped
    /// promise: await_canceled_exception).
    T &get() const {
        if (!m_value) std::rethrow_exception(m_exception);
        return *m_value;
    }
    T &operator*() const { return get(); }
    T *operator->() const { return &get(); }

    /// Has it a value (else an exception)?
    explicit operator bool() const noexcept { return m_value != nullptr; }
    bool operator!() const noexcept { return m_value == nullptr; }

    /// The exception, or nullptr if there is a value.
    std::exception_ptr exception() const noexcept { return m_exception; }

private:
    T *m_value = nullptr;
    std::exception_ptr m_exception;
};

/// For awaitables returning nothing: get() returns or rethrows.
template <>
class await_result<void> {
public:
    await_result() noexcept = default;
    explicit await_result(std::exception_ptr e) noexcept : is_valid(!e), m_exception(std::move(e)) {}

    /// Did the await succeed? (COCLS's public member; same as bool(*this).)
    bool is_valid = true;

    void get() const {
        if (m_exception) std::rethrow_exception(m_exception);
    }
    void operator*() const { get(); }
    explicit operator bool() const noexcept { return !m_exception; }
    bool operator!() const noexcept { return static_cast<bool>(m_exception); }
    std::exception_ptr exception() const noexcept { return m_exception; }

private:
    std::exception_ptr m_exception;
};

namespace detail {

/// The result type callback_await<Awt> delivers (references removed).
template <typename Awt>
using callback_result_t = std::decay_t<awaiter_return_value<Awt &>>;

template <typename Awt, typename Fn>
concept callback_for = std::invocable<Fn &, await_result<callback_result_t<Awt>>>;

/// The coroutine behind callback_await. It owns itself: it runs from the
/// call until its first suspension, and destroys its frame when done.
class callback_task {
public:
    class promise_type {
    public:
        callback_task get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        struct final_awaiter {
            bool await_ready() const noexcept { return false; }
            std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
                h.destroy();
                return coro_queue::next();
            }
            void await_resume() const noexcept {}
        };
        final_awaiter final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        /// An exception from the callback is dropped (as from a detached async).
        void unhandled_exception() noexcept {}
    };
};

/// Switches from the caller to the rules of a detached coroutine: in normal
/// mode the rest runs now (in coro mode, nested in this call); in coro mode
/// it is queued and runs when the calling coroutine suspends.
struct detach_here {
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) const noexcept { coro_queue::resume(h); }
    void await_resume() const noexcept {}
};

/// F is a function returning exactly R (a prvalue: R may be immovable).
template <typename F, typename R>
concept returns_exactly = std::invocable<F &> && std::same_as<std::invoke_result_t<F &>, R>;

/// Room for an awaitable built in place (it may be neither copyable nor
/// movable): from arguments, or from a function returning it.
template <typename Awt>
class awaitable_slot {
public:
    awaitable_slot() noexcept = default;
    awaitable_slot(const awaitable_slot &) = delete;
    ~awaitable_slot() {
        if (m_built) std::destroy_at(&get());
    }

    template <typename... Args>
    void build(Args &&...args) {
        if constexpr (sizeof...(Args) == 1 && (returns_exactly<Args, Awt> && ...)) {
            (::new (static_cast<void *>(m_buffer)) Awt(args()), ...);  // no copy: built in place
        } else {
            ::new (static_cast<void *>(m_buffer)) Awt(std::forward<Args>(args)...);
        }
        m_built = true;
    }
    Awt &get() noexcept { return *std::launder(reinterpret_cast<Awt *>(m_buffer)); }

private:
    bool m_built = false;
    alignas(Awt) unsigned char m_buffer[sizeof(Awt)];
};

/// What to co_await for an awaitable held in place: itself when it has an
/// operator co_await, else (an awaiter) a wrapper referring to it, so that
/// no compiler copies it.
template <typename Awt>
decltype(auto) awaitable_ref(Awt &a) noexcept {
    if constexpr (has_co_await<Awt &> || has_global_co_await<Awt &>) return (a);
    else return awaiter_wrapper<Awt>(a);
}

template <typename Result, typename Fn>
void deliver_exception(Fn &fn, std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (...) {
        fn(await_result<Result>(std::current_exception()));
    }
}

// GCC 12 takes the templated operator new of with_allocator and the usual
// operator delete for a mismatched pair (GCC PR 109224, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
template <typename Alloc, typename Awt, typename Fn, typename... Args>
with_allocator<Alloc, callback_task> callback_await_coro(Alloc &, Fn fn, Args... args) {
    using R = callback_result_t<Awt>;
    awaitable_slot<Awt> awt;
    std::exception_ptr failed;
    try {
        awt.build(std::move(args)...);  // on the calling thread, at once
    } catch (...) {
        failed = std::current_exception();
    }
    co_await detach_here{};
    if (failed) {
        deliver_exception<R>(fn, std::move(failed));
        co_return;
    }
    bool awaited = false;
    try {
        if constexpr (std::is_void_v<R>) {
            co_await awaitable_ref(awt.get());
            awaited = true;
            fn(await_result<void>());
        } else {
            auto &&v = co_await awaitable_ref(awt.get());
            awaited = true;
            if constexpr (std::is_const_v<std::remove_reference_t<decltype(v)>>) {
                R copy(v);  // await_result hands out a mutable value
                fn(await_result<R>(std::addressof(copy)));
            } else {
                fn(await_result<R>(std::addressof(v)));
            }
        }
    } catch (...) {
        if (awaited) throw;  // from the callback: dropped
        fn(await_result<R>(std::current_exception()));
    }
}
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic pop
#endif

}  // namespace detail

/// Awaits an `Awt` built from `args` (or returned by `args` when it is one
/// function returning Awt, e.g. `[&]{ return work(); }` for future<int>),
/// then calls `fn(await_result<T>)`. Allocates one coroutine frame on the
/// heap. An exception from `fn` is dropped.
template <typename Awt, typename Fn, typename... Args>
    requires detail::callback_for<Awt, std::decay_t<Fn>>
void callback_await(Fn &&fn, Args &&...args) {
    default_storage storage;
    detail::callback_await_coro<default_storage, Awt, std::decay_t<Fn>, std::decay_t<Args>...>(
        storage, std::forward<Fn>(fn), std::forward<Args>(args)...);
}

/// As callback_await, with the frame from `alloc` (which must outlive the
/// callback): `callback_await<reusable_storage, future<int>>(alloc, fn, ...)`.
template <typename Alloc, typename Awt, typename Fn, typename... Args>
    requires Storage<Alloc> && detail::callback_for<Awt, std::decay_t<Fn>>
void callback_await(Alloc &alloc, Fn &&fn, Args &&...args) {
    detail::callback_await_coro<Alloc, Awt, std::decay_t<Fn>, std::decay_t<Args>...>(alloc, std::forward<Fn>(fn),
                                                                                       std::forward<Args>(args)...);
}

/// The same as the allocator form of callback_await (COCLS's later name).
template <typename Alloc, typename Awt, typename Fn, typename... Args>
    requires Storage<Alloc> && detail::callback_for<Awt, std::decay_t<Fn>>
void callback_await_alloc(Alloc &alloc, Fn &&fn, Args &&...args) {
    callback_await<Alloc, Awt>(alloc, std::forward<Fn>(fn), std::forward<Args>(args)...);
}

}  // namespace cocls

#endif
