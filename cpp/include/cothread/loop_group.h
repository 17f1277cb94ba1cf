// loop_group: one loop per core. N cothread::loops, each run by a thread of
// its own (a cot_group), share-nothing: a task, a socket or a timer belongs
// to one loop for life; work crosses loops as tasks started there.
//
//   cothread::loop_group g({.loops = 4, .pin = true});
//   g.each([](cothread::loop &lp, std::size_t i) { lp.spawn_detached(serve(lp, i)); });
//   int n = co_await cothread::invoke_on(g[2], [] { return count_here(); });
//   std::vector<int> all = co_await cothread::invoke_on_all(g, [] { return count_here(); });
//
// ~loop_group shuts down gracefully: every task gets a stop request, the
// loops run until their tasks ended, and after `grace` the sockets still
// open are closed (their operations end with operation_canceled); then every
// thread is joined. invoke_on(target, f) runs f (a function, or one
// returning a task) as a task of `target` and resumes the caller on its own
// loop with the result or exception; the caller's stop token reaches it.
// g.hand_off(sock, serve) moves a connection, with the bytes it had
// buffered, to the loop with the fewest (or loop i) and starts serve(socket)
// there; a connection on its way counts on its target, so a burst spreads.
#ifndef COTHREAD_LOOP_GROUP_H_INCLUDED
#define COTHREAD_LOOP_GROUP_H_INCLUDED

#include <cothread.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <new>
#include <stop_token>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "loop.h"
#include "task.h"
#include "tcp.h"
#include "when_all.h"

namespace cothread {

struct loop_group_options {
    /// Loops (threads); 0: one per processor this thread may use.
    std::size_t loops = 0;
    /// Pin loop i's thread to the i-th processor.
    bool pin = false;
    /// How long ~loop_group lets open work finish before it cancels it.
    std::chrono::nanoseconds grace = std::chrono::seconds(5);
};

class loop_group {
public:
    /// Starts the loops; each cothread::loop exists on return. Throws
    /// std::system_error if the system refuses a loop or a thread.
    explicit loop_group(loop_group_options o = {}) : m_grace(o.grace) {
        std::size_t n = o.loops ? o.loops : cot_cpu_count();
        m_loops.resize(n);
        cot_group_options c{};
        c.loops = n;
        c.flags = o.pin ? COT_GROUP_PIN : 0;
        c.start = &on_start;
        c.stop = &on_stop;
        c.end = &on_end;
        c.data = this;
        if (int r = cot_group_new(&c, &m_group); r != 0) throw std::system_error(-r, std::generic_category());
    }
    loop_group(const loop_group &) = delete;
    loop_group &operator=(const loop_group &) = delete;
    /// shutdown(grace). Destroy it on a thread outside the group: on one of
    /// its own it would wait for itself (std::terminate).
    ~loop_group() { shutdown(m_grace); }

    std::size_t size() const noexcept { return m_loops.size(); }
    /// Loop i: spawn, post and sockets on it run on its thread.
    loop &operator[](std::size_t i) noexcept { return *m_loops[i]->lp; }
    /// The loop the calling thread runs, or nullptr on another thread.
    loop *current() noexcept {
        int i = cot_group_index(m_group);
        return i < 0 ? nullptr : &(*this)[static_cast<std::size_t>(i)];
    }
    /// Loop i's open TCP connections (a snapshot, any thread).
    std::size_t load(std::size_t i) const noexcept { return cot_group_load(m_group, i); }
    /// The running loop with the fewest connections.
    loop &least_loaded() {
        int i = cot_group_least_loaded(m_group);
        if (i < 0) throw std::system_error(-i, std::generic_category());
        return (*this)[static_cast<std::size_t>(i)];
    }

    /// Runs f(loop, index) on every loop's thread, and waits for all.
    template <typename F>
    void each(F f) {
        for (std::size_t i = 0; i < size(); i++) {
            auto done = std::make_shared<std::atomic<bool>>(false);
            (*this)[i].post([&f, i, done, this] {
                f((*this)[i], i);
                done->store(true, std::memory_order_release);
                done->notify_one();
            });
            done->wait(false, std::memory_order_acquire);
        }
    }

    /// Shuts down (see above) and joins the threads; the loops are gone
    /// after. Throws std::errc::resource_deadlock_would_occur on one of
    /// the group's threads. A second call does nothing.
    void shutdown(std::chrono::nanoseconds grace) {
        if (!m_group) return;
        if (cot_group_index(m_group) >= 0) throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur));
        cot_group_shutdown(m_group, grace.count() < 0 ? 0 : static_cast<std::uint64_t>(grace.count()));
        cot_group_free(m_group);
        m_group = nullptr;
    }

    /// Moves connection `s` (of the calling task's loop) to loop `index`,
    /// with the bytes it had buffered, and starts `serve(socket)` there as a
    /// detached task (serve returns task<void>). `s` is empty after. Throws
    /// std::system_error, `s` unchanged: device_or_resource_busy while an
    /// operation waits on it, broken_pipe once that loop shuts down.
    template <typename F>
    void hand_off(tcp_socket &s, std::size_t index, F serve) {
        move_to(s, index, std::move(serve));
    }
    /// The same, to the running loop with the fewest connections.
    template <typename F>
    void hand_off(tcp_socket &s, F serve) {
        move_to(s, static_cast<std::size_t>(COT_LEAST_LOADED), std::move(serve));
    }

    cot_group *native() const noexcept { return m_group; }

private:
    template <typename F>
    struct arrival {
        loop_group *g;
        F serve;
        static void on_arrived(cot_loop *native, int status, cot_tcp key, void *data) {
            std::unique_ptr<arrival> self(static_cast<arrival *>(data));
            if (status != 0) return;  // the connection is closed
            loop &lp = *self->g->current();
            lp.spawn_detached(self->serve(tcp_socket(native, key)));
        }
    };

    template <typename F>
    void move_to(tcp_socket &s, std::size_t index, F serve) {
        auto a = std::make_unique<arrival<F>>(arrival<F>{this, std::move(serve)});
        int r = cot_group_handoff(m_group, s.native_loop(), s.native(), index, &arrival<F>::on_arrived, a.get());
        if (r != 0) throw std::system_error(-r, std::generic_category());
        a.release();  // on_arrived owns it
        s.forget();   // its key left with the connection
    }

    // A member's C++ loop, current on its thread for the thread's life.
    struct member {
        std::unique_ptr<loop> lp;
        std::unique_ptr<loop::enter> here;
    };

    static void on_start(cot_loop *native, std::size_t i, void *data) {
        auto *g = static_cast<loop_group *>(data);
        auto m = std::make_unique<member>();
        m->lp = std::make_unique<loop>(native);
        m->here = std::make_unique<loop::enter>(*m->lp);
        g->m_loops[i] = std::move(m);
    }
    // Shutdown began: every task of the loop is asked to stop.
    static void on_stop(cot_loop *, std::size_t i, void *data) {
        static_cast<loop_group *>(data)->m_loops[i]->lp->request_stop_all();
    }
    // The loop ended: ~loop runs what is left until its tasks ended.
    static void on_end(cot_loop *, std::size_t i, void *data) {
        auto &m = static_cast<loop_group *>(data)->m_loops[i];
        m->here.reset();
        m->lp.reset();
    }

    cot_group *m_group = nullptr;
    std::chrono::nanoseconds m_grace;
    std::vector<std::unique_ptr<member>> m_loops;
};

namespace detail {

/// What `co_await invoke_on(lp, f)` gives: f's result, or T for a task<T>.
template <typename R>
struct invoke_value {
    using type = R;
};
template <typename T>
struct invoke_value<task<T>> {
    using type = T;
};
template <typename F>
using invoke_value_t = typename invoke_value<std::invoke_result_t<F>>::type;

/// f as a task: f() itself if it returns one, else a task that calls it.
template <typename F>
task<invoke_value_t<F>> as_task(F f) {
    if constexpr (is_task<std::invoke_result_t<F>>) co_return co_await f();
    else if constexpr (std::is_void_v<std::invoke_result_t<F>>) f();
    else co_return f();
}

}  // namespace detail

/// `co_await invoke_on(target, f)`: f's result (or exception), f having run
/// as a task of `target`; the caller's loop runs on meanwhile, and its stop
/// token stops f's task.
template <typename F>
task<detail::invoke_value_t<F>> invoke_on(loop &target, F f) {
    std::stop_token tok = co_await this_task::stop_token();
    co_return co_await target.spawn(detail::as_task(std::move(f)), std::move(tok));
}

/// `co_await invoke_on_all(group, f)`: f run on every loop at once; its
/// results in loop order (a task<void> for a void f).
template <typename F>
auto invoke_on_all(loop_group &g, F f) {
    using T = detail::invoke_value_t<F>;
    std::vector<task<T>> each;
    for (std::size_t i = 0; i < g.size(); i++) each.push_back(invoke_on(g[i], f));
    if constexpr (std::is_void_v<T>) {
        return [](std::vector<task<void>> all) -> task<void> { co_await when_all(std::move(all)); }(std::move(each));
    } else {
        return when_all(std::move(each));
    }
}

}  // namespace cothread

#endif
