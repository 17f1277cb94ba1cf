/* poco-compatible API (cothread): the round-robin scheduler.
 *
 * poco's pick order: the coroutines sit in a fixed cyclic list (the order
 * given, then added into free slots); the next to run is the first ready one
 * after the one that ran last. A ready bitset finds it without visiting the
 * others; waiting coroutines cost nothing until their subject wakes them;
 * when none is ready the scheduler sleeps in a cothread event loop. */
#ifndef POCO_SCHEDULERS_ROUND_ROBIN_H
#define POCO_SCHEDULERS_ROUND_ROBIN_H

#include <poco/coro.h>
#include <poco/intracoro.h>
#include <poco/platform.h>
#include <poco/queue.h>
#include <poco/result.h>
#include <poco/scheduler.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How many external events (_from_isr forms, scheduler_notify_from_isr) a
 * scheduler takes between two of its steps; more fail with
 * RES_NOTIFY_FAILED. */
#define SCHEDULER_MAX_EXTERNAL_EVENT_COUNT (16)

/** The round-robin scheduler. Fields up to `previous_ticks` are poco's (read
 * them; the scheduler writes them); the rest is private. */
typedef struct round_robin_scheduler {
    /** The interface (scheduler.h); a RoundRobinScheduler * is a Scheduler *. */
    Scheduler scheduler;
    /** The slots: NULL for a free one. */
    Coro **tasks;
    /** The number of slots. */
    size_t max_tasks_count;
    /** The coroutines in the slots. */
    size_t all_tasks;
    /** How many of them finished. */
    size_t finished_tasks;
    /** The coroutine running, NULL between steps. */
    Coro *current_task;
    /** The slot the search for the next coroutine starts at. */
    size_t next_task_index;
    /** The external events not yet applied: `count` is how many there are
     * (each _from_isr notification counts; the slots in `external_events`
     * are taken lock-free, not in queue order). */
    Queue event_queue;
    /** The stored external events (scheduler_notify_from_isr, and _from_isr
     * forms on objects no coroutine waited on yet). */
    CoroEventSource external_events[SCHEDULER_MAX_EXTERNAL_EVENT_COUNT];
    /** The ticks when the scheduler last applied elapsed time. */
    PlatformTick previous_ticks;

    /* Private. */
    uint64_t *ready_;           /* bit i: tasks[i] is ready */
    uint64_t ready_inline_[4];  /* the bitset for up to 256 slots */
    Coro **heap_;               /* timed waits, a min-heap by deadline */
    size_t heap_len_;
    void *loop_;                /* cot_loop the scheduler sleeps in when idle */
    uint64_t timer_, poll_;     /* cot_handle: the idle timeout, the ISR eventfd */
    int wake_fd_;               /* eventfd written by _from_isr forms */
    PocoSubject *isr_head_;     /* subjects with ISR wakeups pending */
    PocoSubject raw_;           /* coroutines in a raw wait (coro_yield_with_signal) */
    uint32_t ext_state_[SCHEDULER_MAX_EXTERNAL_EVENT_COUNT]; /* external_events slots */
    uint32_t flags_;
} RoundRobinScheduler;

/** A scheduler of `num_coros` slots holding `coro_list` (copied; NULL
 * entries are free slots). NULL if out of memory, or if a coroutine of the
 * list is in a scheduler already (or listed twice). */
Scheduler *round_robin_scheduler_create(Coro *const *coro_list, size_t num_coros);

/** The same in the caller's memory: `coro_list` is used in place as the
 * slots. */
Scheduler *round_robin_scheduler_create_static(RoundRobinScheduler *scheduler,
                                               Coro **coro_list, size_t num_coros);

/** Frees a scheduler (either kind; of a static one, what it allocated). Its
 * coroutines stay, out of any scheduler; the caller frees them. poco's name
 * (sic). */
void round_round_robin_scheduler_free(RoundRobinScheduler *scheduler);

/** The same as round_round_robin_scheduler_free, without poco's typo. */
void round_robin_scheduler_free(RoundRobinScheduler *scheduler);

/** Puts `coro` into the first free slot: RES_OK; RES_NO_MEM if no slot is
 * free; RES_INVALID_STATE if `coro` is in a scheduler already (this one or
 * another: poco would hold it twice). A finished coroutine keeps its slot
 * until removed. */
Result round_robin_scheduler_add_coro(RoundRobinScheduler *scheduler, Coro *coro);

/** Frees the slot of `coro` (finished or not: a waiting one leaves its
 * wait). Nothing if it is not there. */
void round_robin_scheduler_remove_coro(RoundRobinScheduler *scheduler, Coro const *coro);

#ifdef __cplusplus
}
#endif

#endif /* POCO_SCHEDULERS_ROUND_ROBIN_H */
