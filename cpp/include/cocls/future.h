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
#include <tuple>
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

/// The base of every future<T>, so that `std::is_base_of_v<future_common, X>`
/// tells a future. Empty: the members COCLS keeps here (ready(), pending(),
/// initialized(), subscribe()) are future<T>'s own.
class future_common {};

template <typename T>
class [[nodiscard]] future : public future_common {
    using storage = typename detail::future_value<T>::type;
    struct value_tag {};
    struct exception_tag {};
    struct no_value_tag {};

public:
    using value_type = T;
    using reference = std::add_lvalue_reference_t<T>;
    using const_reference = std::add_lvalue_reference_t<std::add_const_t<T>>;
    using promise_t = promise<T>;
    using promise_object = promise<T>;
    /// Pointer to the value (to the referred object for future<U &>).
    using value_type_ptr = std::add_pointer_t<std::remove_reference_t<T>>;
    static constexpr bool is_void = std::is_void_v<T>;
    static constexpr bool is_ref = !is_void && std::is_reference_v<T>;
    /// What holds the value: T, a pointer for a reference, int for void (COCLS's names).
    using value_storage = std::conditional_t<is_void, int, std::conditional_t<is_ref, value_type_ptr, T>>;
    using ptr_storage = std::conditional_t<is_void, int, value_type_ptr>;
    /// has_value()'s awaiter (COCLS's name).
    using awaitable_bool = has_value_awaiter<T>;
    /// A function returning future<T> may be a coroutine: it starts at once
    /// (in coro mode too, nested in the caller until it first suspends; see
    /// detail::start_now) and its result resolves the returned future.
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

    /// A future resolved already: with a value built from `args` (for
    /// future<U &>, one lvalue it refers to), with an exception, or without
    /// a value (value() throws await_canceled_exception). They are returned
    /// in place (a future cannot be moved): `return future<int>::set_value(1);`.
    template <typename... Args>
    static future set_value(Args &&...args) {
        return future(value_tag{}, std::forward<Args>(args)...);
    }
    static future set_exception(std::exception_ptr e) noexcept { return future(exception_tag{}, std::move(e)); }
    static future set_not_value() noexcept { return future(no_value_tag{}); }

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
    /// wait() and sync() under COCLS's names for "block even in a coroutine"
    /// (its debug builds assert on a blocking wait in coro mode; these
    /// headers never do, so both pairs are the same).
    reference force_wait() { return wait(); }
    void force_sync() const noexcept { sync(); }

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

    template <typename... Args>
    explicit future(value_tag, Args &&...args) : m_chain(&awaiter::disabled) {
        emplace(std::forward<Args>(args)...);
    }
    future(exception_tag, std::exception_ptr e) noexcept : m_chain(&awaiter::disabled) { store_exception(std::move(e)); }
    explicit future(no_value_tag) noexcept : m_chain(&awaiter::disabled) {}

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
    void store_exception(std::exception_ptr e) noexcept {
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
class [[nodiscard]] future_awaiter : public co_awaiter<future<T>> {
protected:
    using co_awaiter<future<T>>::_owner;

public:
    explicit future_awaiter(future<T> &f) noexcept : co_awaiter<future<T>>(f) {}
    bool await_ready() const noexcept { return _owner.ready(); }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
        this->set_handle(h);
        // Once subscribed the coroutine may run on another thread: touch
        // nothing. Suspended, control returns to the resumer (in coro mode the
        // queue's drain loop, which runs the next one: no extra queue call).
        return _owner.subscribe(this) ? std::noop_coroutine() : h;
    }
    using co_awaiter<future<T>>::await_suspend;  // the callback form
    typename future<T>::reference await_resume() { return _owner.value(); }
    /// Blocks the thread until resolved, then the value.
    typename future<T>::reference wait() { return _owner.wait(); }
};

/// has_value(): a bool (after blocking) or, awaited, a suspension.
template <typename T>
class [[nodiscard]] has_value_awaiter : public future_awaiter<T> {
public:
    using future_awaiter<T>::future_awaiter;
    bool await_resume() const noexcept { return this->_owner.m_state != future<T>::state::none; }
    operator bool() const noexcept {
        this->_owner.sync();
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
            f->store_exception(std::current_exception());
        }
        return finish(f);
    }
    /// Resolves the future with an exception (rethrown to the waiter).
    suspend_point<bool> operator()(std::exception_ptr e) noexcept {
        future<T> *f = claim();
        if (!f) return false;
        f->store_exception(std::move(e));
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

    /// Resolves the future with the exception being handled (call it in a
    /// catch block); true if this call set it.
    bool unhandled_exception() { return set_exception(std::current_exception()); }

    /// Not yet set?
    explicit operator bool() const noexcept { return m_future.load(std::memory_order_relaxed) != nullptr; }

    /// An identifier of this promise's target (the future's address; null
    /// when empty), to find it again in a container. Never dereference it.
    const void *get_id() const noexcept { return m_future.load(std::memory_order_relaxed); }

    /// Binds the arguments of a later setting: returns a function object
    /// (owning this promise, which is left empty, and copies of `args`) that
    /// sets the value when called, returning the setting's suspend_point<bool>.
    template <typename... Args>
    auto bind(Args &&...args) {
        return [p = std::move(*this), a = std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)]() mutable {
            return std::apply(p, std::move(a));
        };
    }

    /// Takes the target out, leaving the promise empty (null if it was); the
    /// first one wins. The future is then resolved by nobody: this is for
    /// code that only needs to win the race (as COCLS's helpers do).
    future<T> *claim() noexcept {
        if (!m_future.load(std::memory_order_relaxed)) return nullptr;
        return m_future.exchange(nullptr, std::memory_order_acq_rel);
    }

    using future_t = future<T>;
    using reference_type = std::add_lvalue_reference_t<typename future<T>::value_storage>;

private:
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

/// A promise that sets a default value when destroyed unset (instead of
/// resolving its future without a value). The default is given with the
/// promise it takes over: `promise_with_default<int>(std::move(p), -1)`.
template <typename T>
class promise_with_default : public promise<T> {
public:
    using super = promise<T>;
    using promise<T>::promise;
    template <typename... Args>
    promise_with_default(super &&prom, Args &&...args) : super(std::move(prom)), def(std::forward<Args>(args)...) {}
    promise_with_default(promise_with_default &&) = default;
    promise_with_default &operator=(promise_with_default &&other) {
        if (this != &other) {
            super::operator=(std::move(other));
            def = std::move(other.def);
        }
        return *this;
    }
    ~promise_with_default() { this->set_value(std::move(def)); }

protected:
    T def;
};

/// A promise that sets the constant `val` when destroyed unset.
template <typename T, T val>
class promise_with_default_v : public promise<T> {
public:
    using super = promise<T>;
    using promise<T>::promise;
    promise_with_default_v() = default;
    promise_with_default_v(super &&p) : super(std::move(p)) {}
    promise_with_default_v(promise_with_default_v &&) = default;
    promise_with_default_v &operator=(promise_with_default_v &&) = default;
    ~promise_with_default_v() { this->set_value(val); }
};

/// A promise that sets `*val` (an object with static storage) when destroyed unset.
template <typename T, const T *val>
class promise_with_default_vp : public promise<T> {
public:
    using super = promise<T>;
    using promise<T>::promise;
    promise_with_default_vp() = default;
    promise_with_default_vp(super &&p) : super(std::move(p)) {}
    promise_with_default_vp(promise_with_default_vp &&) = default;
    promise_with_default_vp &operator=(promise_with_default_vp &&) = default;
    ~promise_with_default_vp() { this->set_value(*val); }
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
    /// Fills the future with the one `fn()` returns (as future<T>::operator<<);
    /// `fn` is called once it resolves. Instead of get_promise().
    template <typename Factory>
        requires ReturnsFuture<Factory, T>
    future_with_cb &operator<<(Factory &&fn) {
        future<T>::operator<<(std::forward<Factory>(fn));
        if (!future<T>::subscribe(static_cast<awaiter *>(this))) on_resolved(this, nullptr);
        return *this;
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

/// Member `fn` of `Obj` (`suspend_point<void> (Obj::*)(future<T> &) noexcept`)
/// handles the result of a future, without a coroutine: a member of `Obj`,
/// built with `*this`. `awt << [&] { return start_op(); }` keeps the returned
/// future inside and calls `owner.fn(future)` when it resolves (at once if it
/// is resolved already), on the resolving thread; the suspend point `fn`
/// returns goes to that thread. One operation at a time; not movable.
template <auto fn>
class call_fn_future_awaiter;

template <typename T, typename Obj, suspend_point<void> (Obj::*fn)(future<T> &) noexcept>
class call_fn_future_awaiter<fn> : public awaiter {
public:
    explicit call_fn_future_awaiter(Obj &owner) noexcept { set_resume_fn(&wakeup, &owner); }
    call_fn_future_awaiter(const call_fn_future_awaiter &) = delete;
    call_fn_future_awaiter &operator=(const call_fn_future_awaiter &) = delete;

    template <typename Fn>
        requires ReturnsFuture<Fn, T>
    void operator<<(Fn &&xfn) {
        m_fut << std::forward<Fn>(xfn);
        if (!m_fut.subscribe(this)) resume();
    }

protected:
    future<T> m_fut;

private:
    static suspend_point<void> wakeup(awaiter *me, void *owner) noexcept {
        return (static_cast<Obj *>(owner)->*fn)(static_cast<call_fn_future_awaiter *>(me)->m_fut);
    }
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
