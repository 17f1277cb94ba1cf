// awaiter: the base of cocls awaiters. While a coroutine is suspended its
// awaiter stays put, so an awaiter address identifies a waiting coroutine (or,
// with set_resume_fn, a callback). Waiters are kept in collectors: one atomic
// pointer holding a lock-free chain of awaiters, linked through `_next`; the
// chain operations are the core's (cot_chain_push / cot_chain_take) and wake
// waiters in the order they subscribed.
#ifndef COCLS_AWAITER_H_INCLUDED
#define COCLS_AWAITER_H_INCLUDED

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>

#include "detail/core.h"
#include "detail/tsan.h"
#include "suspend_point.h"

// COCLS's awaiter.h names these standard headers; programs written for it may rely on them.
#include <algorithm>
#include <cassert>

namespace cocls {

class awaiter;

/// A chain of awaiters: nullptr (empty), a chain, or a marker such as
/// `&awaiter::disabled` (closed: no more subscriptions).
using awaiter_collector = std::atomic<awaiter *>;

class awaiter {
public:
    /// Called instead of resuming a coroutine; returns what it made ready.
    using resume_fn = suspend_point<void> (*)(awaiter *self, void *context) noexcept;
    /// The form of COCLS's documentation: stores a coroutine to resume in `out`.
    using resume_out_fn = void (*)(awaiter *self, void *context, std::coroutine_handle<> &out) noexcept;

    awaiter() noexcept : _next(nullptr), _context(nullptr), _fn{nullptr}, _kind(kind::none) {}
    awaiter(resume_fn fn, void *context = nullptr) noexcept { set_resume_fn(fn, context); }
    awaiter(resume_out_fn fn, void *context = nullptr) noexcept { set_resume_fn(fn, context); }

    /// Wakes what waits here: returns the coroutine as a suspend point (which
    /// resumes it when discarded), or calls the resume function.
    suspend_point<void> resume() noexcept {
        switch (_kind) {
        case kind::coroutine: return std::coroutine_handle<>::from_address(_context);
        case kind::function: return _fn.plain(this, _context);
        case kind::out_function: {
            std::coroutine_handle<> h;
            _fn.out(this, _context, h);
            return h;
        }
        default: return {};
        }
    }

    /// The coroutine to resume (the caller resumes it), after running a
    /// resume function if one is set; noop_coroutine() if there is none.
    std::coroutine_handle<> resume_handle() noexcept {
        if (_kind == kind::coroutine) return std::coroutine_handle<>::from_address(_context);
        auto sp = resume();
        auto h = sp.take();
        return h ? h : std::noop_coroutine();
    }

    void set_handle(std::coroutine_handle<> h) noexcept {
        _kind = kind::coroutine;
        _context = h.address();
    }
    void set_resume_fn(resume_fn fn, void *context = nullptr) noexcept {
        _kind = kind::function;
        _fn.plain = fn;
        _context = context;
    }
    void set_resume_fn(resume_out_fn fn, void *context = nullptr) noexcept {
        _kind = kind::out_function;
        _fn.out = fn;
        _context = context;
    }

    /// Adds this awaiter to `chain` (any thread, lock-free).
    void subscribe(awaiter_collector &chain) noexcept {
        detail::tsan_release(this);
        cot_chain_push(slot(chain), this, nullptr);
    }

    /// Adds this awaiter unless `chain` holds `ready_state`: false means the
    /// awaited thing is ready (nothing subscribed).
    bool subscribe_check_ready(awaiter_collector &chain, awaiter &ready_state) noexcept {
        detail::tsan_release(this);
        if (cot_chain_push(slot(chain), this, &ready_state)) return true;
        detail::tsan_acquire(&chain);  // what the one who closed it did
        return false;
    }
    /// subscribe_check_ready with `awaiter::disabled` (COCLS's older name).
    bool subscribe_check_disabled(awaiter_collector &chain) noexcept {
        return subscribe_check_ready(chain, disabled);
    }

    /// Empties `chain` and wakes its awaiters, the last subscribed first (as
    /// COCLS, whose chain is a stack).
    static suspend_point<void> resume_chain(awaiter_collector &chain, awaiter *skip = nullptr) noexcept {
        return resume_chain_lk(newest_first(take(chain, nullptr)), skip);
    }
    /// Wakes the awaiters of `chain` (the last subscribed first) and closes
    /// it with `ready_state`, so later subscribe_check_ready calls fail.
    static suspend_point<void> resume_chain_set_ready(awaiter_collector &chain, awaiter &ready_state = disabled,
                                                      awaiter *skip = nullptr) noexcept {
        return resume_chain_lk(newest_first(take(chain, &ready_state)), skip);
    }
    /// Same, adding the woken coroutines to `into` (one suspend point for a
    /// whole resolution: no intermediate ones).
    template <typename T>
    static void resume_chain_set_ready(awaiter_collector &chain, suspend_point<T> &into,
                                       awaiter &ready_state = disabled) noexcept {
        resume_list(newest_first(take(chain, &ready_state)), into, nullptr);
    }
    /// Reverses a list taken from a chain (the core gives it oldest first).
    static awaiter *newest_first(awaiter *list) noexcept {
        if (!list || !list->_next) [[likely]]
            return list;
        awaiter *out = nullptr;
        while (list) {
            awaiter *a = list;
            detail::tsan_acquire(a);  // what the subscriber did before it subscribed
            list = a->_next;
            a->_next = out;
            out = a;
        }
        return out;
    }
    /// Wakes a list as given (a list taken from a chain: newest_first() of
    /// it gives COCLS's order), except `skip`.
    static suspend_point<void> resume_chain_lk(awaiter *list, awaiter *skip = nullptr) noexcept {
        suspend_point<void> ready;
        resume_list(list, ready, skip);
        return ready;
    }
    template <typename T>
    static void resume_list(awaiter *list, suspend_point<T> &into, awaiter *skip) noexcept {
        while (list) {
            awaiter *a = list;
            detail::tsan_acquire(a);  // what the subscriber did before it subscribed
            list = list->_next;  // read before waking: `a` may be gone after
            a->_next = nullptr;
            if (a == skip) continue;
            if (a->_kind == kind::coroutine) into << std::coroutine_handle<>::from_address(a->_context);
            else into << a->resume();
        }
    }

    /// The next awaiter in a chain; first member (the core links through it).
    awaiter *_next;
    /// A coroutine address or the resume function's context.
    void *_context;
    union fn_t {
        resume_fn plain;
        resume_out_fn out;
    } _fn;
    enum class kind : unsigned char { none, coroutine, function, out_function } _kind;

    /// For awaiters that usually never wait (mutex_awaiter): the fields are
    /// left unset, to be set only on the way to waiting (set_handle or
    /// set_resume_fn; the core sets `_next`). Saves their stores on the path
    /// that does not wait.
    struct unset_t {};
    explicit awaiter(unset_t) noexcept {}

    /// A marker: a future holding it was never initialised.
    static awaiter instance;
    /// A marker: a chain holding it is closed (the awaited thing is ready).
    static awaiter disabled;

private:
    static void **slot(awaiter_collector &chain) noexcept { return reinterpret_cast<void **>(&chain); }
    static awaiter *take(awaiter_collector &chain, awaiter *replacement) noexcept {
        detail::tsan_release(&chain);
        return static_cast<awaiter *>(cot_chain_take(slot(chain), replacement, replacement ? replacement : &disabled));
    }
};

inline awaiter awaiter::instance;
inline awaiter awaiter::disabled;

static_assert(offsetof(awaiter, _next) == 0, "the core links awaiters through their first word");
static_assert(sizeof(awaiter_collector) == sizeof(void *) && awaiter_collector::is_always_lock_free);

/// An awaiter whose resume function and handle may be set by anyone.
class malleable_awaiter : public awaiter {};

/// Blocks a thread until resumed (the core's parking: cot_park/cot_unpark_all).
class sync_awaiter : public awaiter {
public:
    sync_awaiter() noexcept { set_resume_fn(&sync_awaiter::wake, nullptr); }
    sync_awaiter(const sync_awaiter &) = delete;
    sync_awaiter &operator=(const sync_awaiter &) = delete;

    /// Blocks until wake() ran (from any thread).
    void wait_sync() noexcept {
        while (m_flag.load(std::memory_order_acquire) == 0) cot_park(word(), 0, COT_FOREVER);
    }
    void wake() noexcept {
        const std::uint32_t *w = word();  // the waiter may be gone after the store
        m_flag.store(1, std::memory_order_release);
        cot_unpark_all(w);
    }

private:
    static suspend_point<void> wake(awaiter *self, void *) noexcept {
        static_cast<sync_awaiter *>(self)->wake();
        return {};
    }
    const std::uint32_t *word() const noexcept { return reinterpret_cast<const std::uint32_t *>(&m_flag); }

    std::atomic<std::uint32_t> m_flag{0};

public:
    /// wake() under COCLS's name.
    void wakeup() noexcept { wake(); }
};

/// COCLS's generic awaiter of an `Owner` that has ready(), subscribe(awaiter *)
/// (false: ready already) and value(): `co_await` suspends until ready, then
/// returns value(); wait() / sync() block the thread instead. future<T>'s
/// awaiter (future_awaiter<T>) derives from co_awaiter<future<T>>.
template <typename Owner>
class [[nodiscard]] co_awaiter : public awaiter {
public:
    co_awaiter(Owner &owner) noexcept : _owner(owner) {}
    co_awaiter(const co_awaiter &) = default;
    co_awaiter &operator=(const co_awaiter &) = delete;

    bool await_ready() { return _owner.ready(); }
    bool await_suspend(std::coroutine_handle<> h) {
        set_handle(h);
        return _owner.subscribe(this);
    }
    /// The callback form: `fn(this, ctx)` runs instead of resuming a coroutine.
    bool await_suspend(resume_fn fn, void *ctx) {
        set_resume_fn(fn, ctx);
        return _owner.subscribe(this);
    }
    decltype(auto) await_resume() { return _owner.value(); }

    /// Blocks the thread until ready (the core's parking); never throws.
    void sync() noexcept {
        if (_owner.ready()) return;
        sync_awaiter w;
        if (_owner.subscribe(&w)) w.wait_sync();
    }
    /// sync(), then value().
    decltype(auto) wait() {
        sync();
        return _owner.value();
    }
    /// COCLS's debug builds assert on a blocking wait in coro mode unless
    /// forced; these headers never assert, so these are sync() and wait().
    void force_sync() noexcept { sync(); }
    decltype(auto) force_wait() { return wait(); }
    bool subscribe(awaiter *a) { return _owner.subscribe(a); }

protected:
    Owner &_owner;
};

/// An awaiter that calls member `fn` of a `T` when woken (`T *` given at
/// construction); `fn` returns what it made ready.
template <typename T, suspend_point<void> (T::*fn)(awaiter *) noexcept>
class call_fn_awaiter : public awaiter {
public:
    explicit call_fn_awaiter(T *target) noexcept { set_resume_fn(&wakeup, target); }

protected:
    static suspend_point<void> wakeup(awaiter *me, void *target) noexcept { return (static_cast<T *>(target)->*fn)(me); }
};

}  // namespace cocls

#endif
