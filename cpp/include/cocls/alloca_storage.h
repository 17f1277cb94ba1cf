// stack_storage: a coroutine frame on the caller's stack, in memory the
// caller reserves with alloca(). The size a frame needs is known only at run
// time, so a state variable (a std::size_t, usually static, starting at 0 or
// at a guess) remembers it: a frame that does not fit goes to the heap and
// records its size, and the next alloca() reserves enough.
//
//     static std::size_t coro_sz_state = 0;
//     stack_storage storage(coro_sz_state);
//     storage = alloca(storage);                  // reserve the remembered size
//     async<int> coro = do_something(storage, ...);   // a with_allocator coroutine
//
// The memory lasts until the function that called alloca() returns: the
// coroutine must be finished (its frame destroyed) by then.
#ifndef COCLS_ALLOCA_STORAGE_H_INCLUDED
#define COCLS_ALLOCA_STORAGE_H_INCLUDED

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#if __has_include(<alloca.h>)
#include <alloca.h>

// COCLS's alloca_storage.h names these standard headers; programs written for it may rely on them.
#include <memory>
#endif

namespace cocls {

class stack_storage {
public:
    /// `state` holds the frame size to reserve; it may be shared by threads
    /// (it is read and raised atomically).
    stack_storage(std::size_t &state) noexcept : m_state(state), m_alloc_size(load(state)) {}

    /// Gives the memory reserved by alloca() (at least `std::size_t(*this)`
    /// bytes); it serves one frame.
    void operator=(void *ptr) noexcept { m_alloc_ptr = ptr; }
    /// The number of bytes to reserve.
    operator std::size_t() const noexcept { return m_alloc_size; }

    /// The reserved memory if the frame fits (and it is aligned for a
    /// frame); otherwise a heap block, and the state is raised to the size
    /// needed.
    void *alloc(std::size_t sz) {
        std::size_t need = sz + 1;  // a byte after the frame says where it lives
        if (m_alloc_ptr && need <= m_alloc_size &&
            reinterpret_cast<std::uintptr_t>(m_alloc_ptr) % __STDCPP_DEFAULT_NEW_ALIGNMENT__ == 0) {
            void *p = std::exchange(m_alloc_ptr, nullptr);
            static_cast<unsigned char *>(p)[sz] = 0;
            return p;
        }
        void *p = ::operator new(need);
        static_cast<unsigned char *>(p)[sz] = 1;
        raise(m_state, need);
        return p;
    }
    /// Frees a heap block; stack memory needs nothing.
    static void dealloc(void *ptr, std::size_t sz) noexcept {
        if (static_cast<unsigned char *>(ptr)[sz]) ::operator delete(ptr);
    }

private:
    static std::size_t load(std::size_t &state) noexcept {
        return std::atomic_ref<std::size_t>(state).load(std::memory_order_relaxed);
    }
    static void raise(std::size_t &state, std::size_t need) noexcept {
        std::atomic_ref<std::size_t> s(state);
        std::size_t cur = s.load(std::memory_order_relaxed);
        while (cur < need && !s.compare_exchange_weak(cur, need, std::memory_order_relaxed)) {
        }
    }

    std::size_t &m_state;
    std::size_t m_alloc_size;
    void *m_alloc_ptr = nullptr;
};

}  // namespace cocls

#endif
