/* poco-compatible API (cothread): coroutines.
 *
 * A Coro runs a function on its own stack, switched with cothread's raw
 * contexts (cot_context_switch: callee-saved registers only, no syscall), and
 * is scheduled by a poco scheduler (schedulers/round_robin.h). The struct is
 * public so that programs can allocate it statically (`Coro c;`); it has
 * poco's fields, and private ones after them. The raw operations
 * (coro_resume, coro_notify, coro_yield_with_*) are in poco/coro_raw.h. */
#ifndef POCO_CORO_H
#define POCO_CORO_H

#include <poco/intracoro.h>
#include <poco/platform.h>
#include <poco/result.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The slots of Coro.event_sinks: the primitive's, then the time limit's.
 * After a wait, Coro.triggered_event_sink_slot names the one that ended it. */
enum event_sink_slot {
    /** The primitive waited on (or the coroutine joined). */
    EVENT_SINK_SLOT_PRIMARY = 0,
    /** The wait's time limit. */
    EVENT_SINK_SLOT_TIMEOUT,
    /** The number of slots. */
    EVENT_SINK_SLOT_COUNT,
};

/** Where a coroutine is in its life (poco's values). */
typedef enum coro_state {
    CORO_STATE_READY = 0,    /**< waiting for its turn (also before its first) */
    CORO_STATE_RUNNING = 1,  /**< the running coroutine */
    CORO_STATE_BLOCKED = 2,  /**< waiting on a primitive, a delay or a join */
    CORO_STATE_FINISHED = 3, /**< its function returned */
} coro_state_t;

/** cothread's earlier name of coro_state_t, kept. */
typedef coro_state_t CoroState;

typedef struct coro Coro;

/** A coroutine's function; gets the `context` given at creation. */
typedef void (*CoroEntrypoint)(void *context);

/** Private: what coroutines wait on. Every primitive embeds one. */
typedef struct poco_subject {
    struct coro *head, *tail;      /* waiting coroutines, in arrival order */
    void *scheduler;               /* of the waiters, for _from_isr wakeups */
    struct poco_subject *isr_next; /* in the scheduler's list of ISR wakeups */
    uint32_t isr_queued;           /* on that list already */
    uint32_t lock;                 /* try-lock shared with _from_isr forms */
    void *owner;                   /* the primitive (event sources' subject) */
} PocoSubject;

/** A coroutine. Fields up to `yield_signal` are poco's (read them; the
 * layer writes them); the rest is private. */
struct coro {
    /** The function it runs. */
    CoroEntrypoint entrypoint;
    /** Its stack (the caller's, or mapped by coro_create). */
    PlatformStackElement *stack;
    /** The stack's length in bytes, as poco documents it (poco's code stores
     * the count of elements). */
    size_t stack_size;
    /** After a wait: the slot of the sink that ended it, EVENT_SINK_SLOT_PRIMARY
     * or EVENT_SINK_SLOT_TIMEOUT. */
    size_t triggered_event_sink_slot;
    /** The event it announced last (when it yields with CORO_SIG_NOTIFY*). */
    CoroEventSource event_source;
    /** What it waits for while blocked. */
    CoroEventSink event_sinks[EVENT_SINK_SLOT_COUNT];
    /** Whoever resumed it: where it goes when it yields. */
    PlatformContext suspend_context;
    /** The coroutine itself: where coro_resume goes. */
    PlatformContext resume_context;
    /** Where it is in its life; schedulers only read it. */
    coro_state_t coro_state;
    /** The signal it last yielded with. */
    CoroSignal yield_signal;

    /* Private. */
    void *context_;                       /* the entrypoint's argument */
    void *fiber_, *caller_fiber_;         /* ThreadSanitizer fibers, when under TSan */
    void *scheduler_;                     /* RoundRobinScheduler holding it */
    struct coro *wait_next_, *wait_prev_; /* in waiting_on_'s list */
    PocoSubject *waiting_on_;
    int64_t deadline_;                    /* ns of CLOCK_MONOTONIC, when in the timer heap */
    size_t heap_index_;                   /* in the timer heap, + 1 (0: not there) */
    size_t slot_;                         /* in the scheduler's task list */
    PocoSubject joiners_;                 /* coroutines in coro_join on it */
    uint32_t flags_;
};

/** Makes a coroutine on the caller's stack of `stack_count` elements (at
 * least MIN_STACK_SIZE) in the caller's `coro`; returns `coro`, or NULL for
 * bad arguments. Ready to be added to a scheduler. */
Coro *coro_create_static(Coro *coro, CoroEntrypoint entrypoint, void *context,
                         PlatformStackElement *stack, size_t stack_count);

/** Forgets a coroutine of coro_create_static: takes it out of its scheduler
 * and releases its context (the memory stays the caller's). */
void coro_destroy_static(Coro *coro);

/** Makes a coroutine on a new stack of `stack_count` elements (raised to
 * MIN_STACK_SIZE), mapped with a guard page below it; NULL if out of
 * memory. */
Coro *coro_create(CoroEntrypoint entrypoint, void *context, size_t stack_count);

/** Frees a coroutine of coro_create, first taking it out of its scheduler
 * (also while it waits). NULL is ignored. */
void coro_free(Coro *coro);

/** In a coroutine: yields; it runs again in its next round-robin turn. */
void coro_yield(void);

/** In a coroutine: sleeps at least `duration_ms` milliseconds (0 or less:
 * one tick). */
void coro_yield_delay(int64_t duration_ms);

/** In a coroutine: waits until `coro` finished; when it had finished
 * already, yields once instead (as poco). */
void coro_join(Coro *coro);

#ifdef __cplusplus
}
#endif

#endif /* POCO_CORO_H */
