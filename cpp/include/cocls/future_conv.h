// future_conv<fn>: turns a future<From> into a future<To> through a function,
// without a coroutine. The object holds the future<From> and the promise<To>
// (it is an awaiter: no allocation); when the future<From> resolves, `fn`
// converts the value and sets the promise, on the thread that resolved it.
// An exception (also from the conversion, or a dropped promise's
// await_canceled_exception) goes to the future<To>. The object must outlive
// the operation, and serves one operation at a time.
//
//     class Conv {
//         int conv(int &v) { return v + 1; }
//         future_conv<&Conv::conv> m_conv{this};
//         future<int> run() { return m_conv << [&] { return work(); }; }
//     };
//
// fn may be:
//   To (Context::*)(From &)                          constructed with Context *
//   suspend_point<void> (Context::*)(From &, promise<To> &)   sets the promise itself
//   To (*)(From &)                                   default constructed
//   To (*)(From &, Context *)                        constructed with Context *
#ifndef COCLS_FUTURE_CONV_H_INCLUDED
#define COCLS_FUTURE_CONV_H_INCLUDED

#include <exception>
#include <utility>

#include "awaiter.h"
#include "future.h"
#include "suspend_point.h"

namespace cocls {

template <auto fn>
class future_conv;

/// What all future_conv have: the pending future<From> and promise<To>.
template <typename From, typename To>
class future_conv_promise_base : public awaiter {
public:
    using awaiter::awaiter;

    /// Calls `fn` (returning future<From>) and returns the future<To> its
    /// converted result resolves.
    template <typename Fn>
        requires ReturnsFuture<Fn, From>
    future<To> operator<<(Fn &&fn) {
        return [&](promise<To> prom) {
            m_prom = std::move(prom);
            capture(std::forward<Fn>(fn));
        };
    }

    /// `conv(std::move(p)) << fn`: the converted result of `fn` sets `p`
    /// (for a conversion that continues with another operation).
    class [[nodiscard]] Hlp {
    public:
        template <typename Fn>
            requires ReturnsFuture<Fn, From>
        void operator<<(Fn &&fn) {
            m_owner.capture(std::forward<Fn>(fn));
        }

    private:
        friend class future_conv_promise_base;
        explicit Hlp(future_conv_promise_base &owner) noexcept : m_owner(owner) {}
        future_conv_promise_base &m_owner;
    };

    Hlp operator()(promise<To> &&prom) {
        m_prom = std::move(prom);
        return Hlp(*this);
    }

protected:
    // Takes the future `fn` returns and waits for it (or converts now).
    template <typename Fn>
    void capture(Fn &&fn) {
        m_fut << std::forward<Fn>(fn);
        if (!m_fut.initialized() || !m_fut.subscribe(this)) resume();
    }

    // Converts with `convert(value)` and sets the promise; returns what the
    // setting made ready.
    template <typename Convert>
    suspend_point<void> finish(Convert &&convert) noexcept {
        promise<To> p = std::move(m_prom);
        suspend_point<void> ready;
        try {
            if constexpr (std::is_void_v<To>) {
                convert(*m_fut);
                ready << p();
            } else {
                ready << p(convert(*m_fut));
            }
        } catch (...) {
            ready << p(std::current_exception());
        }
        return ready;
    }

    promise<To> m_prom;
    future<From> m_fut;
};

template <typename From, typename To, typename Context, bool ne, To (Context::*fn)(From &) noexcept(ne)>
class future_conv<fn> : public future_conv_promise_base<From, To> {
public:
    future_conv(Context *ctx) noexcept : future_conv_promise_base<From, To>(&on_ready, ctx) {}

private:
    static suspend_point<void> on_ready(awaiter *me, void *ctx) noexcept {
        return static_cast<future_conv *>(me)->finish(
            [ctx](From &v) -> To { return (static_cast<Context *>(ctx)->*fn)(v); });
    }
};

template <typename From, typename To, typename Context, bool ne,
          suspend_point<void> (Context::*fn)(From &, promise<To> &) noexcept(ne)>
class future_conv<fn> : public future_conv_promise_base<From, To> {
public:
    future_conv(Context *ctx) noexcept : future_conv_promise_base<From, To>(&on_ready, ctx) {}

private:
    static suspend_point<void> on_ready(awaiter *me, void *ctx) noexcept {
        auto *self = static_cast<future_conv *>(me);
        promise<To> p = std::move(self->m_prom);
        try {
            return (static_cast<Context *>(ctx)->*fn)(*self->m_fut, p);
        } catch (...) {
            suspend_point<void> ready;
            ready << p(std::current_exception());
            return ready;
        }
    }
};

template <typename From, typename To, bool ne, To (*fn)(From &) noexcept(ne)>
class future_conv<fn> : public future_conv_promise_base<From, To> {
public:
    future_conv() noexcept : future_conv_promise_base<From, To>(&on_ready, nullptr) {}

private:
    static suspend_point<void> on_ready(awaiter *me, void *) noexcept {
        return static_cast<future_conv *>(me)->finish([](From &v) -> To { return fn(v); });
    }
};

template <typename From, typename To, typename Context, bool ne, To (*fn)(From &, Context *) noexcept(ne)>
class future_conv<fn> : public future_conv_promise_base<From, To> {
public:
    future_conv(Context *ctx) noexcept : future_conv_promise_base<From, To>(&on_ready, ctx) {}

private:
    static suspend_point<void> on_ready(awaiter *me, void *ctx) noexcept {
        return static_cast<future_conv *>(me)->finish(
            [ctx](From &v) -> To { return fn(v, static_cast<Context *>(ctx)); });
    }
};

}  // namespace cocls

#endif
