// detail::trampoline: runs the next coroutine of a chain of awaiting tasks
// without growing the stack. Symmetric transfer (await_suspend returning a
// handle) is a tail call only if the compiler makes it one: clang does; g++
// 12 does not below -O2 or under ASan, and a million nested awaits then
// overflow the stack. So a task hands the coroutine to run next to this
// thread's trampoline: the first hand-off of a chain loops over the
// hand-offs, the others just set the next one and return.
#ifndef COTHREAD_DETAIL_TRAMPOLINE_H_INCLUDED
#define COTHREAD_DETAIL_TRAMPOLINE_H_INCLUDED

#include <coroutine>
#include <utility>

namespace cothread::detail {

class trampoline {
public:
    /// Resumes `h` now, or right after the running hand-off returns. Call it
    /// from an await_suspend, then suspend: `h` may resume (and end) the
    /// caller's coroutine before this returns.
    static void run(std::coroutine_handle<> h) noexcept {
        trampoline &t = here();
        t.m_next = h;
        if (t.m_active) return;
        t.m_active = true;
        while (t.m_next) std::exchange(t.m_next, {}).resume();
        t.m_active = false;
    }

    /// Runs `h` and the hand-offs it makes, before returning, even inside a
    /// running hand-off: when_* starts its children this way, one after
    /// another, each until it first suspends.
    static void run_now(std::coroutine_handle<> h) noexcept {
        trampoline &t = here();
        std::coroutine_handle<> next = std::exchange(t.m_next, {});
        bool active = std::exchange(t.m_active, false);
        run(h);
        t.m_next = next;
        t.m_active = active;
    }

private:
    static trampoline &here() noexcept {
        constinit static thread_local trampoline t;
        return t;
    }
    std::coroutine_handle<> m_next;
    bool m_active = false;
};

}  // namespace cothread::detail

#endif
