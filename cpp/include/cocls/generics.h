// Type helpers for code that awaits "anything": how an awaitable yields its
// awaiter, and what co_await on it returns. Nothing here suspends.
#ifndef COCLS_GENERICS_H_INCLUDED
#define COCLS_GENERICS_H_INCLUDED

#include <coroutine>
#include <type_traits>
#include <utility>

namespace cocls {

/// X has a member `operator co_await`.
template <typename X>
concept has_co_await = requires(X &&x) { std::forward<X>(x).operator co_await(); };

/// X has a free `operator co_await`.
template <typename X>
concept has_global_co_await = requires(X &&x) { operator co_await(std::forward<X>(x)); };

/// An awaiter that forwards to another one, held by reference (for
/// await_transform: awaits an awaiter without copying it).
template <typename Awt>
class awaiter_wrapper {
public:
    awaiter_wrapper(Awt &owner) noexcept : m_owner(owner) {}
    bool await_ready() { return m_owner.await_ready(); }
    template <typename Handle>
    decltype(auto) await_suspend(Handle h) {
        return m_owner.await_suspend(h);
    }
    decltype(auto) await_resume() { return m_owner.await_resume(); }

private:
    Awt &m_owner;
};

template <typename T>
awaiter_wrapper(T &) -> awaiter_wrapper<T>;

/// The awaiter co_await would use for `obj`: its operator co_await (member,
/// then free), or `obj` itself wrapped by reference.
template <typename Object>
auto retrieve_awaiter(Object &&obj) {
    if constexpr (has_co_await<Object>) {
        return std::forward<Object>(obj).operator co_await();
    } else if constexpr (has_global_co_await<Object>) {
        return operator co_await(std::forward<Object>(obj));
    } else {
        return awaiter_wrapper<std::remove_reference_t<Object>>(obj);
    }
}

namespace detail {
template <typename T>
struct awaiter_of {
    using type = T;
};
template <typename T>
    requires has_co_await<T>
struct awaiter_of<T> {
    using type = decltype(std::declval<T>().operator co_await());
};
template <typename T>
    requires(!has_co_await<T> && has_global_co_await<T>)
struct awaiter_of<T> {
    using type = decltype(operator co_await(std::declval<T>()));
};
}  // namespace detail

namespace detail {
/// The awaiter of `co_await a` as the compiler picks it (no await_transform):
/// a's operator co_await, member then free (a prvalue), or `a` itself (a
/// reference). Unlike retrieve_awaiter, nothing is wrapped or copied.
template <typename A>
decltype(auto) get_awaiter(A &&a) {
    if constexpr (has_co_await<A>) return std::forward<A>(a).operator co_await();
    else if constexpr (has_global_co_await<A>) return operator co_await(std::forward<A>(a));
    else return std::forward<A>(a);
}
}  // namespace detail

/// The awaiter type of awaitable T (T itself when it is an awaiter).
template <typename T>
using awaiter_type = typename detail::awaiter_of<T>::type;

/// What `co_await` on a T returns. Substitution fails (in a requires clause:
/// the constraint is false) when T is not awaitable.
template <typename T>
using awaiter_return_value = decltype(std::declval<awaiter_type<T> &>().await_resume());

}  // namespace cocls

#endif
