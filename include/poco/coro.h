/* poco-compatible API (cothread): coroutines.
 *
 * A Coro runs a function on its own stack, switched with cothread's raw
 * contexts (cot_context_switch: callee-saved registers only, no syscall), and
 * is scheduled by a poco scheduler (schedulers/round_robin.h). The struct is
 * public so that programs can allocate it statically (`Coro c = {0};`); the
 * fields after `yield_signal` are private. */
#ifndef POCO_CORO_H
#define POCO_CORO_H

#include <poco/platform.h>
#include <poco/result.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Which sink ended a wait: the primitive (primary) or the timeout. */
enum event_sink_slot {
    EVENT_SINK_SLOT_PRIMARY = 0,
    EVENT_SINK_SLOT_TIMEOUT,
    EVENT_SINK_SLOT_COUNT,
};

typedef enum coro_state {
    CORO_STATE_READY = 0,    /**< waiting for its turn */
    CORO_STATE_RUNNING = 1,  /**< the current coroutine */
    CORO_STATE_BLOCKED = 2,  /**< waiting on a primitive, a delay or a join */
    CORO_STATE_FINISHED = 3, /**< its function returned */
} CoroState;

/** What a coroutine tells its scheduler when it yields. */
typedef enum coro_signal {
    CORO_SIG_NOTIFY = 0,          /**< yielded after waking others: ready again */
    CORO_SIG_WAIT = 1,            /**< blocked until woken or timed out */
    CORO_SIG_NOTIFY_AND_WAIT = 2, /**< both */
    CORO_SIG_NOTIFY_AND_DONE = 3, /**< finished */
} CoroSignal;

/** An event a coroutine announces (raw API, see coro_yield_with_event). */
typedef struct coro_event_source {
    int type;
    union {
        void *subject;
    } params;
} CoroEventSource;

struct coro;

/** What coroutines wait on: every primitive embeds one. Private. */
typedef struct poco_subject {
    struct coro *head, *tail;           /* waiting coroutines, in arrival order */
    void *scheduler;                    /* of the waiters, for _from_isr wakeups */
    struct poco_subject *isr_next;      /* in the scheduler's list of ISR wakeups */
    uint32_t isr_queued;                /* on that list already */
    uint32_t lock;                      /* try-lock shared with _from_isr forms */
} PocoSubject;

typedef struct coro Coro;

/** A coroutine's function. */
typedef void (*CoroEntrypoint)(void *context);

struct coro {
    CoroEntrypoint entrypoint;
    void *context;
    PlatformStackElement *stack;
    /** Stack length in bytes. */
    size_t stack_size;
    /** After a wait: EVENT_SINK_SLOT_PRIMARY or EVENT_SINK_SLOT_TIMEOUT. */
    size_t triggered_event_sink_slot;
    CoroState coro_state;
    CoroSignal yield_signal;

    /* Private. */
    void *ctx_, *caller_ctx_;             /* cot_context of the coroutine, of its resumer */
    void *fiber_, *caller_fiber_;         /* ThreadSanitizer fibers, when under TSan */
    void *scheduler_;                     /* RoundRobinScheduler running it */
    struct coro *wait_next_, *wait_prev_; /* in waiting_on_'s list */
    PocoSubject *waiting_on_;
    int64_t deadline_;                    /* ns of CLOCK_MONOTONIC, when in the timer heap */
    size_t heap_index_;                   /* in the timer heap, + 1 (0: not there) */
    size_t slot_;                         /* in the scheduler's task list */
    PocoSubject joiners_;                 /* coroutines in coro_join on it */
    uint32_t flags_;
};

/** A coroutine on the caller's stack of `stack_count` elements (at least
 * MIN_STACK_SIZE); NULL for bad arguments. */
Coro *coro_create_static(Coro *coro, CoroEntrypoint entrypoint, void *context,
                         PlatformStackElement *stack, size_t stack_count);

/** Forgets a static coroutine (its memory stays the caller's). */
void coro_destroy_static(Coro *coro);

/** A coroutine on a new stack of `stack_count` elements (raised to
 * MIN_STACK_SIZE), mapped with a guard page; NULL if out of memory. */
Coro *coro_create(CoroEntrypoint entrypoint, void *context, size_t stack_count);

/** Frees a coroutine from coro_create (NULL is ignored). */
void coro_free(Coro *coro);

/** Yields: runs again in its next round-robin turn. */
void coro_yield(void);

/** Sleeps at least `duration_ms` ms (0: one tick). */
void coro_yield_delay(int64_t duration_ms);

/** Raw API: yields with CORO_SIG_NOTIFY (the primitives wake their own
 * waiters; the event itself is not broadcast). */
void coro_yield_with_event(CoroEventSource const *event);

/** Raw API: yields with `signal`; CORO_SIG_WAIT and CORO_SIG_NOTIFY_AND_WAIT
 * block until coro_notify or coro_wake_ (not needed by the primitives). */
void coro_yield_with_signal(CoroSignal signal);

/** Raw API: makes a blocked coroutine ready; returns true if it was blocked.
 * `event` is not inspected. */
bool coro_notify(Coro *coro, CoroEventSource const *event);

/** Raw API: runs `coro` until it yields, outside any scheduler; returns the
 * signal it yielded with (CORO_SIG_NOTIFY_AND_DONE when it finished). */
CoroSignal coro_resume(Coro *coro);

/** Waits until `coro` finished (at once if it has). */
void coro_join(Coro *coro);

#ifdef __cplusplus
}
#endif

#endif /* POCO_CORO_H */
