// Counting heap allocations in a C++ test: replaces the global operator new /
// delete (include it in exactly one file per program). heap_allocations_of(fn)
// says how many times fn called operator new; CHECK_HEAP(count, n) checks it
// where counting is possible.
#ifndef COCLS_TEST_HEAP_COUNT_H
#define COCLS_TEST_HEAP_COUNT_H

#include <atomic>
#include <cstdlib>
#include <new>

#include "check.h"

// ThreadSanitizer's runtime defines operator new itself: under it the counts
// are not taken (the behaviour is still tested).
#if defined(__SANITIZE_THREAD__)
#define COCLS_TEST_NO_HEAP_COUNT 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COCLS_TEST_NO_HEAP_COUNT 1
#endif
#endif

static std::atomic<long> heap_allocations{0};

#ifdef COCLS_TEST_NO_HEAP_COUNT
static constexpr bool counting_heap = false;
#else
static constexpr bool counting_heap = true;

// Not inlined: GCC would pair the free() below with the new-expression.
[[gnu::noinline]] void *operator new(std::size_t n) {
    heap_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void *p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
[[gnu::noinline]] void *operator new[](std::size_t n) { return ::operator new(n); }
// The nothrow forms too: else ASan pairs its own new with the free below.
[[gnu::noinline]] void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
    heap_allocations.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(n ? n : 1);
}
[[gnu::noinline]] void *operator new[](std::size_t n, const std::nothrow_t &t) noexcept { return ::operator new(n, t); }
[[gnu::noinline]] void operator delete(void *p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void *p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void *p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
#endif

// Checks how many heap allocations an expression took (where counted).
#define CHECK_HEAP(count, n)                                             \
    do {                                                                 \
        long check_heap_ = (count);                                      \
        if (counting_heap) CHECK_EQ(check_heap_, static_cast<long>(n)); \
    } while (0)

// How many times `fn` called operator new (on any thread).
template <typename Fn>
static long heap_allocations_of(Fn &&fn) {
    long before = heap_allocations.load();
    fn();
    return heap_allocations.load() - before;
}

#endif
