/* Waiting on a subject with a deadline, and waking exactly the subject's
 * waiters: each primitive keeps its own list, so a wakeup costs O(waiters
 * woken), never a broadcast to every coroutine as in poco. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include <time.h>

int64_t poco_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

PlatformTick platform_get_monotonic_ticks(void) { return poco_now_ns() / 1000000; }

int64_t poco_deadline(PlatformTick timeout) {
    if (timeout < 0 || timeout == PLATFORM_TICKS_FOREVER) {
        return POCO_NEVER;
    }
    if (timeout == 0) {
        timeout = 1;
    }
    if (timeout > (INT64_MAX - poco_now_ns()) / 1000000) {
        return POCO_NEVER;
    }
    return poco_now_ns() + timeout * 1000000;
}

static void unlink_waiter(Coro *coro) {
    PocoSubject *s = coro->waiting_on_;
    if (coro->wait_prev_ != NULL) {
        coro->wait_prev_->wait_next_ = coro->wait_next_;
    } else {
        s->head = coro->wait_next_;
    }
    if (coro->wait_next_ != NULL) {
        coro->wait_next_->wait_prev_ = coro->wait_prev_;
    } else {
        s->tail = coro->wait_prev_;
    }
    coro->wait_next_ = coro->wait_prev_ = NULL;
    coro->waiting_on_ = NULL;
}

bool poco_wait(PocoSubject *subject, int64_t deadline) {
    Coro *coro = poco_current();
    RoundRobinScheduler *s = coro != NULL ? coro->scheduler_ : NULL;
    if (s == NULL) {
        /* Not under a scheduler (coro_resume by hand): just yield. */
        if (coro != NULL) {
            poco_switch_out(coro, CORO_SIG_WAIT);
        }
        return true;
    }
    if (subject != NULL) {
        coro->waiting_on_ = subject;
        coro->wait_prev_ = subject->tail;
        coro->wait_next_ = NULL;
        if (subject->tail != NULL) {
            subject->tail->wait_next_ = coro;
        } else {
            subject->head = coro;
        }
        subject->tail = coro;
    }
    if (deadline != POCO_NEVER) {
        coro->deadline_ = deadline;
        poco_rr_timer_add(s, coro);
    }
    coro->triggered_event_sink_slot = EVENT_SINK_SLOT_PRIMARY;
    poco_switch_out(coro, CORO_SIG_WAIT);
    return coro->triggered_event_sink_slot == EVENT_SINK_SLOT_PRIMARY;
}

void poco_wake_all(PocoSubject *subject) {
    while (subject->head != NULL) {
        Coro *coro = subject->head;
        unlink_waiter(coro);
        RoundRobinScheduler *s = coro->scheduler_;
        if (coro->heap_index_ != 0) {
            poco_rr_timer_remove(s, coro);
        }
        coro->triggered_event_sink_slot = EVENT_SINK_SLOT_PRIMARY;
        poco_rr_make_ready(s, coro);
    }
}

/* The timer heap's expiry: the coroutine leaves its subject's list. */
void poco_wait_expire(Coro *coro);
void poco_wait_expire(Coro *coro) {
    if (coro->waiting_on_ != NULL) {
        unlink_waiter(coro);
    }
    coro->triggered_event_sink_slot = EVENT_SINK_SLOT_TIMEOUT;
}

void poco_notify_yield(void) {
    Coro *coro = poco_current();
    if (coro != NULL) {
        poco_switch_out(coro, CORO_SIG_NOTIFY);
    }
}

/* The store is seq_cst, and so is the caller's next look at the state (an
 * event's flags and a semaphore's count are loaded seq_cst; queues and streams
 * are looked at under poco_try_lock, a seq_cst exchange); poco_isr_wake changes
 * the state seq_cst, then loads the scheduler seq_cst. In the total order of
 * these operations either our look comes after the ISR's change and sees it,
 * or the ISR's load comes after our store and sees the scheduler (the argument
 * in full: isr.c). When the store is skipped, the scheduler's thread stored
 * the same value earlier, and that store happens before the look just the same.
 * No standalone fence: ThreadSanitizer does not model them (GCC warns about
 * atomic_thread_fence under -fsanitize=thread), and none is needed. */
void poco_bind(PocoSubject *subject) {
    RoundRobinScheduler *s = poco_current_scheduler();
    if (s != NULL && __atomic_load_n(&subject->scheduler, __ATOMIC_RELAXED) != s) {
        __atomic_store_n(&subject->scheduler, s, __ATOMIC_SEQ_CST);
    }
}

void poco_lock(PocoSubject *subject) {
    while (!poco_try_lock(subject)) {
    }
}

/* seq_cst, not just acquire: a waiter's try-lock is its look at a queue's or a
 * stream's state, and a _from_isr form's try-lock comes before its change of
 * it; poco_bind and poco_isr_wake order themselves against these (on x86-64
 * the exchange is the same instruction either way). */
bool poco_try_lock(PocoSubject *subject) {
    return __atomic_exchange_n(&subject->lock, 1, __ATOMIC_SEQ_CST) == 0;
}

void poco_unlock(PocoSubject *subject) { __atomic_store_n(&subject->lock, 0, __ATOMIC_RELEASE); }
