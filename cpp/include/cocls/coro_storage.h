// Storages (allocators) for coroutine frames, used with with_allocator<>:
// reusable_storage, reusable_storage_mtsafe, static_storage<N>,
// placement_alloc, reusable_buffer_storage<Buffer>, promise_extra_storage<T>.
// A storage must outlive every frame it gave out. The ones that fall back to
// the heap note in the block itself (after the frame) where it came from.
#ifndef COCLS_CORO_STORAGE_H_INCLUDED
#define COCLS_CORO_STORAGE_H_INCLUDED

#include <atomic>
#include <concepts>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "common.h"  // COCLS_STATIC_STORAGE_MULTIPLIER
#include "function.h"
#include "with_allocator.h"

// COCLS's coro_storage.h names these standard headers; programs written for it may rely on them.
#include <cassert>

namespace cocls {

namespace detail {

/// Where, after a block of `sz` bytes, an object of type T can be placed.
template <typename T>
constexpr std::size_t offset_after(std::size_t sz) noexcept {
    return (sz + alignof(T) - 1) / alignof(T) * alignof(T);
}

/// Written after a frame: the storage that lent the block, or nullptr when
/// the block came from the heap.
template <typename Owner>
struct lender_note {
    Owner *owner;

    static std::size_t total(std::size_t sz) noexcept { return offset_after<lender_note>(sz) + sizeof(lender_note); }
    static void write(void *block, std::size_t sz, Owner *owner) noexcept {
        ::new (static_cast<char *>(block) + offset_after<lender_note>(sz)) lender_note{owner};
    }
    static Owner *read(void *block, std::size_t sz) noexcept {
        return std::launder(reinterpret_cast<lender_note *>(static_cast<char *>(block) + offset_after<lender_note>(sz)))
            ->owner;
    }
};

}  // namespace detail

/// One frame at a time, in one buffer kept between uses: calling the same
/// coroutine in a loop allocates once (the buffer grows when a frame does
/// not fit). Two frames alive at once would share the buffer: that is a bug
/// (reusable_storage_mtsafe handles it). Not thread-safe.
class reusable_storage {
public:
    reusable_storage() = default;
    reusable_storage(const reusable_storage &) = delete;
    reusable_storage &operator=(const reusable_storage &) = delete;
    reusable_storage(reusable_storage &&other) noexcept
        : m_ptr(std::exchange(other.m_ptr, nullptr)), m_capacity(std::exchange(other.m_capacity, 0)) {}
    reusable_storage &operator=(reusable_storage &&other) noexcept {
        if (this != &other) {
            ::operator delete(m_ptr);
            m_ptr = std::exchange(other.m_ptr, nullptr);
            m_capacity = std::exchange(other.m_capacity, 0);
        }
        return *this;
    }
    ~reusable_storage() { ::operator delete(m_ptr); }

    /// The buffer, grown (reallocated) if smaller than `sz`.
    void *alloc(std::size_t sz) {
        if (sz > m_capacity) {
            void *p = ::operator new(sz);
            ::operator delete(m_ptr);
            m_ptr = p;
            m_capacity = sz;
        }
        return m_ptr;
    }
    /// Nothing: the buffer stays for the next frame.
    static void dealloc(void *, std::size_t) noexcept {}

    /// Size of the buffer (0 before the first use).
    std::size_t capacity() const noexcept { return m_capacity; }

protected:
    void *m_ptr = nullptr;
    std::size_t m_capacity = 0;
};

/// reusable_storage that tolerates overlapping use: while a frame occupies
/// the buffer, further frames (from this or another thread) come from the
/// heap. The buffer passes between threads safely.
class reusable_storage_mtsafe : public reusable_storage {
    using note = detail::lender_note<reusable_storage_mtsafe>;

public:
    void *alloc(std::size_t sz) {
        std::size_t total = note::total(sz);
        if (m_busy.exchange(true, std::memory_order_acquire)) {
            void *p = ::operator new(total);
            note::write(p, sz, nullptr);
            return p;
        }
        void *p;
        try {
            p = reusable_storage::alloc(total);
        } catch (...) {
            m_busy.store(false, std::memory_order_release);
            throw;
        }
        note::write(p, sz, this);
        return p;
    }
    static void dealloc(void *ptr, std::size_t sz) noexcept {
        if (reusable_storage_mtsafe *owner = note::read(ptr, sz)) owner->m_busy.store(false, std::memory_order_release);
        else ::operator delete(ptr);
    }

protected:
    std::atomic<bool> m_busy{false};
};

/// A buffer of `space` bytes (times COCLS_STATIC_STORAGE_MULTIPLIER percent)
/// inside the object, for one frame at a time: no allocation at all. A frame
/// that does not fit, or that arrives while the buffer is taken, comes from
/// the heap instead.
template <std::size_t space>
class static_storage {
    using note = detail::lender_note<static_storage>;

public:
    static constexpr std::size_t multiplier = COCLS_STATIC_STORAGE_MULTIPLIER;
    static constexpr std::size_t adjspace = space * multiplier / 100;

    static_storage() = default;
    static_storage(const static_storage &) = delete;
    static_storage &operator=(const static_storage &) = delete;

    void *alloc(std::size_t sz) {
        std::size_t total = note::total(sz);
        if (total <= adjspace && !m_busy.exchange(true, std::memory_order_acquire)) {
            note::write(m_buffer, sz, this);
            return m_buffer;
        }
        void *p = ::operator new(total);
        note::write(p, sz, nullptr);
        return p;
    }
    static void dealloc(void *ptr, std::size_t sz) noexcept {
        if (static_storage *owner = note::read(ptr, sz)) owner->m_busy.store(false, std::memory_order_release);
        else ::operator delete(ptr);
    }

private:
    std::atomic<bool> m_busy{false};
    alignas(__STDCPP_DEFAULT_NEW_ALIGNMENT__) unsigned char m_buffer[adjspace > 0 ? adjspace : 1];
};

/// Placement new for a coroutine: the frame goes to the memory given (large
/// enough and aligned for the frame: the caller's responsibility).
class placement_alloc {
public:
    placement_alloc(void *p) noexcept : m_p(p) {}
    void *alloc(std::size_t) noexcept { return m_p; }
    static void dealloc(void *, std::size_t) noexcept {}

private:
    void *m_p;
};

/// An idle buffer of plain data (std::vector<char>, std::string...) lends
/// its beginning to one frame at a time; it is resized if too small, and
/// its content there is overwritten.
template <typename Buffer>
class reusable_buffer_storage {
public:
    reusable_buffer_storage(Buffer &buff) noexcept : m_buff(buff) {
        static_assert(std::is_trivial_v<std::remove_reference_t<decltype(*buff.data())>>,
                      "only a buffer of plain data can hold a coroutine frame");
    }
    void *alloc(std::size_t sz) {
        constexpr std::size_t itemsz = sizeof(*m_buff.data());
        std::size_t items = (sz + itemsz - 1) / itemsz;
        if (m_buff.size() < items) m_buff.resize(items);
        return m_buff.data();
    }
    static void dealloc(void *, std::size_t) noexcept {}

private:
    Buffer &m_buff;
};

/// Allocates, next to each frame, an extra T built by the factory given to
/// the constructor; the T is destroyed after the frame. After calling a
/// coroutine with this storage, `*storage` and `storage->` reach the T of
/// that frame. `Alloc` allocates the block (frame + T).
template <typename T, typename Alloc = default_storage>
    requires Storage<Alloc>
class promise_extra_storage : public Alloc {
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "over-aligned extra object");

public:
    template <typename Fn>
        requires std::same_as<T, std::invoke_result_t<Fn>>
    promise_extra_storage(Fn &&fn) : m_factory(std::forward<Fn>(fn)) {}

    /// Allocates the block and builds the T (an exception from the factory
    /// frees the block and propagates from the coroutine call).
    void *alloc(std::size_t sz) {
        std::size_t off = detail::offset_after<T>(sz);
        void *p = Alloc::alloc(off + sizeof(T));
        try {
            m_inventory = ::new (static_cast<char *>(p) + off) T(m_factory());
        } catch (...) {
            Alloc::dealloc(p, off + sizeof(T));
            throw;
        }
        return p;
    }
    /// Destroys the T, then frees the block.
    static void dealloc(void *ptr, std::size_t sz) noexcept {
        std::size_t off = detail::offset_after<T>(sz);
        std::destroy_at(std::launder(reinterpret_cast<T *>(static_cast<char *>(ptr) + off)));
        Alloc::dealloc(ptr, off + sizeof(T));
    }

    T *operator->() noexcept { return m_inventory; }
    T &operator*() noexcept { return *m_inventory; }

private:
    T *m_inventory = nullptr;
    function<T()> m_factory;
};

}  // namespace cocls

#endif
