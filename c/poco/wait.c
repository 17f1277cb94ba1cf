/* Waiting on a subject with a deadline, and waking exactly the subject's
 * waiters: each primitive keeps its own list, so a wakeup costs O(waiters
 * woken), never a broadcast to every coroutine as in poco. The waits fill the
 * coroutine's event sinks and the wakers announce event sources all the same,
 * so that the raw API (coro_notify, raw waits, schedulers of the user's own)
 * sees what poco's would: the matching rules are here too. */
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
    if (timeout < 0) { /* PLATFORM_TICKS_FOREVER and any other negative */
        return POCO_NEVER;
    }
    if (timeout == 0) {
        timeout = 1;
    }
    int64_t now = poco_now_ns();
    if (timeout > (INT64_MAX - now) / 1000000) {
        return POCO_NEVER;
    }
    return now + timeout * 1000000;
}

/* Takes the coroutine out of its subject's list. The last waiter to leave
 * unbinds the subject from its scheduler: a subject is bound only while a
 * coroutine of that scheduler waits on it, so no binding outlives a freed
 * scheduler (round_robin_scheduler_free takes its waiters out). The waits
 * bind again before each look at the state (see poco_bind). */
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
    if (s->head == NULL && __atomic_load_n(&s->scheduler, __ATOMIC_RELAXED) != NULL) {
        __atomic_store_n(&s->scheduler, NULL, __ATOMIC_SEQ_CST);
    }
}

static void link_waiter(PocoSubject *subject, Coro *coro) {
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

/* poco's sinks for a wait on `subject` (its owner) with `deadline`. */
static void fill_sinks(Coro *coro, PocoSubject *subject, CoroEventSinkType type,
                       int64_t deadline) {
    CoroEventSink *p = &coro->event_sinks[EVENT_SINK_SLOT_PRIMARY];
    CoroEventSink *t = &coro->event_sinks[EVENT_SINK_SLOT_TIMEOUT];
    p->type = subject != NULL ? type : CORO_EVTSINK_NONE;
    p->params.subject = subject != NULL ? subject->owner : NULL;
    t->type = CORO_EVTSINK_DELAY;
    if (deadline == POCO_NEVER) {
        t->params.ticks_remaining = PLATFORM_TICKS_FOREVER;
    } else {
        int64_t left = deadline - poco_now_ns();
        t->params.ticks_remaining = left <= 0 ? 0 : (left + 999999) / 1000000;
    }
}

bool poco_wait(PocoSubject *subject, int64_t deadline, CoroEventSinkType type) {
    Coro *coro = poco_current();
    if (coro == NULL) {
        return false;
    }
    fill_sinks(coro, subject, type, deadline);
    coro->triggered_event_sink_slot = EVENT_SINK_SLOT_PRIMARY;
    RoundRobinScheduler *s = coro->scheduler_;
    if (s == NULL || s != poco_current_scheduler()) {
        /* coro_resume by hand, or a scheduler of the user's: it matches the
         * sinks (coro_notify) before resuming. */
        poco_switch_out(coro, CORO_SIG_WAIT);
        return coro->triggered_event_sink_slot == EVENT_SINK_SLOT_PRIMARY;
    }
    if (subject != NULL) {
        link_waiter(subject, coro);
    }
    if (deadline != POCO_NEVER) {
        coro->deadline_ = deadline;
        poco_rr_timer_add(s, coro);
    }
    poco_switch_out(coro, CORO_SIG_WAIT);
    return coro->triggered_event_sink_slot == EVENT_SINK_SLOT_PRIMARY;
}

/* Ends a coroutine's wait: out of its list and the timer heap, ready; the
 * sink in `slot` ended it. */
static void wake_one(Coro *coro, size_t slot) {
    if (coro->waiting_on_ != NULL) {
        unlink_waiter(coro);
    }
    RoundRobinScheduler *s = coro->scheduler_;
    if (s != NULL && coro->heap_index_ != 0) {
        poco_rr_timer_remove(s, coro);
    }
    coro->triggered_event_sink_slot = slot;
    if (s != NULL) {
        poco_rr_make_ready(s, coro);
    } else {
        coro->coro_state = CORO_STATE_READY;
    }
}

void poco_wake_all(PocoSubject *subject) {
    while (subject->head != NULL) {
        wake_one(subject->head, EVENT_SINK_SLOT_PRIMARY);
    }
}

/* The slot of the coroutine's time limit (a raw wait may put it first). */
static size_t delay_slot(Coro const *coro) {
    for (size_t i = 0; i < EVENT_SINK_SLOT_COUNT; ++i) {
        if (coro->event_sinks[i].type == CORO_EVTSINK_DELAY) {
            return i;
        }
    }
    return EVENT_SINK_SLOT_TIMEOUT;
}

void poco_wait_expire(Coro *coro) {
    if (coro->waiting_on_ != NULL) {
        unlink_waiter(coro);
    }
    coro->triggered_event_sink_slot = delay_slot(coro);
}

/* ---- event sources and sinks (coro_notify's rules, as poco's) ---- */

static bool sink_matches(CoroEventSink *sink, CoroEventSource const *event) {
    CoroEventSinkType want;
    switch (event->type) {
    case CORO_EVTSRC_ELAPSED:
        /* Counts the time limit down (once: poco subtracts twice). */
        if (sink->type != CORO_EVTSINK_DELAY || sink->params.ticks_remaining < 0) {
            return false; /* none, or forever */
        }
        if (event->params.elapsed_ticks >= sink->params.ticks_remaining) {
            sink->params.ticks_remaining = 0;
        } else if (event->params.elapsed_ticks > 0) {
            sink->params.ticks_remaining -= event->params.elapsed_ticks;
        }
        return sink->params.ticks_remaining <= 0;
    case CORO_EVTSRC_QUEUE_GET: want = CORO_EVTSINK_QUEUE_NOT_FULL; break;
    case CORO_EVTSRC_QUEUE_PUT: want = CORO_EVTSINK_QUEUE_NOT_EMPTY; break;
    case CORO_EVTSRC_EVENT_SET: want = CORO_EVTSINK_EVENT_GET; break;
    case CORO_EVTSRC_SEMAPHORE_RELEASE: want = CORO_EVTSINK_SEMAPHORE_ACQUIRE; break;
    case CORO_EVTSRC_MUTEX_RELEASE: want = CORO_EVTSINK_MUTEX_ACQUIRE; break;
    case CORO_EVTSRC_CORO_FINISHED: want = CORO_EVTSINK_WAIT_FINISH; break;
    case CORO_EVTSRC_STREAM_RECV: want = CORO_EVTSINK_STREAM_NOT_FULL; break;
    case CORO_EVTSRC_STREAM_SEND: want = CORO_EVTSINK_STREAM_NOT_EMPTY; break;
    default: return false;
    }
    return sink->type == want && sink->params.subject == event->params.subject;
}

bool poco_offer(Coro *coro, CoroEventSource const *event) {
    for (size_t i = 0; i < EVENT_SINK_SLOT_COUNT; ++i) {
        if (sink_matches(&coro->event_sinks[i], event)) {
            wake_one(coro, i);
            return true;
        }
    }
    return false;
}

void poco_offer_raw(RoundRobinScheduler *s, CoroEventSource const *event) {
    for (Coro *c = s->raw_.head, *next; c != NULL; c = next) {
        next = c->wait_next_;
        poco_offer(c, event);
    }
}

void poco_offer_all(RoundRobinScheduler *s, CoroEventSource const *event) {
    for (size_t i = 0; i < s->max_tasks_count; ++i) {
        Coro *c = s->tasks[i];
        if (c != NULL && c->scheduler_ == s && c->coro_state == CORO_STATE_BLOCKED) {
            poco_offer(c, event);
        }
    }
}

void poco_raw_wait(Coro *coro, RoundRobinScheduler *s, bool announce) {
    link_waiter(&s->raw_, coro);
    int64_t deadline = POCO_NEVER;
    for (size_t i = 0; i < EVENT_SINK_SLOT_COUNT; ++i) {
        CoroEventSink const *k = &coro->event_sinks[i];
        if (k->type == CORO_EVTSINK_DELAY) {
            int64_t d = poco_deadline(k->params.ticks_remaining);
            deadline = d < deadline ? d : deadline;
        }
    }
    if (deadline != POCO_NEVER) {
        coro->deadline_ = deadline;
        poco_rr_timer_add(s, coro);
    }
    coro->coro_state = CORO_STATE_BLOCKED;
    if (announce) {
        poco_offer_all(s, &coro->event_source);
    }
    poco_switch_out(coro, announce ? CORO_SIG_NOTIFY_AND_WAIT : CORO_SIG_WAIT);
}

Result poco_changed(PocoSubject *subject, CoroEventSourceType type, bool yield) {
    /* The raw waiters to offer the event to: those of the waiters' scheduler
     * (this thread's), else those of the context's. */
    RoundRobinScheduler *s = __atomic_load_n(&subject->scheduler, __ATOMIC_RELAXED);
    poco_wake_all(subject);
    CoroEventSource ev = {.type = type, .params.subject = subject->owner};
    Scheduler *cs = context_get_scheduler();
    if (s == NULL) {
        s = poco_rr(cs);
    }
    if (s != NULL && s->raw_.head != NULL) {
        poco_offer_raw(s, &ev);
    }
    Coro *me = poco_current();
    if (yield && me != NULL) {
        me->event_source = ev;
        poco_switch_out(me, CORO_SIG_NOTIFY);
        return RES_OK;
    }
    if (cs != NULL && poco_rr(cs) == NULL && cs->notify != NULL) {
        /* A scheduler of the user's: it routes the event (poco's
         * scheduler_notify of the _no_wait forms). */
        return cs->notify(cs, &ev) == RES_OK ? RES_OK : RES_NOTIFY_FAILED;
    }
    return RES_OK;
}

void poco_yield_event(CoroEventSourceType type, void *owner) {
    Coro *me = poco_current();
    if (me != NULL) {
        me->event_source.type = type;
        me->event_source.params.subject = owner;
        poco_switch_out(me, CORO_SIG_NOTIFY);
    }
}

/* The store is seq_cst, and so is the caller's next look at the state (an
 * event's flags and a semaphore's count are loaded seq_cst; queues and streams
 * are looked at under poco_try_lock, a seq_cst exchange); poco_isr_changed
 * changes the state seq_cst, then loads the scheduler seq_cst. In the total
 * order of these operations either our look comes after the ISR's change and
 * sees it, or the ISR's load comes after our store and sees the scheduler (the
 * argument in full: isr.c). When the store is skipped, the scheduler's thread
 * stored the same value earlier (and nothing unbound it since: only this
 * thread does, in unlink_waiter), and that store happens before the look just
 * the same. A wait binds before each look that may lead to waiting, since
 * a wakeup may have unbound the subject (and a look that finds the state
 * ready unbinds again, poco_unbind_idle: a subject is bound only while a
 * coroutine waits on it). No standalone fence: ThreadSanitizer does not model
 * them (GCC warns about atomic_thread_fence under -fsanitize=thread), and
 * none is needed. */
void poco_bind(PocoSubject *subject) {
    RoundRobinScheduler *s = poco_current_scheduler();
    if (s != NULL && __atomic_load_n(&subject->scheduler, __ATOMIC_RELAXED) != s) {
        __atomic_store_n(&subject->scheduler, s, __ATOMIC_SEQ_CST);
    }
}

void poco_unbind_idle(PocoSubject *subject) {
    if (subject->head == NULL && __atomic_load_n(&subject->scheduler, __ATOMIC_RELAXED) != NULL) {
        __atomic_store_n(&subject->scheduler, NULL, __ATOMIC_SEQ_CST);
    }
}

void poco_lock(PocoSubject *subject) {
    while (!poco_try_lock(subject)) {
    }
}

/* seq_cst, not just acquire: a waiter's try-lock is its look at a queue's or a
 * stream's state, and a _from_isr form's try-lock comes before its change of
 * it; poco_bind and poco_isr_changed order themselves against these (on
 * x86-64 the exchange is the same instruction either way). */
bool poco_try_lock(PocoSubject *subject) {
    return __atomic_exchange_n(&subject->lock, 1, __ATOMIC_SEQ_CST) == 0;
}

void poco_unlock(PocoSubject *subject) { __atomic_store_n(&subject->lock, 0, __ATOMIC_RELEASE); }
