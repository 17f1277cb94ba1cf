// shared_future<T>: a future that can be copied and moved. The copies share
// one state on the heap (a future<T> with a reference count), so any number
// of coroutines and threads can wait for the one result. While the result is
// pending the state holds a reference to itself, so every shared_future may
// be dropped before it resolves: the state lives until the promise is set
// (or dropped), then goes with its last reference.
//
// Once resolved, the value is an ordinary variable shared by all copies:
// reading it from several threads is fine, changing it is not synchronised.
// One shared_future object is not to be used by two threads at once (as
// std::shared_ptr); two copies are independent.
#ifndef COCLS_SHARED_FUTURE_H_INCLUDED
#define COCLS_SHARED_FUTURE_H_INCLUDED

#include <atomic>
#include <concepts>
#include <cstddef>
#include <exception>
#include <type_traits>
#include <utility>

#include "async.h"
#include "awaiter.h"
#include "exceptions.h"
#include "future.h"

namespace cocls {

template <typename T, typename Base>
class shared_future_awaiter;

template <typename T, typename Base = future<T>>
class shared_future {
    struct state {
        template <typename... Args>
        explicit state(Args &&...args) : m_future(std::forward<Args>(args)...) {}

        std::atomic<std::size_t> m_refs{1};
        awaiter m_tracer;  // among the waiters while pending: drops the pending reference
        Base m_future;
    };

public:
    using value_type = T;

    /// No state yet (copies share nothing); see init_if_needed(), get_promise().
    shared_future() noexcept = default;

    /// Calls `fn` with the promise of the shared state (as future<T>(fn)).
    template <typename Fn>
        requires std::invocable<Fn, promise<T>>
    shared_future(Fn &&fn) : m_state(new state(std::forward<Fn>(fn))) {
        charge();
    }

    /// Calls `fn` (returning a future) and keeps its result in the shared
    /// state (as future<T>::operator<<).
    template <typename Fn>
        requires(!std::invocable<Fn, promise<T>> && std::invocable<Fn> &&
                 std::same_as<std::invoke_result_t<Fn>, Base>)
    shared_future(Fn &&fn) : m_state(new state()) {
        m_state->m_future << std::forward<Fn>(fn);
        charge();
    }

    /// Starts the coroutine; its result resolves the shared state.
    shared_future(async<T> &&coro) : m_state(new state(std::move(coro))) { charge(); }
    shared_future(async<T> &coro) : m_state(new state(std::move(coro))) { charge(); }

    shared_future(const shared_future &other) noexcept : m_state(other.m_state) {
        if (m_state) m_state->m_refs.fetch_add(1, std::memory_order_relaxed);
    }
    shared_future(shared_future &&other) noexcept : m_state(std::exchange(other.m_state, nullptr)) {}
    shared_future &operator=(shared_future other) noexcept {
        std::swap(m_state, other.m_state);
        return *this;
    }
    ~shared_future() {
        if (m_state) release(m_state);
    }

    /// A shared future resolved with a value.
    template <typename... Args>
    static shared_future set_value(Args &&...args) {
        return shared_future([&](promise<T> p) { p(std::forward<Args>(args)...); });
    }
    /// A shared future resolved with an exception.
    static shared_future set_exception(std::exception_ptr e) {
        return shared_future([&](promise<T> p) { p(std::move(e)); });
    }

    /// Creates a state (fresh, no promise) unless there is one.
    void init_if_needed() {
        if (!m_state) m_state = new state();
    }

    /// The promise of this shared future: a fresh state is armed (copies
    /// made after init_if_needed() share it); an armed one is replaced by a
    /// new state, which the existing copies do not see.
    promise<T> get_promise() {
        if (!m_state || m_state->m_future.initialized()) *this = shared_future(fresh_tag{});
        promise<T> p = m_state->m_future.get_promise();
        charge();
        return p;
    }

    /// The shared future<T> itself (created if there is no state).
    operator Base &() {
        init_if_needed();
        return m_state->m_future;
    }

    /// Resolved (value, exception, or promise dropped)?
    bool ready() const noexcept { return m_state && m_state->m_future.ready(); }
    /// Armed and not resolved yet?
    bool pending() const noexcept { return m_state && m_state->m_future.pending(); }

    /// The value (a reference into the shared state); rethrows a stored
    /// exception; await_canceled_exception if the promise was dropped,
    /// value_not_ready_exception if not resolved.
    decltype(auto) value() {
        if (!m_state) throw value_not_ready_exception();
        return m_state->m_future.value();
    }
    decltype(auto) operator*() { return value(); }

    /// Blocks the calling thread until resolved, then value(). Any number
    /// of threads may wait, each with its own copy.
    decltype(auto) wait() {
        if (!armed()) throw value_not_ready_exception();
        return m_state->m_future.wait();
    }
    /// Same as wait().
    decltype(auto) join() { return wait(); }
    /// Same as wait() (COCLS's name for a blocking wait allowed in a
    /// coroutine; these headers never assert on one).
    decltype(auto) force_wait() { return wait(); }

    /// This handle takes a new state holding the future `fn()` returns (as
    /// the constructor from such a function); other copies keep the old
    /// state. COCLS refills the shared state itself, for every copy, which
    /// destroys it while pending if it is: here that cannot happen.
    template <typename Fn>
        requires(!std::invocable<Fn, promise<T>> && std::invocable<Fn> &&
                 std::same_as<std::invoke_result_t<Fn>, Base>)
    shared_future &operator<<(Fn &&fn) {
        *this = shared_future(std::forward<Fn>(fn));
        return *this;
    }
    /// Blocks until resolved without reading the result (never throws).
    void sync() const noexcept {
        if (armed()) m_state->m_future.sync();
    }
    /// sync() (COCLS's name for a blocking wait allowed in a coroutine;
    /// these headers never assert on one).
    void force_sync() const noexcept { sync(); }

    /// Suspends until resolved, then value(). The awaiter holds a reference
    /// to the state, so the shared_future awaited may be a temporary. The
    /// coroutine resumes on the thread that sets the promise (by its mode).
    shared_future_awaiter<T, Base> operator co_await() const noexcept { return shared_future_awaiter<T, Base>(*this); }

private:
    friend class shared_future_awaiter<T, Base>;
    struct fresh_tag {};
    explicit shared_future(fresh_tag) : m_state(new state()) {}

    bool armed() const noexcept { return m_state && m_state->m_future.initialized(); }

    // Adds the pending reference, held by the tracer until the future
    // resolves; nothing if it is not pending.
    void charge() noexcept {
        state *s = m_state;
        if (!s->m_future.initialized()) return;
        s->m_refs.fetch_add(1, std::memory_order_relaxed);
        s->m_tracer.set_resume_fn(&on_resolved, s);
        if (!s->m_future.subscribe(&s->m_tracer)) release(s);
    }
    // Runs on the thread that resolves the future, among its waiters.
    static suspend_point<void> on_resolved(awaiter *, void *context) noexcept {
        release(static_cast<state *>(context));
        return {};
    }
    static void release(state *s) noexcept {
        if (s->m_refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
    }

    state *m_state = nullptr;
};

/// The awaiter of `co_await shared_future`: keeps the state alive while the
/// coroutine waits. Awaiting one without a promise throws
/// value_not_ready_exception at once.
template <typename T, typename Base>
class [[nodiscard]] shared_future_awaiter {
    using base_awaiter = decltype(std::declval<Base &>().operator co_await());

public:
    explicit shared_future_awaiter(const shared_future<T, Base> &f) noexcept
        : m_keep(f), m_awaiter(m_keep.armed() ? &m_keep.m_state->m_future : nullptr) {}

    bool await_ready() { return !m_awaiter.m_future || m_awaiter.get().await_ready(); }
    auto await_suspend(std::coroutine_handle<> h) { return m_awaiter.get().await_suspend(h); }
    decltype(auto) await_resume() {
        if (!m_awaiter.m_future) throw value_not_ready_exception();
        return m_awaiter.get().await_resume();
    }

private:
    // The base future's awaiter, built only when there is a future to await.
    struct maybe_awaiter {
        explicit maybe_awaiter(Base *f) noexcept : m_future(f) {
            if (f) ::new (static_cast<void *>(m_buffer)) base_awaiter(f->operator co_await());
        }
        maybe_awaiter(const maybe_awaiter &) = delete;
        ~maybe_awaiter() {
            if (m_future) get().~base_awaiter();
        }
        base_awaiter &get() noexcept { return *std::launder(reinterpret_cast<base_awaiter *>(m_buffer)); }

        Base *m_future;
        alignas(base_awaiter) unsigned char m_buffer[sizeof(base_awaiter)];
    };

    shared_future<T, Base> m_keep;
    maybe_awaiter m_awaiter;
};

}  // namespace cocls

#endif
