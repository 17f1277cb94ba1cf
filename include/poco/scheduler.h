/* poco-compatible API (cothread): schedulers. The one implementation is
 * the round-robin scheduler (schedulers/round_robin.h). */
#ifndef POCO_SCHEDULER_H
#define POCO_SCHEDULER_H

#include <poco/coro.h>
#include <poco/result.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The part every scheduler starts with. Private. */
typedef struct scheduler {
    uint32_t kind_;
} Scheduler;

/** Prepares a run (makes the event loop it sleeps in). Done by scheduler_run. */
void scheduler_start(Scheduler *scheduler);

/** One step: applies ISR wakeups and elapsed time, runs the next ready
 * coroutine until it yields, or, if none is ready, sleeps in the event loop
 * until a timeout or an ISR wakeup. Returns false once every coroutine
 * finished. */
bool scheduler_run_once(Scheduler *scheduler);

/** Runs until every coroutine finished. */
void scheduler_run(Scheduler *scheduler);

/** The coroutine running, NULL between steps. */
Coro *scheduler_get_current_coroutine(Scheduler *scheduler);

#ifdef __cplusplus
}
#endif

#endif /* POCO_SCHEDULER_H */
