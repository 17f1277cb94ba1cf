/* _from_isr wakeups, async-signal-safe: the subject goes onto its
 * scheduler's lock-free list and an eventfd write wakes the scheduler's
 * event loop (cot_async_send takes a lock, so it is not used here). The
 * scheduler drains the list before every pick (round_robin.c). */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <errno.h>
#include <unistd.h>

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
 *   scheduler. The store-buffering outcome where both miss is excluded.
 * - Against the scheduler draining its list (apply_isr: it stores isr_queued
 *   = 0, seq_cst, then wakes the waiters, which check the state with seq_cst
 *   operations): the exchange below is seq_cst. If it reads 1, the subject is
 *   on the list and the drain that takes it off has not stored 0 yet: our
 *   exchange, and before it our state change, precede that store in S (both
 *   seq_cst, on one location, in modification order), and the woken waiters'
 *   checks, which follow the store, see the change. */
Result poco_isr_wake(PocoSubject *subject) {
    RoundRobinScheduler *s = __atomic_load_n(&subject->scheduler, __ATOMIC_SEQ_CST);
    if (s == NULL) {
        /* No coroutine ever waited on it: the next one to look sees the state. */
        return RES_OK;
    }
    if (__atomic_exchange_n(&subject->isr_queued, 1, __ATOMIC_SEQ_CST) != 0) {
        return RES_OK; /* on the list already, not drained yet */
    }
    PocoSubject *head = __atomic_load_n(&s->isr_head_, __ATOMIC_RELAXED);
    do {
        subject->isr_next = head;
    } while (!__atomic_compare_exchange_n(&s->isr_head_, &head, subject, true,
                                          __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    int saved = errno;
    uint64_t one = 1;
    ssize_t n = write(s->wake_fd_, &one, sizeof one);
    Result r = (n == (ssize_t)sizeof one || errno == EAGAIN) ? RES_OK : RES_NOTIFY_FAILED;
    errno = saved;
    return r;
}
