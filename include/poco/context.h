/* poco-compatible API (cothread): the scheduler and the coroutine the
 * library works for (poco's context). */
#ifndef POCO_CONTEXT_H
#define POCO_CONTEXT_H

#include <poco/coro.h>
#include <poco/scheduler.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The scheduler running on this thread (inside one of its steps), else the
 * one context_set_scheduler (or scheduler_run, scheduler_start) set last;
 * NULL if none. The _no_wait and _from_isr forms notify it when they cannot
 * tell which scheduler waits on their object. */
Scheduler *context_get_scheduler(void);

/** The coroutine running on this thread; NULL outside coroutines (poco
 * returns its scheduler's last one there). */
Coro *context_get_coro(void);

/** Sets the scheduler context_get_scheduler returns outside scheduler steps
 * (process-wide, as in poco); scheduler_run does it. */
void context_set_scheduler(Scheduler *scheduler);

#ifdef __cplusplus
}
#endif

#endif /* POCO_CONTEXT_H */
