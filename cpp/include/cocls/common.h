// Basics that COCLS keeps in one header and several of its headers include:
// the Storage concept (what with_allocator needs from an allocator),
// ReturnsFuture, coro_id, CXX20_REQUIRES and COCLS_STATIC_STORAGE_MULTIPLIER.
// Included by the same headers as in COCLS, so the names are found the same
// way; the things they describe live in their own headers.
#ifndef COCLS_COMMON_H_INCLUDED
#define COCLS_COMMON_H_INCLUDED

#include <algorithm>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <type_traits>

/// `CXX20_REQUIRES(cond)` expands to `requires cond`: COCLS's spelling of a
/// constraint that older tools could skip. Every compiler these headers
/// support has concepts, so it is never empty here.
#ifndef CXX20_REQUIRES
#define CXX20_REQUIRES(...) requires __VA_ARGS__
#endif

/// Percentage applied to the sizes of all static_storage<N> (frames differ
/// between compilers and builds): -DCOCLS_STATIC_STORAGE_MULTIPLIER=150.
/// See coro_storage.h.
#ifndef COCLS_STATIC_STORAGE_MULTIPLIER
#define COCLS_STATIC_STORAGE_MULTIPLIER 100
#endif

namespace cocls {

/// An identifier of a coroutine or of anything waiting: an address unique to
/// it (scheduler::ident is the same type).
using coro_id = const void *;

template <typename T>
class future;

/// What with_allocator needs from an allocator (with_allocator.h).
template <typename T>
concept Storage = requires(T &v, void *p, std::size_t sz) {
    { v.alloc(sz) } -> std::same_as<void *>;
    { T::dealloc(p, sz) } -> std::same_as<void>;
};

/// Fn() returns a future<T> (what operator<<, discard, shared_future and
/// future's constructor from a function take).
template <typename Fn, typename T>
concept ReturnsFuture = std::invocable<Fn> && std::same_as<std::invoke_result_t<Fn>, future<T>>;

}  // namespace cocls

#endif
