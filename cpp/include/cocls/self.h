// self: `auto h = co_await self();` gives the awaiting coroutine its own
// handle, without suspending it (it goes on at once, on the same thread).
#ifndef COCLS_SELF_H_INCLUDED
#define COCLS_SELF_H_INCLUDED

#include <coroutine>

// What COCLS's self.h also brings in (programs written for it may rely on it).
#include "suspend_point.h"
#include "common.h"

namespace cocls {

/// The awaiter of `co_await self()`. The result converts to
/// `suspend_point<void>` too (COCLS's later return type); mind that
/// discarding such a suspend point would resume the coroutine.
class [[nodiscard]] self {
public:
    bool await_ready() const noexcept { return false; }
    /// Records the handle and resumes the coroutine at once (no suspension
    /// visible to anyone, no switch).
    bool await_suspend(std::coroutine_handle<> h) noexcept {
        m_h = h;
        return false;
    }
    std::coroutine_handle<> await_resume() const noexcept { return m_h; }

private:
    std::coroutine_handle<> m_h;
};

}  // namespace cocls

#endif
