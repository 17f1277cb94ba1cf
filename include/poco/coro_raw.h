/* poco-compatible API (cothread): the raw coroutine operations, for
 * primitives and schedulers of your own. Application code uses the yields of
 * poco/coro.h and the primitives instead.
 *
 * Under cothread's round-robin scheduler an announced event wakes every
 * blocked coroutine of that scheduler with a matching sink, as in poco (the
 * primitives' own waiters included); a raw wait (CORO_SIG_WAIT after filling
 * Coro.event_sinks) ends when a sink matches or its CORO_EVTSINK_DELAY time
 * has passed. Outside it (coro_resume by hand, a scheduler of your own) the
 * yields only record the signal, as in poco: the resumer routes the events. */
#ifndef POCO_CORO_RAW_H
#define POCO_CORO_RAW_H

#include <poco/coro.h>
#include <poco/intracoro.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/** In a coroutine: announces `event` (copied into Coro.event_source) and
 * yields with CORO_SIG_NOTIFY. */
void coro_yield_with_event(CoroEventSource const *event);

/** In a coroutine: yields with `signal`. CORO_SIG_NOTIFY* announce
 * Coro.event_source first (unless it is CORO_EVTSRC_NOOP); CORO_SIG_WAIT and
 * CORO_SIG_NOTIFY_AND_WAIT block until coro_notify matches one of
 * Coro.event_sinks (set them first); CORO_SIG_NOTIFY_AND_DONE finishes the
 * coroutine (it never runs again). */
void coro_yield_with_signal(CoroSignal signal);

/** Offers `event` to a blocked coroutine: if one of its sinks matches
 * (CORO_EVTSRC_ELAPSED counts down its CORO_EVTSINK_DELAY sink), it becomes
 * ready, Coro.triggered_event_sink_slot names the sink, and the result is
 * true. False (nothing changes) if it is not blocked or nothing matched. */
bool coro_notify(Coro *coro, CoroEventSource const *event);

/** Runs `coro` until it yields (outside any scheduler, or as a scheduler of
 * your own does) and returns the signal it yielded with; its coro_state
 * follows (READY, BLOCKED, FINISHED). A finished coroutine returns
 * CORO_SIG_NOTIFY_AND_DONE at once. */
CoroSignal coro_resume(Coro *coro);

#ifdef __cplusplus
}
#endif

#endif /* POCO_CORO_RAW_H */
