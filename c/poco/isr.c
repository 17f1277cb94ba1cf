/* _from_isr wakeups, async-signal-safe: the subject goes onto its
 * scheduler's lock-free list and an eventfd write wakes the scheduler's
 * event loop (cot_async_send takes a lock, so it is not used here). The
 * scheduler drains the list before every pick (round_robin.c). */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <errno.h>
#include <unistd.h>

Result poco_isr_wake(PocoSubject *subject) {
    /* Pairs with poco_bind's fence (see there). */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    RoundRobinScheduler *s = __atomic_load_n(&subject->scheduler, __ATOMIC_SEQ_CST);
    if (s == NULL) {
        /* No coroutine ever waited on it: the next one to look sees the state. */
        return RES_OK;
    }
    if (__atomic_exchange_n(&subject->isr_queued, 1, __ATOMIC_ACQ_REL) != 0) {
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
