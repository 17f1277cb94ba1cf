// signal<T>: connects code that produces values (through a collector, a
// callable) with coroutines that wait for them (on an emitter, an awaitable).
// Calling the collector wakes every coroutine waiting on an emitter of the
// signal at that moment, with a reference to the value. Unlike a queue
// nothing is stored: a coroutine that is not waiting on its emitter when a
// value comes (it is busy or suspended on something else) misses it. The
// emitters wake newest first: the one that started waiting last runs first
// (COCLS's order; a loop that waits again after each value thus alternates).
//
// The shared state holds the chain of waiting emitters (the core's lock-free
// chain) and the current value. The signal object and the collectors hold it
// strongly, emitters weakly: when the last collector (and the signal itself)
// is gone, the waiting emitters get await_canceled_exception.
#ifndef COCLS_SIGNAL_H_INCLUDED
#define COCLS_SIGNAL_H_INCLUDED

#include <concepts>
#include <coroutine>
#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "awaiter.h"
#include "coro_queue.h"
#include "detail/core.h"
#include "exceptions.h"
#include "suspend_point.h"

// What COCLS's signal.h also brings in (programs written for it may rely on it).
#include "function.h"
#include "queue.h"

// COCLS's signal.h names these standard headers; programs written for it may rely on them.
#include <variant>

namespace cocls {

template <typename T>
class signal {
public:
    using value_type = T;
    using reference = std::add_lvalue_reference_t<T>;
    using rvalue_reference = std::add_rvalue_reference_t<T>;
    /// What the value is stored as (bool for a signal<void>).
    using base_type = std::conditional_t<std::is_void_v<T>, bool, std::remove_cvref_t<T>>;
    using rvalue_param = std::conditional_t<std::is_void_v<T>, bool &&, rvalue_reference>;
    using lvalue_param = std::conditional_t<std::is_void_v<T>, bool &, reference>;

private:
    using value_ptr = std::remove_reference_t<lvalue_param> *;

    struct state {
        awaiter_collector chain{nullptr};  // the waiting emitters
        value_ptr value = nullptr;         // the current value; null: none / gone
        std::optional<base_type> storage;  // a value the collector constructed

        state() = default;
        state(const state &) = delete;
        state &operator=(const state &) = delete;
        // The last strong reference went: the waiting emitters resume (here
        // in normal mode, queued in coro mode) and throw await_canceled_exception.
        ~state() {
            value = nullptr;
            wake();
        }

        // Wakes every emitter waiting now, the one that started waiting last
        // first (COCLS's order: its chain is a stack); the result's value is
        // their count.
        suspend_point<std::size_t> wake() noexcept {
            auto *list = awaiter::newest_first(
                static_cast<awaiter *>(cot_chain_take(reinterpret_cast<void **>(&chain), nullptr, nullptr)));
            std::size_t n = 0;
            for (awaiter *a = list; a; a = a->_next) n++;
            suspend_point<std::size_t> ready(n);
            ready << awaiter::resume_chain_lk(list);
            return ready;
        }
    };

public:
    /// The producing side: call it with a value. Copyable; keeps the signal
    /// alive. One call at a time (not thread-safe against itself).
    class collector {
    public:
        explicit collector(std::shared_ptr<state> s) noexcept : m_state(std::move(s)) {}

        /// Constructs the value from `args` and wakes the waiting emitters.
        /// They are in the returned suspend point (its value: how many):
        /// discarding it in normal mode runs them here, each until it
        /// suspends, before the call returns; in a coroutine co_await it (a
        /// discarded one only queues them, and a next value would overwrite
        /// this one before they run).
        template <typename... Args>
            requires std::constructible_from<base_type, Args...>
        suspend_point<std::size_t> operator()(Args &&...args) const {
            m_state->storage.emplace(std::forward<Args>(args)...);
            m_state->value = std::addressof(*m_state->storage);
            return m_state->wake();
        }
        /// Moves the value in, then as above.
        suspend_point<std::size_t> operator()(rvalue_param v) const {
            m_state->storage.emplace(std::move(v));
            m_state->value = std::addressof(*m_state->storage);
            return m_state->wake();
        }
        /// Passes a reference to `v` (no copy): `v` must live until the
        /// emitters ran (discard or co_await the result at once).
        suspend_point<std::size_t> operator()(lvalue_param v) const {
            m_state->value = std::addressof(v);
            return m_state->wake();
        }

        /// The signal this collector feeds.
        operator signal() const { return signal(m_state); }

    private:
        std::shared_ptr<state> m_state;
    };

    /// The consuming side: `co_await e` suspends until the collector's next
    /// call, which resumes the coroutine on the collector's thread, and
    /// returns a reference to the value (valid until the coroutine suspends
    /// again). Throws await_canceled_exception when the signal is gone (at
    /// once if it already was, or for a default-constructed emitter).
    /// Co_await it again for the next value; one coroutine per emitter.
    class emitter : public awaiter {
    public:
        emitter() = default;
        explicit emitter(std::weak_ptr<state> s) noexcept : m_state(std::move(s)) {}
        /// Copies share the signal, never a pending wait.
        emitter(const emitter &o) : awaiter(), m_state(o.m_state) {}
        emitter(emitter &&o) noexcept : awaiter(), m_state(std::move(o.m_state)) {}
        emitter &operator=(const emitter &o) {
            m_state = o.m_state;
            return *this;
        }
        emitter &operator=(emitter &&o) noexcept {
            m_state = std::move(o.m_state);
            return *this;
        }

        static constexpr bool await_ready() noexcept { return false; }
        std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
            std::shared_ptr<state> s = m_state.lock();
            if (!s) return h;  // gone: await_resume throws
            set_handle(h);
            subscribe(s->chain);
            // From here the collector may resume us on its thread. If `s` was
            // the last reference, releasing it cancels us (queued in coro mode).
            s.reset();
            return coro_queue::next();
        }
        reference await_resume() {
            std::shared_ptr<state> s = m_state.lock();
            if (!s || !s->value) throw await_canceled_exception();
            if constexpr (!std::is_void_v<T>) return *s->value;
        }

    protected:
        std::weak_ptr<state> m_state;
    };

    /// A new signal (its state on the heap).
    signal() : m_state(std::make_shared<state>()) {}

    /// An emitter to co_await; it does not keep the signal alive.
    emitter get_emitter() const { return emitter(m_state); }
    /// A collector to call; it keeps the signal alive.
    collector get_collector() const { return collector(m_state); }

    /// Calls `fn(value)` (`fn()` for void) on the collector's thread for
    /// every value, until it returns false or the signal is gone. The
    /// listener lives on the heap until then; an exception from `fn` ends it
    /// too.
    template <typename Fn>
        requires((std::is_void_v<T> && std::constructible_from<bool, std::invoke_result_t<Fn &>>) ||
                 (!std::is_void_v<T> && std::constructible_from<bool, std::invoke_result_t<Fn &, reference>>))
    void connect(Fn &&fn) {
        class listener : public emitter {
        public:
            listener(Fn &&f, std::weak_ptr<state> s) : emitter(std::move(s)), m_fn(std::forward<Fn>(f)) {
                this->set_resume_fn(&listener::on_value, nullptr);
            }

        private:
            static suspend_point<void> on_value(awaiter *self, void *) noexcept {
                auto *me = static_cast<listener *>(self);
                std::shared_ptr<state> s = me->m_state.lock();
                bool again = false;
                if (s && s->value) {
                    try {
                        if constexpr (std::is_void_v<T>) again = static_cast<bool>(me->m_fn());
                        else again = static_cast<bool>(me->m_fn(*s->value));
                    } catch (...) {
                        again = false;
                    }
                }
                if (again) me->subscribe(s->chain);
                else delete me;
                return {};
            }

            std::decay_t<Fn> m_fn;
        };
        auto *l = new listener(std::forward<Fn>(fn), m_state);
        l->subscribe(m_state->chain);
    }

    /// An emitter that, on its first co_await, makes a new signal, starts
    /// waiting on it and only then calls `fn(collector)` to register the
    /// collector with a producer: the first value cannot be missed. Later
    /// co_awaits work as an emitter's. When the producer drops the
    /// collector, the waiter gets await_canceled_exception.
    template <typename Fn>
    class hook_up_emitter : protected emitter {
    public:
        explicit hook_up_emitter(Fn &&fn) : m_fn(std::forward<Fn>(fn)) {}

        using emitter::await_ready;
        using emitter::await_resume;
        /// `fn` must not throw (it runs while the coroutine is suspended).
        std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
            if (m_hooked) return emitter::await_suspend(h);
            m_hooked = true;
            auto s = std::make_shared<state>();
            this->m_state = s;
            std::decay_t<Fn> fn(std::move(m_fn));  // our frame may be gone once fn published the collector
            this->set_handle(h);
            this->subscribe(s->chain);
            fn(collector(std::move(s)));
            return coro_queue::next();
        }

    private:
        std::decay_t<Fn> m_fn;
        bool m_hooked = false;
    };

    /// See hook_up_emitter.
    template <typename Fn>
        requires std::invocable<Fn, collector>
    static hook_up_emitter<Fn> hook_up(Fn &&fn) {
        return hook_up_emitter<Fn>(std::forward<Fn>(fn));
    }

private:
    explicit signal(std::shared_ptr<state> s) noexcept : m_state(std::move(s)) {}

    std::shared_ptr<state> m_state;
};

}  // namespace cocls

#endif
