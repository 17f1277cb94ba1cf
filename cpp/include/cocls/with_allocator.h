// with_allocator<Alloc, Task>: a coroutine return type whose frame comes from
// an allocator (a "storage") passed as the coroutine's first argument (after
// `*this` for member functions). It is a Task (async<T>) in all other
// respects: convert it to one, detach it, start it, co_await it.
//
// A storage has `void *alloc(std::size_t)` and a static
// `void dealloc(void *, std::size_t)`: the frame is freed where no storage
// object is at hand, so anything dealloc needs is kept in the block itself.
#ifndef COCLS_WITH_ALLOCATOR_H_INCLUDED
#define COCLS_WITH_ALLOCATOR_H_INCLUDED

#include <concepts>
#include <coroutine>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

#include "common.h"  // Storage

namespace cocls {

/// `Base` (a promise type, or any class) whose instances are allocated by an
/// `Allocator` given to the allocation: as the first coroutine argument, the
/// second for member functions, or as the placement argument of `new`.
template <typename Allocator, typename Base>
    requires Storage<Allocator>
class custom_allocator_base : public Base {
public:
    using Base::Base;

    template <typename... Args>
    static void *operator new(std::size_t sz, Allocator &storage, Args &&...) {
        return storage.alloc(sz);
    }
    template <typename This, typename... Args>
    static void *operator new(std::size_t sz, This &, Allocator &storage, Args &&...) {
        return storage.alloc(sz);
    }
    static void operator delete(void *ptr, std::size_t sz) noexcept { Allocator::dealloc(ptr, sz); }

private:
    // A coroutine declared with_allocator must take the allocator first.
    // Declared, private and never defined: a call without the allocator does
    // not compile (clang 14 would take a deleted one for the global new).
    static void *operator new(std::size_t);
};

/// The return type of a coroutine allocated by `Allocator`:
///
///     with_allocator<reusable_storage, async<int>> work(reusable_storage &, int x);
///
/// The allocator must outlive the frame (except default_storage, whose
/// frames are plain heap blocks).
template <typename Allocator, typename Task>
    requires Storage<Allocator>
class with_allocator : public Task {
public:
    using Task::Task;
    with_allocator(Task &&t) noexcept(std::is_nothrow_move_constructible_v<Task>) : Task(std::move(t)) {}

    using promise_type = custom_allocator_base<Allocator, typename Task::promise_type>;
};

/// Frames on the heap, as without an allocator: for code that requires one
/// when none is at hand. Need not outlive the coroutine.
class default_storage {
public:
    static void *alloc(std::size_t sz) { return ::operator new(sz); }
    static void dealloc(void *ptr, std::size_t) noexcept { ::operator delete(ptr); }
};

}  // namespace cocls

#endif
