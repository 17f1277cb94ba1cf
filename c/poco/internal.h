/* What the poco-compatible layer's files share (not installed). */
#ifndef POCO_INTERNAL_H
#define POCO_INTERNAL_H

#include <cothread.h>
#include <poco/context.h>
#include <poco/coro_raw.h>
#include <poco/poco.h>
#include <poco/queue_raw.h>

/* A deadline that never comes. */
#define POCO_NEVER INT64_MAX

/* Coro flags_. */
#define POCO_CORO_MAPPED 1u  /* its stack is ours to unmap */
#define POCO_CORO_CREATED 2u /* made by coro_create (the struct is ours) */

/* ext_state_ of a slot of external_events: free, being written, holding an
 * event for the raw waiters only (a primitive's _from_isr form: the
 * primitive's own waiters are woken through its subject), or holding one for
 * every blocked coroutine (scheduler_notify_from_isr). */
#define POCO_EXT_FREE 0u
#define POCO_EXT_WRITING 1u
#define POCO_EXT_RAW 2u
#define POCO_EXT_ALL 3u

/* The running coroutine and the round-robin scheduler running it (this
 * thread's; NULL outside a step). */
Coro *poco_current(void);
RoundRobinScheduler *poco_current_scheduler(void);
/* `s` as a round-robin scheduler of ours; NULL for NULL or another kind. */
RoundRobinScheduler *poco_rr(Scheduler *s);

/* Now, in ns of CLOCK_MONOTONIC. */
int64_t poco_now_ns(void);
/* The deadline of a wait of `timeout` ticks from now: at least one tick
 * (timeout 0 waits one tick, as in poco); negative (PLATFORM_TICKS_FOREVER
 * among them): never. */
int64_t poco_deadline(PlatformTick timeout);

/* Context switches. poco_switch_out: from the running coroutine to whoever
 * resumed it, telling it `signal`. poco_switch_in: into `coro` until it
 * switches out; returns the signal. */
void poco_switch_out(Coro *coro, CoroSignal signal);
CoroSignal poco_switch_in(Coro *coro);
/* A yield's fast path (round_robin.c): the coroutine to switch straight to
 * (`self` to go on), its step's bookkeeping done; NULL to go through the
 * scheduler's stack. */
Coro *poco_rr_yield_next(Coro *self);
/* Releases what a finished coroutine holds of the sanitizers' state. */
void poco_coro_retire(Coro *coro);

/* Waiting. poco_wait blocks the running coroutine on `subject` (NULL: only
 * the deadline) until it is woken or the deadline passed; true if woken.
 * It fills the coroutine's event sinks: `type` on the subject's owner, and
 * the time left. Under a scheduler other than ours it only yields with
 * CORO_SIG_WAIT (that scheduler matches the sinks). */
bool poco_wait(PocoSubject *subject, int64_t deadline, CoroEventSinkType type);
/* Wakes every coroutine waiting on `subject` (on the scheduler's thread). */
void poco_wake_all(PocoSubject *subject);
/* After a change of the subject's primitive, on the scheduler's thread:
 * wakes its waiters and the raw waiters the event `type` matches; with
 * `yield`, in a coroutine, yields announcing the event (CORO_SIG_NOTIFY);
 * otherwise tells the context's scheduler if it is not ours. RES_OK, or
 * RES_NOTIFY_FAILED if that scheduler refused. */
Result poco_changed(PocoSubject *subject, CoroEventSourceType type, bool yield);
/* In a coroutine: yields announcing {type, owner} (the wakeups were done). */
void poco_yield_event(CoroEventSourceType type, void *owner);
/* Records the running scheduler on `subject`, for its _from_isr wakeups;
 * sequentially consistent, before the caller checks the subject's state, which
 * it must do with a seq_cst operation (a seq_cst load, or under poco_try_lock):
 * see wait.c and isr.c. */
void poco_bind(PocoSubject *subject);
/* After a look following poco_bind found the state ready (no wait): unbinds
 * the subject again if nobody waits on it. A wait looks at the state once
 * before binding (the common case: ready, no binding to undo). */
void poco_unbind_idle(PocoSubject *subject);

/* Event matching (coro_notify's rules): offers `event` to a blocked `coro`;
 * true (and it is ready) if a sink matched. */
bool poco_offer(Coro *coro, CoroEventSource const *event);
/* Offers `event` to the raw waiters of `s` (coroutines in
 * coro_yield_with_signal(CORO_SIG_WAIT)), or to every blocked coroutine of
 * `s` (poco's broadcast). */
void poco_offer_raw(RoundRobinScheduler *s, CoroEventSource const *event);
void poco_offer_all(RoundRobinScheduler *s, CoroEventSource const *event);
/* Blocks the running coroutine, under `s`, in a raw wait: until a sink
 * matches or its CORO_EVTSINK_DELAY time passed. With `announce`, once
 * blocked, offers its event_source to every blocked coroutine first
 * (CORO_SIG_NOTIFY_AND_WAIT). */
void poco_raw_wait(Coro *coro, RoundRobinScheduler *s, bool announce);

/* _from_isr: async-signal-safe wakeup of the subject's waiters after the
 * change `type`, charged to the scheduler's external events. */
Result poco_isr_changed(PocoSubject *subject, CoroEventSourceType type);
/* Stores an external event in a free slot of `s` (kind POCO_EXT_RAW or
 * POCO_EXT_ALL) and wakes the scheduler; false if no slot is free. */
bool poco_ext_post(RoundRobinScheduler *s, CoroEventSource const *event, uint32_t kind);
/* The try-lock guarding state that _from_isr forms change (queues, streams):
 * coroutines spin (the holder is another thread, briefly); _from_isr forms
 * give up after a few tries (the holder may be the thread they interrupted). */
void poco_lock(PocoSubject *subject);
bool poco_try_lock(PocoSubject *subject);
void poco_unlock(PocoSubject *subject);

/* Scheduler internals used by the waits. */
void poco_rr_make_ready(RoundRobinScheduler *s, Coro *coro);
void poco_rr_timer_add(RoundRobinScheduler *s, Coro *coro);
void poco_rr_timer_remove(RoundRobinScheduler *s, Coro *coro);
void poco_rr_detach(RoundRobinScheduler *s, Coro *coro);
/* The timer heap's expiry: the coroutine leaves its subject's list; the
 * slot of its CORO_EVTSINK_DELAY sink ended the wait. */
void poco_wait_expire(Coro *coro);
/* Drops the context's scheduler if it is `s` (being freed). */
void poco_context_forget(Scheduler *s);

#endif /* POCO_INTERNAL_H */
