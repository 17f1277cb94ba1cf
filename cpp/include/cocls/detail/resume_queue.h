// Inline steps on the thread's resume queue: the hot path of every pause,
// switch and drain, without a call into the core. The queue is the core's
// (cot_resume_queue in cothread.h documents the fields); the core is called
// only to make room, and owns the memory. A NULL queue (the thread is
// exiting) queues nothing: yield gives the item back, pop gives NULL.
#ifndef COCLS_DETAIL_RESUME_QUEUE_H_INCLUDED
#define COCLS_DETAIL_RESUME_QUEUE_H_INCLUDED

#include <cstddef>

#include "core.h"

namespace cocls::detail {

// Queues `item` at the tail.
inline void queue_push(cot_resume_queue *q, void *item) noexcept {
    if (q && q->slots && q->len <= q->mask) [[likely]] {
        q->slots[(q->head + q->len) & q->mask] = item;
        q->len++;
    } else {
        cot_resume_queue_push(q, item);  // grows the ring (or ignores NULL)
    }
}

// Takes the head out; NULL if nothing is queued.
inline void *queue_pop(cot_resume_queue *q) noexcept {
    if (!q || q->len == 0) return nullptr;
    void *out = q->slots[q->head];
    q->head = (q->head + 1) & q->mask;
    q->len--;
    return out;
}

// Queues `item` and takes the head: `item` itself if nothing else waits.
// Never needs room: the tail slot is the one the head leaves.
inline void *queue_yield(cot_resume_queue *q, void *item) noexcept {
    if (!q || q->len == 0) return item;
    const std::size_t head = q->head, mask = q->mask;
    void *out = q->slots[head];
    q->slots[(head + q->len) & mask] = item;
    q->head = (head + 1) & mask;
    return out;
}

inline std::size_t queue_len(const cot_resume_queue *q) noexcept { return q ? q->len : 0; }

inline bool queue_active(const cot_resume_queue *q) noexcept { return q && q->active; }

// Enters coro mode: true if the thread was not in it (the caller drains and
// leaves), false if it was (or for NULL).
inline bool queue_enter(cot_resume_queue *q) noexcept {
    if (!q || q->active) return false;
    q->active = true;
    return true;
}

inline void queue_leave(cot_resume_queue *q) noexcept {
    if (q) q->active = false;
}

}  // namespace cocls::detail

#endif
