/* _from_isr wakeups and external events, async-signal-safe.
 *
 * A primitive that coroutines wait on is bound to their scheduler: its
 * _from_isr form puts the subject onto the scheduler's lock-free list and
 * writes the scheduler's eventfd, which its event loop watches
 * (cot_async_send takes a lock, so it is not used here). The scheduler drains
 * the list before every pick (round_robin.c).
 *
 * Every external notification also takes one of the scheduler's
 * SCHEDULER_MAX_EXTERNAL_EVENT_COUNT slots (external_events), as in poco,
 * where they are a queue of that size; a notification that finds none free
 * reports RES_NOTIFY_FAILED. The slots free up when the scheduler drains
 * them; their events go to the raw waiters (coroutines in
 * coro_yield_with_signal) or, from scheduler_notify_from_isr, to every
 * blocked coroutine with a matching sink. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <errno.h>
#include <unistd.h>

/* Wakes the scheduler's event loop; false if the eventfd refused. */
static bool wake_loop(RoundRobinScheduler *s) {
    if (s->wake_fd_ < 0) {
        return true; /* not started: its first step drains */
    }
    int saved = errno;
    uint64_t one = 1;
    ssize_t n = write(s->wake_fd_, &one, sizeof one);
    bool ok = n == (ssize_t)sizeof one || errno == EAGAIN;
    errno = saved;
    return ok;
}

/* Takes a free slot: free -> writing (the writer owns it), the event, then
 * the kind. The kind's store is seq_cst, and so is the scheduler's load of
 * it, which follows its seq_cst store of isr_queued = 0 (apply_isr): a
 * notification that found its subject on the list already (its exchange
 * precedes that store) has its event seen by the same drain. The count is
 * the queue's item count, as in poco. */
static bool claim(RoundRobinScheduler *s, CoroEventSource const *event, uint32_t kind) {
    for (size_t i = 0; i < SCHEDULER_MAX_EXTERNAL_EVENT_COUNT; ++i) {
        uint32_t expected = POCO_EXT_FREE;
        if (__atomic_load_n(&s->ext_state_[i], __ATOMIC_RELAXED) == POCO_EXT_FREE &&
            __atomic_compare_exchange_n(&s->ext_state_[i], &expected, POCO_EXT_WRITING, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            s->external_events[i] = *event;
            __atomic_fetch_add(&s->event_queue.count, 1, __ATOMIC_RELAXED);
            __atomic_store_n(&s->ext_state_[i], kind, __ATOMIC_SEQ_CST);
            return true;
        }
    }
    return false;
}

bool poco_ext_post(RoundRobinScheduler *s, CoroEventSource const *event, uint32_t kind) {
    if (!claim(s, event, kind)) {
        return false;
    }
    return wake_loop(s);
}

/* The caller changed the subject's state with a sequentially consistent
 * operation: the seq_cst read-modify-write of an event's flags or of a
 * semaphore's count, or the seq_cst try-lock (poco_try_lock) of the critical
 * section that changed a queue or a stream. No fence is needed (nor used:
 * ThreadSanitizer does not model standalone fences, and GCC warns about them
 * under -fsanitize=thread); the ordering comes from these seq_cst operations,
 * which are all in one total order S:
 *
 * - Against a waiter (poco_bind, then its check of the state): the waiter
 *   stores the scheduler (seq_cst) before it checks the state with a seq_cst
 *   operation; we change the state before loading the scheduler (seq_cst).
 *   Whichever of the two state operations comes first in S, either the
 *   waiter's check sees our change (a seq_cst load or read-modify-write sees
 *   the last seq_cst write before it in S; for the try-lock, the waiter's
 *   critical section then comes after ours), or our load below sees the
 *   scheduler. The store-buffering outcome where both miss is excluded. The
 *   scheduler's thread unbinds a subject (stores NULL) only when its last
 *   waiter left, and every wait binds again before it looks at the state, so
 *   the argument holds for each look.
 * - Against the scheduler draining its list (apply_isr: it stores isr_queued
 *   = 0, seq_cst, then wakes the waiters, which check the state with seq_cst
 *   operations): the exchange below is seq_cst. If it reads 1, the subject is
 *   on the list and the drain that takes it off has not stored 0 yet: our
 *   exchange, and before it our state change, precede that store in S (both
 *   seq_cst, on one location, in modification order), and the woken waiters'
 *   checks, which follow the store, see the change.
 *
 * Nobody waits on an unbound subject: the next waiter sees the state. The
 * notification is still charged (and stored, for raw waiters) to the
 * context's scheduler, as poco charges every one to it. */
Result poco_isr_changed(PocoSubject *subject, CoroEventSourceType type) {
    CoroEventSource ev = {.type = type, .params.subject = subject->owner};
    RoundRobinScheduler *s = __atomic_load_n(&subject->scheduler, __ATOMIC_SEQ_CST);
    if (s == NULL) {
        Scheduler *cs = context_get_scheduler();
        if (cs == NULL) {
            return RES_OK;
        }
        RoundRobinScheduler *r = poco_rr(cs);
        if (r == NULL) {
            /* A scheduler of the user's. */
            return cs->notify_from_isr(cs, &ev) == RES_OK ? RES_OK : RES_NOTIFY_FAILED;
        }
        return poco_ext_post(r, &ev, POCO_EXT_RAW) ? RES_OK : RES_NOTIFY_FAILED;
    }
    /* The wakeup is never lost, also beyond the slots: only the result says
     * that the scheduler took too many (poco drops the event there). */
    bool charged = claim(s, &ev, POCO_EXT_RAW);
    if (__atomic_exchange_n(&subject->isr_queued, 1, __ATOMIC_SEQ_CST) != 0) {
        /* On the list already, not drained yet: the loop was woken. */
        return charged ? RES_OK : RES_NOTIFY_FAILED;
    }
    PocoSubject *head = __atomic_load_n(&s->isr_head_, __ATOMIC_RELAXED);
    do {
        subject->isr_next = head;
    } while (!__atomic_compare_exchange_n(&s->isr_head_, &head, subject, true,
                                          __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    bool woke = wake_loop(s);
    return charged && woke ? RES_OK : RES_NOTIFY_FAILED;
}
