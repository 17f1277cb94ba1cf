// future<T> and promise<T>: a value that arrives later. The future holds the
// value in place (no heap: it can neither be copied nor moved, so that the
// promise can point at it); the promise is a movable pointer to it that sets
// it once. Setting is safe from any thread, and the first setter wins.
//
// A future's collector (m_chain) says where it stands:
//   &awaiter::instance  fresh: no promise was made, nothing to wait for
//   nullptr or a chain  pending: a promise exists; the chain holds waiters
//   &awaiter::disabled  resolved: value, exception or none (promise dropped)
#ifndef COCLS_FUTURE_H_INCLUDED
#define COCLS_FUTURE_H_INCLUDED

#include <atomic>
#include <cassert>
#include <concepts>
#include <exception>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "awaiter.h"
#include "common.h"  // ReturnsFuture
#include "exceptions.h"
#include "suspend_point.h"
#include "with_allocator.h"

// COCLS's future.h names these standard headers; programs written for it may rely on them.
#include <mutex>

namespace cocls {

template <typename T>
class future;
template <typename T>
class promise;
template <typename T>
class async;
template <typename T>
class async_promise;
template <typename T>
class future_promise;
namespace detail {
template <typename T>
struct future_starter;
}

/// Pass to a promise to drop it: the future resolves without a value.
enum DropTag { drop };

namespace detail {
template <typename T>
struct future_value {
    using type = T;
};
template <typename T>
struct future_value<T &> {
    using type = T *;
};
template <>
struct future_value<void> {
    using type = no_value;
};
}  // namespace detail

template <typename T>
class future_awaiter;
template <typename T>
class has_value_awaiter;

template <typename T>
class [[nodiscard]] future {
    using storage = typename detail::future_value<T>::type;

public:
    using value_type = T;
    using reference = std::add_lvalue_reference_t<T>;
    using const_reference = std::add_lvalue_reference_t<std::add_const_t<T>>;
    /// A function returning future<T> may be a coroutine: it starts at once
    /// (queued in coro mode) and its result resolves the returned future.
    using promise_type = future_promise<T>;

    /// A fresh future: get_promise() arms it, operator<< fills it.
    future() noexcept : m_chain(&awaiter::instance) {}

    /// Calls `init` with the promise of this future (to start an operation).
    template <typename Fn>
        requires std::invocable<Fn, promise<T>>
    future(Fn &&init) : m_chain(nullptr) {
        std::forward<Fn>(init)(promise<T>(*this));
    }

    /// Constructs in place the future `init()` returns (a function returning
    /// future<T>, e.g. `[&] { return pool.run(work()); }`): the way to keep
    /// such a result where it cannot be returned, as in a container's
    /// emplace. An exception from `init` propagates from the constructor
    /// (operator<< instead resolves the future with it).
    template <typename Fn>
        requires(ReturnsFuture<Fn, T> && !std::invocable<Fn, promise<T>>)
    future(Fn &&init) : future() {
        ::new (static_cast<void *>(this)) future(std::forward<Fn>(init)());
    }

    /// Starts coroutine `coro`; its result resolves this future.
    future(async<T> &&coro);
    /// The return object of a coroutine returning future<T>.
    future(detail::future_starter<T> &&s);

    future(const future &) = delete;
    future &operator=(const future &) = delete;

    /// A pending future must not be destroyed (asserted in debug builds).
    ~future() {
        assert(!pending() && "cocls: destroying a pending future");
        destroy();
    }

    /// Arms a fresh (or resolved) future and returns its promise.
    promise<T> get_promise() noexcept {
        destroy();
        m_chain.store(nullptr, std::memory_order_relaxed);
        return promise<T>(*this);
    }

    /// Replaces the content with the future `fn` returns (constructed in
    /// place); an exception from `fn` resolves this future with it.
    template <typename Fn>
        requires ReturnsFuture<Fn, T>
    future &operator<<(Fn &&fn) noexcept {
        this->~future();
        try {
            ::new (static_cast<void *>(this)) future(std::forward<Fn>(fn)());
        } catch (...) {
            ::new (static_cast<void *>(this)) future();
            get_promise()(std::current_exception());
        }
        return *this;
    }
    /// Same as operator<<.
    template <typename Fn>
        requires ReturnsFuture<Fn, T>
    void result_of(Fn &&fn) noexcept {
        *this << std::forward<Fn>(fn);
    }

    /// Resolved (with a value, an exception or none)?
    bool ready() const noexcept {
        if (m_chain.load(std::memory_order_acquire) != &awaiter::disabled) return false;
        detail::tsan_acquire(&m_chain);  // the setter's writes (the core closed the chain)
        return true;
    }
    /// Armed and not yet resolved?
    bool pending() const noexcept {
        awaiter *c = m_chain.load(std::memory_order_relaxed);
        return c != &awaiter::instance && c != &awaiter::disabled;
    }
    /// Was a promise made (it can be waited for)?
    bool initialized() const noexcept { return m_chain.load(std::memory_order_relaxed) != &awaiter::instance; }

    /// The value; rethrows a stored exception; throws await_canceled_exception
    /// if the promise was dropped, value_not_ready_exception if pending.
    reference value() {
        check();
        if constexpr (std::is_reference_v<T>) return *m_value;
        else if constexpr (!std::is_void_v<T>) return m_value;
    }
    const_reference value() const {
        check();
        if constexpr (std::is_reference_v<T>) return *m_value;
        else if constexpr (!std::is_void_v<T>) return m_value;
    }
    /// As COCLS: `*f` is wait() (blocks the thread while pending).
    reference operator*() { return wait(); }
    const_reference operator*() const {
        sync();
        return value();
    }
    /// As COCLS: blocks while pending, then has_value().
    explicit operator bool() const noexcept {
        sync();
        return m_state != state::none;
    }

    /// Blocks the thread until resolved, then value().
    reference wait() {
        sync();
        return value();
    }
    /// Same as wait().
    reference join() { return wait(); }
    /// Blocks the thread until resolved; never throws.
    void sync() const noexcept {
        if (ready()) return;
        sync_awaiter w;
        if (w.subscribe_check_ready(m_chain, awaiter::disabled)) w.wait_sync();
    }

    /// Resolved with a value or an exception (not dropped)? As a bool it
    /// blocks until resolved; `co_await f.has_value()` suspends instead.
    has_value_awaiter<T> has_value() noexcept { return has_value_awaiter<T>(*this); }

    /// Suspends until resolved (unless it is), then value(); the coroutine is
    /// resumed by the thread that sets the promise, by its mode.
    future_awaiter<T> operator co_await() noexcept { return future_awaiter<T>(*this); }

    /// Adds `a` to the waiters; false if already resolved.
    bool subscribe(awaiter *a) noexcept { return a->subscribe_check_ready(m_chain, awaiter::disabled); }

private:
    friend class promise<T>;
    friend class has_value_awaiter<T>;
    enum class state : unsigned char { none, value, exception };

    void check() const {
        switch (m_state) {
        case state::value: return;
        case state::exception: std::rethrow_exception(m_exception);
        case state::none: break;
        }
        if (pending() || !initialized()) throw value_not_ready_exception();
        throw await_canceled_exception();
    }

    template <typename... Args>
    void emplace(Args &&...args) {
        if constexpr (std::is_reference_v<T>) {
            static_assert(sizeof...(Args) == 1, "future<T&> is set from one lvalue");
            m_value = std::addressof(args...);
        } else if constexpr (!std::is_void_v<T>) {
            ::new (static_cast<void *>(std::addressof(m_value))) storage(std::forward<Args>(args)...);
        }
        m_state = state::value;
    }
    void set_exception(std::exception_ptr e) noexcept {
        m_exception = std::move(e);
        m_state = state::exception;
    }
    void resolve(suspend_point<bool> &ready) noexcept { awaiter::resume_chain_set_ready(m_chain, ready); }
    void destroy() noexcept {
        if (m_state == state::value) std::destroy_at(std::addressof(m_value));
        else if (m_state == state::exception) m_exception = nullptr;
        m_state = state::none;
    }

    mutable awaiter_collector m_chain;
    state m_state = state::none;
    // The exception is a member of its own (a pointer, null when unused): in
    // a union with the value, g++ 12 warns it "may be used uninitialized".
    std::exception_ptr m_exception;
    union {
        storage m_value;
    };
};

/// The awaiter of `co_await future`.
template <typename T>
class [[nodiscard]] future_awaiter : public awaiter {
public:
    explicit future_awaiter(future<T> &f) noexcept : m_future(f) {}
    bool await_ready() const noexcept { return m_future.ready(); }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
        set_handle(h);
        // Once subscribed the coroutine may run on another thread: touch
        // nothing. Suspended, control returns to the resumer (in coro mode the
        // queue's drain loop, which runs the next one: no extra queue call).
        return m_future.subscribe(this) ? std::noop_coroutine() : h;
    }
    typename future<T>::reference await_resume() { return m_future.value(); }
    /// Blocks the thread until resolved, then the value.
    typename future<T>::reference wait() { return m_future.wait(); }

protected:
    future<T> &m_future;
};

/// has_value(): a bool (after blocking) or, awaited, a suspension.
template <typename T>
class [[nodiscard]] has_value_awaiter : public future_awaiter<T> {
public:
    using future_awaiter<T>::future_awaiter;
    bool await_resume() const noexcept { return this->m_future.m_state != future<T>::state::none; }
    operator bool() const noexcept {
        this->m_future.sync();
        return await_resume();
    }
};

template <typename T>
class promise {
public:
    /// An empty promise (setting it does nothing).
    promise() noexcept = default;
    explicit promise(future<T> &f) noexcept : m_future(&f) {}
    // Moving is not a setting: the owner moves its promise, so plain loads and
    // stores do (no read-modify-write on the hot path).
    promise(promise &&o) noexcept : m_future(o.m_future.load(std::memory_order_relaxed)) {
        o.m_future.store(nullptr, std::memory_order_relaxed);
    }
    promise &operator=(promise &&o) noexcept {
        if (this != &o) {
            drop_now();
            m_future.store(o.m_future.load(std::memory_order_relaxed), std::memory_order_relaxed);
            o.m_future.store(nullptr, std::memory_order_relaxed);
        }
        return *this;
    }
    /// Destroying an unset promise drops it: the waiter's value() throws
    /// await_canceled_exception.
    ~promise() { drop_now(); }

    /// Sets the value (constructed from `args`) and resolves the future. The
    /// result is true if this call set it (false: already set or empty); the
    /// waiters resume when the suspend point is discarded or awaited.
    template <typename... Args>
        requires(std::is_void_v<T> ? sizeof...(Args) == 0
                                   : std::constructible_from<typename detail::future_value<T>::type, Args...> ||
                                         std::is_reference_v<T>)
    suspend_point<bool> operator()(Args &&...args) {
        future<T> *f = claim();
        if (!f) return false;
        try {
            f->emplace(std::forward<Args>(args)...);
        } catch (...) {
            f->set_exception(std::current_exception());
        }
        return finish(f);
    }
    /// Resolves the future with an exception (rethrown to the waiter).
    suspend_point<bool> operator()(std::exception_ptr e) noexcept {
        future<T> *f = claim();
        if (!f) return false;
        f->set_exception(std::move(e));
        return finish(f);
    }
    /// Drops the promise: the future resolves without a value.
    suspend_point<bool> operator()(DropTag) noexcept {
        future<T> *f = claim();
        if (!f) return false;
        return finish(f);
    }

    template <typename... Args>
    suspend_point<bool> set_value(Args &&...args) {
        return (*this)(std::forward<Args>(args)...);
    }
    suspend_point<bool> set_exception(std::exception_ptr e) noexcept { return (*this)(std::move(e)); }

    /// Not yet set?
    explicit operator bool() const noexcept { return m_future.load(std::memory_order_relaxed) != nullptr; }

private:
    // The first setter wins: one exchange, skipped when already empty.
    future<T> *claim() noexcept {
        if (!m_future.load(std::memory_order_relaxed)) return nullptr;
        return m_future.exchange(nullptr, std::memory_order_acq_rel);
    }
    static suspend_point<bool> finish(future<T> *f) noexcept {
        suspend_point<bool> sp(true);
        f->resolve(sp);  // f may be gone after this: the waiter owns it
        return sp;
    }
    void drop_now() noexcept {
        if (future<T> *f = claim()) finish(f);
    }

    std::atomic<future<T> *> m_future{nullptr};
};

/// Calls `fn` (returning future<T>) and drops the result: the future lives on
/// the heap until resolved, then is freed. Prefer async<T>::detach() for
/// coroutines (no extra allocation).
template <typename Fn>
void discard(Fn &&fn) {
    using F = std::invoke_result_t<Fn>;
    struct holder : awaiter {
        F f;
        explicit holder(Fn &&fn) : f(std::forward<Fn>(fn)()) {}
    };
    auto *h = new holder(std::forward<Fn>(fn));
    h->set_resume_fn(
        [](awaiter *self, void *) noexcept -> suspend_point<void> {
            delete static_cast<holder *>(self);
            return {};
        },
        nullptr);
    if (!h->f.subscribe(h)) delete h;
}

/// A future on the heap that, once resolved, calls `fn(future<T> &)` and
/// deletes itself (see make_promise).
template <typename T, typename Fn>
class future_with_cb : public future<T>, public awaiter {
public:
    template <typename F>
    explicit future_with_cb(F &&fn) : m_fn(std::forward<F>(fn)) {
        set_resume_fn(&on_resolved, nullptr);
    }
    /// Arms the future (once) and returns its promise.
    promise<T> get_promise() {
        promise<T> p = future<T>::get_promise();
        future<T>::subscribe(static_cast<awaiter *>(this));
        return p;
    }
    virtual ~future_with_cb() = default;

private:
    // Runs on the thread that resolves the promise, during the setting.
    static suspend_point<void> on_resolved(awaiter *me, void *) noexcept {
        auto *self = static_cast<future_with_cb *>(me);
        self->m_fn(static_cast<future<T> &>(*self));
        delete self;
        return {};
    }
    Fn m_fn;
};

/// future_with_cb allocated by `Storage` (make_promise's second form).
template <typename T, typename Storage, typename Fn>
using future_with_cb_no_alloc = custom_allocator_base<Storage, future_with_cb<T, Fn>>;

/// A promise whose future lives on the heap: setting (or dropping) it calls
/// `fn(future<T> &)` on the setting thread, then frees the future. One
/// allocation, for the future and `fn` together; an exception from `fn`
/// terminates (it runs inside the noexcept setting).
template <typename T, typename Fn>
promise<T> make_promise(Fn &&fn) {
    return (new future_with_cb<T, std::decay_t<Fn>>(std::forward<Fn>(fn)))->get_promise();
}
/// The same with the future allocated by `storage` (which must outlive it).
template <typename T, typename Fn, typename Storage>
promise<T> make_promise(Fn &&fn, Storage &storage) {
    return (new (storage) future_with_cb_no_alloc<T, Storage, std::decay_t<Fn>>(std::forward<Fn>(fn)))->get_promise();
}

}  // namespace cocls

#include "async.h"

#endif
