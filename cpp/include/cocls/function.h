// function<Ret(Args...) [noexcept], small_space>: a move-only std::function
// with a small buffer. A callable that fits the buffer (and moves without
// throwing) lives inside the object; a larger one goes to the heap, and then
// moving the function moves only the pointer.
#ifndef COCLS_FUNCTION_H_INCLUDED
#define COCLS_FUNCTION_H_INCLUDED

#include <concepts>
#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>
#include "common.h"

namespace cocls {

/// `Fn` is a function type `Ret(Args...)` or `Ret(Args...) noexcept`;
/// callables up to `small_space` bytes are stored without allocation.
template <typename Fn, std::size_t small_space = sizeof(void *) * 8>
class function;

/// T itself if it is a reference, else `const T &`.
template <typename T>
using type_to_cref = std::conditional_t<std::is_reference_v<T>, T, const T &>;

template <typename T>
struct is_function_t {
    static constexpr bool value = false;
};
template <typename T, std::size_t sz>
struct is_function_t<function<T, sz>> {
    static constexpr bool value = true;
};

/// Is T (references and cv ignored) a cocls::function?
template <typename T>
inline constexpr bool is_function = is_function_t<std::remove_cvref_t<T>>::value;

namespace detail {

// What a function does with its target, one table per callable type and
// place (inline or on the heap). The tables do not depend on the buffer size,
// so functions of different sizes can hand targets to each other.
template <bool e, typename Ret, typename... Args>
struct function_ops {
    Ret (*call)(void *storage, Args &&...args) noexcept(e);
    // Moves the target from `from` into `to` (a buffer of `to_space` bytes),
    // destroys the source, and returns the table for the new place.
    const function_ops *(*relocate)(void *from, void *to, std::size_t to_space);
    void (*destroy)(void *storage) noexcept;
};

template <typename F>
inline constexpr bool fits_inline(std::size_t space) noexcept {
    return sizeof(F) <= space && alignof(F) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<F>;
}

template <typename F, bool on_heap, bool e, typename Ret, typename... Args>
struct function_target {
    using ops = function_ops<e, Ret, Args...>;

    static F &get(void *s) noexcept {
        if constexpr (on_heap) return **static_cast<F **>(s);
        else return *std::launder(static_cast<F *>(s));
    }
    static Ret call(void *s, Args &&...args) noexcept(e) {
        if constexpr (std::is_void_v<Ret>) std::invoke(get(s), std::forward<Args>(args)...);
        else return std::invoke(get(s), std::forward<Args>(args)...);
    }
    static void destroy(void *s) noexcept {
        if constexpr (on_heap) delete *static_cast<F **>(s);
        else std::destroy_at(&get(s));
    }
    static const ops *relocate(void *from, void *to, std::size_t to_space);
    static constexpr ops table{&call, &relocate, &destroy};

    // Places a new target, built from `args`, in a buffer of `space` bytes.
    template <typename... A>
    static const ops *place(void *to, std::size_t space, A &&...a) {
        using inline_target = function_target<F, false, e, Ret, Args...>;
        using heap_target = function_target<F, true, e, Ret, Args...>;
        if (fits_inline<F>(space)) {
            if constexpr (fits_inline<F>(sizeof(F))) {
                ::new (to) F(std::forward<A>(a)...);
                return &inline_target::table;
            }
        }
        *static_cast<F **>(to) = new F(std::forward<A>(a)...);
        return &heap_target::table;
    }
};

template <typename F, bool on_heap, bool e, typename Ret, typename... Args>
auto function_target<F, on_heap, e, Ret, Args...>::relocate(void *from, void *to, std::size_t to_space)
    -> const ops * {
    if constexpr (on_heap) {
        *static_cast<F **>(to) = std::exchange(*static_cast<F **>(from), nullptr);
        return &table;
    } else {
        const ops *r = place(to, to_space, std::move(get(from)));
        destroy(from);
        return r;
    }
}

}  // namespace detail

template <std::size_t small_space, bool e, typename Ret, typename... Args>
class function<Ret(Args...) noexcept(e), small_space> {
    static_assert(small_space >= sizeof(void *), "cocls::function needs room for at least a pointer");
    using ops = detail::function_ops<e, Ret, Args...>;
    template <typename F, bool h>
    using target = detail::function_target<F, h, e, Ret, Args...>;

public:
    /// The function type.
    using T = Ret(Args...) noexcept(e);

    /// No target: calling throws std::bad_function_call.
    function() noexcept = default;
    function(std::nullptr_t) noexcept {}

    /// Takes `fn` (moved or copied in); allocates only if it does not fit.
    template <typename Fn>
        requires(!is_function<Fn> && std::is_constructible_v<std::decay_t<Fn>, Fn> &&
                 (e ? std::is_nothrow_invocable_r_v<Ret, std::decay_t<Fn> &, Args...>
                    : std::is_invocable_r_v<Ret, std::decay_t<Fn> &, Args...>))
    function(Fn &&fn) {
        m_ops = target<std::decay_t<Fn>, false>::place(m_space, small_space, std::forward<Fn>(fn));
    }

    function(const function &) = delete;
    function &operator=(const function &) = delete;

    /// Moves the target (never allocates: same buffer size); `other` is
    /// left without one.
    function(function &&other) noexcept { take(other); }
    /// Takes the target of a function with another buffer size.
    template <std::size_t sz>
    function(function<T, sz> &&other) {
        take(other);
    }
    function &operator=(function &&other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    function &operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }

    ~function() { reset(); }

    /// Calls the target (on the calling thread). Without one: throws
    /// std::bad_function_call (a noexcept signature terminates).
    Ret operator()(Args... args) const noexcept(e) {
        if (!m_ops) bad_call();
        return m_ops->call(m_space, std::forward<Args>(args)...);
    }

    /// Has it a target?
    explicit operator bool() const noexcept { return m_ops != nullptr; }
    bool operator!() const noexcept { return m_ops == nullptr; }
    bool operator==(std::nullptr_t) const noexcept { return m_ops == nullptr; }

private:
    template <typename, std::size_t>
    friend class function;

    [[noreturn]] static void bad_call() { throw std::bad_function_call(); }

    template <std::size_t sz>
    void take(function<T, sz> &other) {
        if (!other.m_ops) return;
        m_ops = other.m_ops->relocate(other.m_space, m_space, small_space);
        other.m_ops = nullptr;
    }
    void reset() noexcept {
        if (m_ops) std::exchange(m_ops, nullptr)->destroy(m_space);
    }

    const ops *m_ops = nullptr;
    alignas(std::max_align_t) mutable unsigned char m_space[small_space];
};

}  // namespace cocls

#endif
