// The baselines of bench/cpp: the least a hand-written C++20 program does for
// each measured operation, with no library. Single-purpose and unsafe where a
// library must be safe; they mark the physical limit. (Two references for the
// promise set are not that: see claimed_promise and core_future.)
#ifndef COCLS_BENCH_BASELINE_H
#define COCLS_BENCH_BASELINE_H

#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <cothread.h>

namespace baseline {

/// A fire-and-forget coroutine that starts suspended (the driver resumes it).
struct task {
    struct promise_type {
        task get_return_object() { return {std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() {}
        void unhandled_exception() { std::terminate(); }
    };
    std::coroutine_handle<promise_type> h;
};

/// A fixed ring buffer of ready coroutines: pause() pushes the caller at the
/// tail and switches to the head.
struct ring {
    std::coroutine_handle<> slot[64];
    unsigned head = 0, tail = 0;
    bool empty() const { return head == tail; }
    void push(std::coroutine_handle<> h) { slot[tail++ % 64] = h; }
    std::coroutine_handle<> pop() {
        return head == tail ? std::coroutine_handle<>(std::noop_coroutine()) : slot[head++ % 64];
    }
};
inline ring ready;

struct pause_awaiter {
    bool await_ready() noexcept { return false; }
    std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) noexcept {
        ready.push(h);
        return ready.pop();
    }
    void await_resume() noexcept {}
};

/// A single-waiter future, correct when set and awaited on two threads: the
/// waiter slot holds nothing, the waiting handle, or "set".
struct future {
    static inline int set_mark;
    std::atomic<void *> waiter{nullptr};
    int value = 0;
    bool await_ready() noexcept { return waiter.load(std::memory_order_acquire) == &set_mark; }
    bool await_suspend(std::coroutine_handle<> h) noexcept {
        void *expected = nullptr;
        return waiter.compare_exchange_strong(expected, h.address(), std::memory_order_acq_rel);
    }
    int await_resume() noexcept { return value; }
    void set(int v) {
        value = v;
        void *w = waiter.exchange(&set_mark, std::memory_order_acq_rel);
        if (w) std::coroutine_handle<>::from_address(w).resume();
    }
};

/// `future` behind a promise as COCLS's: settable from any thread, the
/// first setter wins. The claim is one more exchange (on the promise's
/// pointer), so that a losing setter never touches a future the winner
/// resolved and its waiter may have destroyed. Not a target baseline: the
/// floor of the same guarantee, printed beside it.
template <typename Future>
struct claimed_promise {
    std::atomic<Future *> target{nullptr};
    void set(int v) {
        if (Future *f = target.exchange(nullptr, std::memory_order_acq_rel)) f->set(v);
    }
};

/// `future` with the three calls into the core that the C++ face's design
/// puts on this path (the rule: awaiter chains and the resume queue
/// live in the core): the chain push when awaited, the chain take when set,
/// the resume queue's run to resume the waiter. The chain calls get NULL
/// and return at once (only the call is counted), the run is the real one.
/// Not a target baseline either: the floor under that rule.
struct core_future : future {
    bool await_suspend(std::coroutine_handle<> h) noexcept {
        (void)cot_chain_push(nullptr, nullptr, nullptr);
        return future::await_suspend(h);
    }
    void set(int v) {
        value = v;
        (void)cot_chain_take(nullptr, nullptr, nullptr);
        void *w = waiter.exchange(&set_mark, std::memory_order_acq_rel);
        if (w) cot_resume_queue_run(queue(), w, &resume);
    }

private:
    static cot_resume_queue *queue() noexcept {
        static thread_local cot_resume_queue *q = cot_resume_queue_current();
        return q;
    }
    static void resume(void *h) noexcept { std::coroutine_handle<>::from_address(h).resume(); }
};

/// A generator of ints: the promise points at the yielded value.
struct generator {
    struct promise_type {
        const int *value = nullptr;
        generator get_return_object() { return {std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        std::suspend_always yield_value(const int &v) noexcept {
            value = &v;
            return {};
        }
        void return_void() {}
        void unhandled_exception() { std::terminate(); }
    };
    std::coroutine_handle<promise_type> h;
    generator(std::coroutine_handle<promise_type> h) : h(h) {}
    generator(generator &&o) noexcept : h(std::exchange(o.h, {})) {}
    ~generator() {
        if (h) h.destroy();
    }
    bool next() {
        h.resume();
        return !h.done();
    }
    int value() const { return *h.promise().value; }
};

/// A coroutine mutex, correct under contention: the state is unlocked (null),
/// locked (the mutex itself) or locked with a LIFO stack of waiting nodes.
/// Uncontended: one CAS to lock, one CAS to unlock.
struct mutex {
    struct node {
        node *next;
        std::coroutine_handle<> h;
    };
    std::atomic<void *> state{nullptr};
    struct lock_awaiter {
        mutex &m;
        node n{};
        bool await_ready() noexcept {
            void *expected = nullptr;
            return m.state.compare_exchange_strong(expected, &m, std::memory_order_acquire);
        }
        bool await_suspend(std::coroutine_handle<> h) noexcept {
            n.h = h;
            void *old = m.state.load(std::memory_order_relaxed);
            for (;;) {
                if (!old) {
                    if (m.state.compare_exchange_weak(old, &m, std::memory_order_acquire)) return false;
                    continue;
                }
                n.next = old == &m ? nullptr : static_cast<node *>(old);
                if (m.state.compare_exchange_weak(old, &n, std::memory_order_release)) return true;
            }
        }
        void await_resume() noexcept {}
    };
    lock_awaiter lock() { return {*this}; }
    void unlock() {
        void *expected = this;
        if (state.compare_exchange_strong(expected, nullptr, std::memory_order_release)) return;
        // Waiters: hand over to the one on top (LIFO is enough for a baseline).
        node *top = static_cast<node *>(expected);
        void *rest = top->next ? static_cast<void *>(top->next) : static_cast<void *>(this);
        while (!state.compare_exchange_weak(expected, rest, std::memory_order_acq_rel)) {
            top = static_cast<node *>(expected);
            rest = top->next ? static_cast<void *>(top->next) : static_cast<void *>(this);
        }
        top->h.resume();
    }
};

/// A thread pool: one mutex-protected queue of std::function, N threads.
class pool {
public:
    explicit pool(unsigned n) {
        for (unsigned i = 0; i < n; i++) m_threads.emplace_back([this] { work(); });
    }
    ~pool() {
        {
            std::lock_guard lk(m_mx);
            m_stop = true;
        }
        m_cv.notify_all();
        for (auto &t : m_threads) t.join();
    }
    void run_detached(std::function<void()> fn) {
        {
            std::lock_guard lk(m_mx);
            m_jobs.push_back(std::move(fn));
        }
        m_cv.notify_one();
    }

private:
    void work() {
        std::unique_lock lk(m_mx);
        for (;;) {
            m_cv.wait(lk, [&] { return m_stop || !m_jobs.empty(); });
            if (m_jobs.empty()) return;
            auto fn = std::move(m_jobs.front());
            m_jobs.pop_front();
            lk.unlock();
            fn();
            lk.lock();
        }
    }
    std::mutex m_mx;
    std::condition_variable m_cv;
    std::deque<std::function<void()>> m_jobs;
    std::vector<std::thread> m_threads;
    bool m_stop = false;
};

}  // namespace baseline

#endif
