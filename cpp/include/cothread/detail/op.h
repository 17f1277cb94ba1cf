// detail::op: the one adapter between a task and a C socket or lookup call.
// Every awaitable of tcp.h, udp.h, resolve.h and signal.h derives from it (CRTP) and
// supplies three steps:
//   std::int64_t try_now() noexcept   the non-blocking call: a result (>= 0),
//                                     an error, or COT_EAGAIN to wait;
//   int start(std::uint64_t ns) noexcept   starts the C operation with the
//                                     callback `data` = this; 0 or the
//                                     error it returned (no callback then);
//                                     sets m_key if it makes the object;
//   T done(), T failed()              the value on success / on error (the
//                                     error_code form returns failed()).
// Two stop tokens end an operation: the root's, always, and its own, if the
// caller gave one (`co_await s.read(buf).stop_on(tok)`); either one stops it.
// The await, on the loop thread: the object's loop must be the task's
// (moved-from: EBADF; another loop: EINVAL); a stop already requested on
// either token ends it with ECANCELED; a bad deadline with EINVAL; then
// try_now(), and if that completes the task goes on without suspending (no
// allocation, no loop turn, no stop callback). Fairness: past COT_BUDGET
// operations in one turn of the root (strand.h counts them), the await
// first yields to the loop's other ready work, then does all of the above
// in its turn. Else start(); a synchronous
// failure is the result. Only a started operation suspends, with a
// std::stop_callback per token that can stop. The C callback calls
// finish(): it stores the result, drops the stop callbacks and resumes the
// task.
//
// A canceller may run on any thread. Off the loop thread it sends the cancel
// through the loop's inbox as a value (the kind, the socket key, lookup id
// or handle, the direction), never a pointer to the awaiter. The node and the
// operation know of each other while both live (both sides of that link
// change on the loop thread only): an operation that ends before its cancel
// node runs disarms the node, so a late cancel never hits the next
// operation of that direction on the socket.
#ifndef COTHREAD_DETAIL_OP_H_INCLUDED
#define COTHREAD_DETAIL_OP_H_INCLUDED

#include <cothread.h>

#include <coroutine>
#include <cstdint>
#include <new>
#include <optional>
#include <stop_token>
#include <system_error>
#include <utility>

#include <cocls/coro_queue.h>
#include "../deadline.h"
#include "../error.h"
#include "loop_core.h"
#include "strand.h"

namespace cothread::detail {

/// What a cancel names: a socket, a lookup, or a handle whose data is a
/// handle_target (an object of these headers waited on without a C
/// operation: signal.h).
enum class op_kind : unsigned char { tcp, udp, resolve, handle };

/// The object a handle of op_kind::handle points to: `cancel` ends its
/// pending wait with COT_ECANCELED, later, from the loop (never inside the
/// call: it runs inside request_stop).
struct handle_target {
    void (*cancel)(handle_target *self) noexcept = nullptr;
};

/// Cancels on the loop thread. The core checks the key: stale ones are refused.
inline void cancel_now(cot_loop *lp, op_kind kind, std::uint64_t key, int events) noexcept {
    switch (kind) {
    case op_kind::tcp: cot_tcp_cancel(lp, key, events); break;
    case op_kind::udp: cot_udp_cancel(lp, key, events); break;
    case op_kind::resolve: cot_resolve_cancel(lp, key); break;
    case op_kind::handle: {
        void *data = nullptr;
        if (cot_handle_data(lp, key, &data) == 0 && data) {
            auto *t = static_cast<handle_target *>(data);
            t->cancel(t);
        }
        break;
    }
    }
}

/// A cancel sent from another thread: values, and a link back to the
/// operation's slot while the operation is pending (loop thread only).
struct cancel_node : inbox_node {
    cot_loop *lp;
    op_kind kind;
    int events;
    std::uint64_t key;
    cancel_node **slot;  // the operation's pointer to this node; null: disarmed
    cancel_node(cot_loop *l, op_kind k, std::uint64_t id, int ev, cancel_node **s) noexcept
        : lp(l), kind(k), events(ev), key(id), slot(s) {
        run = &go;
    }
    static void go(inbox_node *n) noexcept {
        auto *self = static_cast<cancel_node *>(n);
        if (self->slot) {  // the operation still waits
            *self->slot = nullptr;
            cancel_now(self->lp, self->kind, self->key, self->events);
        }
        delete self;
    }
};

/// The stop callback of a pending operation (any thread, inside request_stop).
struct op_canceller {
    loop_core *owner;
    op_kind kind;
    int events;
    std::uint64_t key;
    cancel_node **sent;  // where the node goes, for the operation to disarm it
    void operator()() noexcept {
        if (owner->is_current()) {
            cancel_now(owner->native(), kind, key, events);
            return;
        }
        // Out of memory: the operation ends at its deadline instead.
        auto *n = new (std::nothrow) cancel_node(owner->native(), kind, key, events, sent);
        if (!n) return;
        *sent = n;  // before the push: the loop thread sees it when the node runs
        owner->push(n);
    }
};

/// One token's hold on a pending operation.
struct stop_link {
    std::optional<std::stop_callback<op_canceller>> cb;
    cancel_node *sent = nullptr;  // a node on its way (set off the loop thread)

    void arm(std::stop_token tok, loop_core *owner, op_kind kind, int events, std::uint64_t key) noexcept {
        cb.emplace(std::move(tok), op_canceller{owner, kind, events, key, &sent});
    }
    /// The operation ended (loop thread).
    void drop() noexcept {
        cb.reset();  // waits for a canceller running on another thread
        if (sent) sent->slot = nullptr;  // its node has not run: disarm it
        sent = nullptr;
    }
};

template <typename D, typename T>
class op {
public:
    using cothread_awaitable = void;
    // Moved only before it is awaited (g++ moves the operand of co_await
    // into the frame): nothing is registered yet.
    op(op &&o) noexcept
        : m_lp(o.m_lp), m_key(o.m_key), m_dl(o.m_dl), m_ec(o.m_ec), m_kind(o.m_kind), m_events(o.m_events),
          m_tok(std::move(o.m_tok)) {}
    op &operator=(op &&) = delete;

    /// `co_await s.read(buf).stop_on(tok)`: `tok` stops this operation too
    /// (operation_canceled), and only it; the root's token still applies.
    D &&stop_on(std::stop_token tok) && noexcept {
        m_tok = std::move(tok);
        return static_cast<D &&>(*this);
    }

    bool await_ready() const noexcept { return false; }

    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
        strand *s = h.promise().get_strand();
        // Past the turn's budget, the loop's other work goes first; the try
        // comes after, so nothing is taken meanwhile.
        if (s->spend()) [[unlikely]] {
            m_h = h;
            if (s->yield_then(&after_yield, this)) return true;
        }
        return attempt(s, h);
    }

    T await_resume() {
        D &d = static_cast<D &>(*this);
        if (m_res < 0) {
            T v = d.failed();  // first: it frees what the operation made
            if (!m_ec) throw_error(static_cast<int>(m_res));
            *m_ec = make_error(static_cast<int>(m_res));
            return v;
        }
        if (m_ec) m_ec->clear();
        return d.done();
    }

protected:
    op(cot_loop *lp, op_kind kind, int events, deadline dl, std::error_code *ec) noexcept
        : m_lp(lp), m_dl(dl), m_ec(ec), m_kind(kind), m_events(events) {}
    ~op() = default;

    /// The C callback's end (loop thread): once per started operation.
    void finish(std::int64_t r) noexcept {
        m_res = r;
        m_root_stop.drop();
        m_own_stop.drop();
        cocls::coro_queue::resume(m_h);
    }

    /// A cot_socket_cb for the operations whose result is a count or 0.
    static void on_socket(cot_loop *, std::uint64_t, std::int64_t r, void *data) {
        static_cast<D *>(data)->finish(r);
    }

    cot_loop *m_lp;             // the object's loop; null: moved-from
    std::uint64_t m_key = 0;    // the socket or lookup a cancel names
    std::int64_t m_res = 0;     // the result: >= 0, or a COT_E* code

private:
    /// The await proper: false if the result is there (the task goes on),
    /// true if the operation started (the task suspends until finish()).
    bool attempt(strand *s, std::coroutine_handle<> h) noexcept {
        D &d = static_cast<D &>(*this);
        std::uint64_t ns = 0;
        if (!m_lp) return ended(COT_EBADF);
        if (m_lp != s->native()) return ended(COT_EINVAL);
        // The source, not a token: copying a token costs two atomic
        // read-modify-writes, on every operation, even one that completes now.
        const std::stop_source &src = s->stop;
        if (src.stop_requested() || m_tok.stop_requested()) return ended(COT_ECANCELED);
        if (!m_dl.is_never()) cot_loop_update_time(m_lp);  // a deadline counts from the co_await
        if (int e = m_dl.timeout_ns(m_lp, ns)) return ended(e);
        if (std::int64_t r = d.try_now(); r != COT_EAGAIN) return ended(r);
        if (int e = d.start(ns)) return ended(e);
        m_h = h;
        s->spent = 0;  // it suspends: the next turn counts afresh
        if (src.stop_possible()) m_root_stop.arm(src.get_token(), s->owner, m_kind, m_events, m_key);
        if (m_tok.stop_possible()) m_own_stop.arm(std::move(m_tok), s->owner, m_kind, m_events, m_key);
        return true;
    }

    /// The loop's turn after a budget yield: the await goes on as it would
    /// have; the task resumes here unless the operation started.
    static void after_yield(strand *s, void *self) noexcept {
        auto *o = static_cast<op *>(self);
        s->spend();  // the first of this turn
        if (!o->attempt(s, o->m_h)) cocls::coro_queue::resume(o->m_h);
    }

    bool ended(std::int64_t r) noexcept {
        m_res = r;
        return false;
    }

    deadline m_dl;
    std::error_code *m_ec;      // null: throw
    op_kind m_kind;
    int m_events;
    std::stop_token m_tok;      // the operation's own, if any
    std::coroutine_handle<> m_h;
    stop_link m_root_stop, m_own_stop;
};

}  // namespace cothread::detail

#endif
