/* What the poco-compatible layer's files share (not installed). */
#ifndef POCO_INTERNAL_H
#define POCO_INTERNAL_H

#include <cothread.h>
#include <poco/poco.h>

/* A deadline that never comes. */
#define POCO_NEVER INT64_MAX

/* Coro flags_. */
#define POCO_CORO_MAPPED 1u  /* its stack is ours to unmap */
#define POCO_CORO_CREATED 2u /* made by coro_create (the struct is ours) */

/* The running coroutine and its scheduler (this thread's). */
Coro *poco_current(void);
RoundRobinScheduler *poco_current_scheduler(void);

/* Now, in ns of CLOCK_MONOTONIC. */
int64_t poco_now_ns(void);
/* The deadline of a wait of `timeout` ticks from now: at least one tick
 * (timeout 0 waits one tick, as in poco); negative or FOREVER: never. */
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
 * the deadline) until poco_wake_all or the deadline; true if woken. */
bool poco_wait(PocoSubject *subject, int64_t deadline);
/* Wakes every coroutine waiting on `subject` (on the scheduler's thread). */
void poco_wake_all(PocoSubject *subject);
/* Yields with CORO_SIG_NOTIFY when called from a coroutine. */
void poco_notify_yield(void);
/* Records the running scheduler on `subject`, for its _from_isr wakeups;
 * sequentially consistent, before the caller checks the subject's state, which
 * it must do with a seq_cst operation (a seq_cst load, or under poco_try_lock):
 * see wait.c and isr.c. */
void poco_bind(PocoSubject *subject);

/* _from_isr: async-signal-safe wakeup of the subject's waiters. */
Result poco_isr_wake(PocoSubject *subject);
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

#endif /* POCO_INTERNAL_H */
