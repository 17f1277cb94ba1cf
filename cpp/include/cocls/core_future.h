// core_future: cocls futures and the core's futures (`cot_future`, shared
// with C, Lua and stackful coroutines), in both directions.
//
// - `co_await cocls::core_await(f)` suspends a coroutine until the core
//   future `f` is settled (on any thread), then gives its value (`void *`)
//   or throws: `core_error` for an error, `await_canceled_exception` when its
//   promise was dropped. The coroutine resumes on the settling thread, by
//   that thread's mode, as for `co_await future`.
// - `cocls::from_core(f)` is the same as a `future<void *>` (one heap block
//   while it waits, for the promise it holds).
// - `cocls::to_core(fut)` exposes a `cocls::future<T>` as a new `cot_future`
//   (free it with cot_future_free): settled when `fut` resolves, with a heap
//   copy of the value (destroyed with the core future's last handle), or
//   failed with the exception's message, or dropped. `fut` itself is
//   untouched: plain futures still never allocate.
#ifndef COCLS_CORE_FUTURE_H_INCLUDED
#define COCLS_CORE_FUTURE_H_INCLUDED

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "awaiter.h"
#include "detail/core.h"
#include "exceptions.h"
#include "future.h"
#include "suspend_point.h"

namespace cocls {

/// A core future settled with an error (`cot_promise_fail`): its code and message.
class core_error : public std::runtime_error {
public:
    core_error(int code, const char *message) : std::runtime_error(message ? message : ""), m_code(code) {}
    /// The negative `COT_E*` (or application) code.
    int code() const noexcept { return m_code; }

private:
    int m_code;
};

namespace detail {
/// The value of a settled core future, or the exception its result stands for.
inline void *core_value(const cot_future *f) {
    void *value = nullptr;
    const char *message = nullptr;
    int rc = cot_future_result(f, &value, &message);
    if (rc == 0) return value;
    if (rc == COT_EDROPPED) throw await_canceled_exception();
    if (rc == COT_EBUSY) throw value_not_ready_exception();
    throw core_error(rc, message);
}
}  // namespace detail

/// The awaiter of `co_await core_await(f)`; `f` must outlive the wait.
class [[nodiscard]] core_await {
public:
    explicit core_await(const cot_future *f) noexcept : m_future(f) {}
    core_await(const core_await &) = delete;
    core_await &operator=(const core_await &) = delete;

    bool await_ready() const noexcept { return cot_future_state(m_future) != COT_FUTURE_PENDING; }

    /// Registers a core callback. The state word decides who goes on when the
    /// future settles during this call: the callback resumes the coroutine
    /// only if it comes after the suspension was armed.
    bool await_suspend(std::coroutine_handle<> h) noexcept {
        m_handle = h;
        cot_future_on_ready(m_future, &core_await::settled, this, nullptr);
        return m_state.exchange(armed, std::memory_order_acq_rel) != fired;
    }

    void *await_resume() const { return detail::core_value(m_future); }

private:
    enum : unsigned char { idle, armed, fired };

    static void settled(const cot_future *, void *self) noexcept {
        auto *me = static_cast<core_await *>(self);
        if (me->m_state.exchange(fired, std::memory_order_acq_rel) == armed) {
            suspend_point<void> sp;
            sp << me->m_handle;  // resumed as this thread's mode says, when sp goes
        }
    }

    const cot_future *m_future;
    std::coroutine_handle<> m_handle;
    std::atomic<unsigned char> m_state{idle};
};

/// A cocls future of the core future `f` (its own handle of it is taken, so
/// `f` may be freed at once).
inline future<void *> from_core(const cot_future *f) {
    return future<void *>([f](promise<void *> p) {
        auto *held = new promise<void *>(std::move(p));
        cot_future_on_ready(
            f,
            [](const cot_future *settled, void *data) {
                std::unique_ptr<promise<void *>> p(static_cast<promise<void *> *>(data));
                if (cot_future_state(settled) == COT_FUTURE_DROPPED) return;  // p drops with it
                try {
                    (*p)(detail::core_value(settled));
                } catch (...) {
                    (*p)(std::current_exception());
                }
            },
            held, nullptr);
    });
}

namespace detail {
/// Watches a cocls future for to_core: settles the core promise it owns.
template <typename T>
struct core_settler : awaiter {
    future<T> *source;
    cot_promise *target;

    static suspend_point<void> run(awaiter *self, void *) noexcept {
        std::unique_ptr<core_settler> me(static_cast<core_settler *>(self));
        me->settle();
        cot_promise_free(me->target);  // unsettled: the core future is dropped
        return {};
    }

    void settle() noexcept {
        try {
            if constexpr (std::is_void_v<T>) {
                source->value();
                cot_promise_set(target, nullptr, nullptr);
            } else {
                using V = std::remove_cvref_t<T>;
                auto copy = std::make_unique<V>(source->value());
                if (cot_promise_set(target, copy.get(), [](void *v) { delete static_cast<V *>(v); }) == 0)
                    copy.release();
            }
        } catch (const await_canceled_exception &) {
            // dropped: leave the core promise unsettled
        } catch (const core_error &e) {
            cot_promise_fail(target, e.code() < 0 ? e.code() : COT_EIO, e.what());
        } catch (const std::exception &e) {
            cot_promise_fail(target, COT_EIO, e.what());
        } catch (...) {
            cot_promise_fail(target, COT_EIO, "unknown exception");
        }
    }
};
}  // namespace detail

/// A new core future settled when `fut` resolves (see the top of this
/// header); free it with cot_future_free. `fut` must be armed (a promise was
/// made, or it is a coroutine's result) and must outlive its resolution, as
/// any pending cocls future. Throws std::bad_alloc if the core is out of memory.
template <typename T>
cot_future *to_core(future<T> &fut) {
    cot_promise *p = nullptr;
    cot_future *out = nullptr;
    if (cot_promise_new(&p, &out) != 0) throw std::bad_alloc();
    if (!fut.initialized()) {
        cot_promise_free(p);  // nothing will resolve it: dropped
        return out;
    }
    auto *w = new detail::core_settler<T>;
    w->source = &fut;
    w->target = p;
    w->set_resume_fn(&detail::core_settler<T>::run, nullptr);
    if (!fut.subscribe(w)) detail::core_settler<T>::run(w, nullptr);
    return out;
}

}  // namespace cocls

#endif
