// generator_aggregator(std::vector<generator<T, Arg>>): one generator that
// yields the values of several, in the order they become ready. Synchronous
// members take turns (round robin); asynchronous ones deliver as they finish
// their steps, whichever first, the others waiting in a queue. The result is
// synchronous while every member is.
//
// With an argument, the first call starts every member with that argument;
// each later call passes its argument to the member whose value the previous
// call returned (that member's next step starts then).
#ifndef COCLS_GENERATOR_AGGREGATOR_H_INCLUDED
#define COCLS_GENERATOR_AGGREGATOR_H_INCLUDED

#include <coroutine>
#include <cstddef>
#include <exception>
#include <type_traits>
#include <utility>
#include <vector>

#include "awaiter.h"
#include "detail/ready_chain.h"
#include "generator.h"
#include "suspend_point.h"

// What COCLS's generator_aggregator.h also brings in (programs written for it may rely on it).
#include "queue.h"

namespace cocls {

namespace detail {

/// One member: its generator and the awaiter its steps end in, which puts
/// it in the ready queue (on the thread where the step ended).
template <typename T, typename Arg>
class aggregator_member : public awaiter {
public:
    aggregator_member() noexcept { set_resume_fn(&aggregator_member::step_ended, nullptr); }
    aggregator_member(const aggregator_member &) = delete;
    aggregator_member &operator=(const aggregator_member &) = delete;

    generator<T, Arg> m_gen;
    ready_chain *m_queue = nullptr;

private:
    static suspend_point<void> step_ended(awaiter *self, void *) noexcept {
        auto *m = static_cast<aggregator_member *>(self);
        return m->m_queue->push(m);
    }
};

/// The members and the queue, in the aggregator's frame. Destroying it
/// (the aggregator destroyed at a co_yield) first waits, blocking the
/// thread, for the members still in a step: they end in this queue.
template <typename T, typename Arg>
class aggregator_state {
public:
    using member = aggregator_member<T, Arg>;

    explicit aggregator_state(std::vector<generator<T, Arg>> &&gens) : m_members(gens.size()) {
        for (std::size_t i = 0; i < gens.size(); i++) {
            m_members[i].m_gen = std::move(gens[i]);
            m_members[i].m_queue = &m_queue;
        }
        m_active = m_members.size();
    }
    aggregator_state(const aggregator_state &) = delete;
    aggregator_state &operator=(const aggregator_state &) = delete;
    ~aggregator_state() {
        while (m_in_step > 0) {
            m_queue.pop_blocking();
            --m_in_step;
        }
    }

    /// Starts every member's first step.
    template <typename... A>
    void start_all(A &...arg) {
        for (member &m : m_members) start(m, arg...);
    }
    /// Starts m's next step; it runs here until it ends or suspends.
    template <typename... A>
    void start(member &m, A &...arg) {
        ++m_in_step;
        if (!m.m_gen.next(arg...).subscribe_awaiter(&m)) {  // already finished: ends at once
            --m_in_step;
            --m_active;
        }
    }

    bool active() const noexcept { return m_active > 0; }

    /// `co_await st.next_ready()`: a member whose step ended; the aggregator
    /// suspends while there is none and is resumed, by symmetric transfer, on
    /// the thread where the next one ends.
    class [[nodiscard]] next_ready_awaiter : public awaiter {
    public:
        explicit next_ready_awaiter(aggregator_state &st) noexcept : m_st(st) {}
        bool await_ready() noexcept {
            m_ready = m_st.m_queue.try_pop();
            return m_ready != nullptr;
        }
        bool await_suspend(std::coroutine_handle<> h) noexcept {
            set_handle(h);
            return m_st.m_queue.wait(this);
        }
        member *await_resume() noexcept {
            if (!m_ready) m_ready = m_st.m_queue.try_pop();
            --m_st.m_in_step;
            return static_cast<member *>(m_ready);
        }

    private:
        aggregator_state &m_st;
        awaiter *m_ready = nullptr;
    };
    next_ready_awaiter next_ready() noexcept { return next_ready_awaiter(*this); }

    /// A member that finished; keeps the first exception one threw.
    void finished(member &m) noexcept {
        --m_active;
        const std::exception_ptr &e = generator_access::exception(m.m_gen);
        if (e && !m_error) m_error = e;
    }
    const std::exception_ptr &error() const noexcept { return m_error; }

private:
    ready_chain m_queue;
    std::vector<member> m_members;  // never resized: the queue points at them
    std::size_t m_active = 0;       // members not finished
    std::size_t m_in_step = 0;      // members in a step or in the queue
    std::exception_ptr m_error;
};

}  // namespace detail

/// Aggregates `gens` (moved in) into one generator. It ends when every member
/// has ended; if members threw, the first exception is rethrown then (after
/// the others' values). Destroying it at a co_yield blocks until the members
/// still in an (asynchronous) step have ended theirs.
template <typename T, typename Arg>
generator<T, Arg> generator_aggregator(std::vector<generator<T, Arg>> gens) {
    detail::aggregator_state<T, Arg> st(std::move(gens));
    if constexpr (std::is_void_v<Arg>) {
        st.start_all();
    } else {
        Arg &first = co_yield nullptr;  // the first call's argument, for every member
        st.start_all(first);
    }
    while (st.active()) {
        auto *m = co_await st.next_ready();
        if (m->m_gen.done()) {
            st.finished(*m);
            continue;
        }
        if constexpr (std::is_void_v<Arg>) {
            co_yield m->m_gen.value();
            st.start(*m);
        } else {
            Arg &arg = co_yield m->m_gen.value();
            st.start(*m, arg);
        }
    }
    if (st.error()) std::rethrow_exception(st.error());
}

}  // namespace cocls

#endif
