/* poco-compatible API (cothread): the round-robin scheduler.
 *
 * poco's pick order: the coroutines sit in a fixed cyclic list (the order
 * given, then added into free slots); the next to run is the first ready one
 * after the one that ran last. A ready bitset finds it without visiting the
 * others; waiting coroutines cost nothing until their subject wakes them. */
#ifndef POCO_SCHEDULERS_ROUND_ROBIN_H
#define POCO_SCHEDULERS_ROUND_ROBIN_H

#include <poco/coro.h>
#include <poco/result.h>
#include <poco/scheduler.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct round_robin_scheduler {
    Scheduler scheduler;
    Coro **tasks;
    size_t max_tasks_count;
    size_t all_tasks;
    size_t finished_tasks;
    Coro *current_task;
    size_t next_task_index;

    /* Private. */
    uint64_t *ready_;           /* bit i: tasks[i] is ready */
    uint64_t ready_inline_[4];  /* the bitset for up to 256 slots */
    Coro **heap_;               /* timed waits, a min-heap by deadline */
    size_t heap_len_;
    void *loop_;                /* cot_loop the scheduler sleeps in when idle */
    uint64_t timer_, poll_;     /* cot_handle: the idle timeout, the ISR eventfd */
    int wake_fd_;               /* eventfd written by _from_isr forms */
    PocoSubject *isr_head_;     /* subjects with ISR wakeups pending */
    uint32_t flags_;
} RoundRobinScheduler;

/** A scheduler of `num_coros` slots holding `coro_list` (NULL entries are
 * free slots). NULL if out of memory. */
Scheduler *round_robin_scheduler_create(Coro *const *coro_list, size_t num_coros);

/** The same in the caller's memory; `coro_list` is used in place. */
Scheduler *round_robin_scheduler_create_static(RoundRobinScheduler *scheduler,
                                               Coro **coro_list, size_t num_coros);

/** Frees a scheduler (either kind; for a static one, what it allocated). */
void round_round_robin_scheduler_free(RoundRobinScheduler *scheduler);
/** The same, without poco's typo. */
void round_robin_scheduler_free(RoundRobinScheduler *scheduler);

/** Puts `coro` into a free slot: RES_OK, or RES_NO_MEM if none is free. */
Result round_robin_scheduler_add_coro(RoundRobinScheduler *scheduler, Coro *coro);

/** Frees the slot of `coro` (a finished or not started one). */
void round_robin_scheduler_remove_coro(RoundRobinScheduler *scheduler, Coro const *coro);

#ifdef __cplusplus
}
#endif

#endif /* POCO_SCHEDULERS_ROUND_ROBIN_H */
