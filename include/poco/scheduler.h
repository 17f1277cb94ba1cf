/* poco-compatible API (cothread): the interface every scheduler has, as in
 * poco: a table of functions first in the scheduler's struct. cothread's is
 * the round-robin scheduler (schedulers/round_robin.h); a scheduler of your
 * own fills the table and drives its coroutines with poco/coro_raw.h. */
#ifndef POCO_SCHEDULER_H
#define POCO_SCHEDULER_H

#include <poco/coro.h>
#include <poco/intracoro.h>
#include <poco/result.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct scheduler Scheduler;

/** Runs a scheduler until every coroutine of it finished. */
typedef void (*SchedulerRun)(Scheduler *scheduler);

/** Prepares a scheduler for step-by-step runs (scheduler_start). */
typedef void (*SchedulerStart)(Scheduler *scheduler);

/** One step of a scheduler (scheduler_run_once); false once nothing is left. */
typedef bool (*SchedulerRunOnce)(Scheduler *scheduler);

/** Tells a scheduler about an event (from its thread): RES_OK, or
 * RES_NOTIFY_FAILED. */
typedef Result (*SchedulerNotify)(Scheduler *scheduler, CoroEventSource const *event);

/** The same from an interrupt: another thread or a signal handler. */
typedef Result (*SchedulerNotifyFromISR)(Scheduler *scheduler,
                                         CoroEventSource const *event);

/** The coroutine a scheduler is running, NULL if none. */
typedef Coro *(*SchedulerGetCurrentCoroutine)(Scheduler *scheduler);

/** The interface: the first member of every scheduler. */
struct scheduler {
    SchedulerRun run;                                  /**< scheduler_run */
    SchedulerNotify notify;                            /**< scheduler_notify */
    SchedulerNotifyFromISR notify_from_isr;            /**< scheduler_notify_from_isr */
    SchedulerGetCurrentCoroutine get_current_coroutine; /**< scheduler_get_current_coroutine */
};

/** Makes `scheduler` the context's (context_set_scheduler) and runs it until
 * every coroutine finished. */
void scheduler_run(Scheduler *scheduler);

/** Prepares a step-by-step run (makes the event loop the round-robin
 * scheduler sleeps in, and sets the context's scheduler); scheduler_run and
 * scheduler_run_once do it when needed. Nothing for a scheduler of your own.
 * (poco declares it without defining it.) */
void scheduler_start(Scheduler *scheduler);

/** One step of the round-robin scheduler: applies external events and
 * elapsed time, runs the next ready coroutine until it yields, or, if none is
 * ready, sleeps in the event loop until a time limit or an external event.
 * Returns false once every coroutine finished. A scheduler of your own is
 * run to the end (its `run`), and the result is false. (poco declares it
 * without defining it.) */
bool scheduler_run_once(Scheduler *scheduler);

/** Tells `scheduler` about `event`, from its thread: the blocked coroutines
 * with a matching sink wake. RES_OK, or the scheduler's failure code. */
static inline Result scheduler_notify(Scheduler *scheduler, CoroEventSource const *event) {
    return scheduler->notify(scheduler, event);
}

/** The same from another thread or a signal handler (async-signal-safe for
 * the round-robin scheduler): RES_OK, or RES_NOTIFY_FAILED when
 * SCHEDULER_MAX_EXTERNAL_EVENT_COUNT external events wait already. */
static inline Result scheduler_notify_from_isr(Scheduler *scheduler,
                                               CoroEventSource const *event) {
    return scheduler->notify_from_isr(scheduler, event);
}

/** The coroutine `scheduler` is running; NULL between steps. */
static inline Coro *scheduler_get_current_coroutine(Scheduler *scheduler) {
    return scheduler->get_current_coroutine(scheduler);
}

#ifdef __cplusplus
}
#endif

#endif /* POCO_SCHEDULER_H */
