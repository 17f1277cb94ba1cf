/* poco-compatible API (cothread): what coroutines and their scheduler tell
 * each other (poco's intra-coroutine types).
 *
 * A coroutine yields with a signal (CoroSignal). Before it waits it fills its
 * event sinks (Coro.event_sinks: what would wake it); when it wakes others it
 * announces an event source (Coro.event_source, or scheduler_notify). An
 * event source wakes the blocked coroutines with a matching sink
 * (coro_notify). The primitives of cothread's poco layer keep their own
 * waiter lists and wake those directly, but they fill the same sinks and
 * sources, so the raw API (poco/coro_raw.h) and schedulers of your own see
 * what poco's would. */
#ifndef POCO_INTRACORO_H
#define POCO_INTRACORO_H

#include <poco/platform.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a coroutine tells its scheduler when it yields (poco's values). */
typedef enum coro_signal {
    /** Blocked: resume it only once a sink of it matched (coro_notify). */
    CORO_SIG_WAIT = 0,
    /** A plain yield: ready again; its event_source is announced first. */
    CORO_SIG_NOTIFY,
    /** Announces its event_source, then blocks as with CORO_SIG_WAIT. */
    CORO_SIG_NOTIFY_AND_WAIT,
    /** Finished (announces its event_source); never resumed again. */
    CORO_SIG_NOTIFY_AND_DONE,
} CoroSignal;

/** What a sink waits for. */
typedef enum coro_event_sink_type {
    /** Unused sink: matches nothing. */
    CORO_EVTSINK_NONE = 0,
    /** A time limit: params.ticks_remaining ticks (PLATFORM_TICKS_FOREVER:
     * none); ends the wait from its slot when the time has passed. */
    CORO_EVTSINK_DELAY,
    /** Room in the queue params.subject (woken by CORO_EVTSRC_QUEUE_GET). */
    CORO_EVTSINK_QUEUE_NOT_FULL,
    /** An item in the queue params.subject (woken by CORO_EVTSRC_QUEUE_PUT). */
    CORO_EVTSINK_QUEUE_NOT_EMPTY,
    /** Flags of the event params.subject (woken by CORO_EVTSRC_EVENT_SET). */
    CORO_EVTSINK_EVENT_GET,
    /** A slot of the semaphore params.subject (CORO_EVTSRC_SEMAPHORE_RELEASE). */
    CORO_EVTSINK_SEMAPHORE_ACQUIRE,
    /** The mutex params.subject released (CORO_EVTSRC_MUTEX_RELEASE). */
    CORO_EVTSINK_MUTEX_ACQUIRE,
    /** The coroutine params.subject finished (CORO_EVTSRC_CORO_FINISHED). */
    CORO_EVTSINK_WAIT_FINISH,
    /** Room in the stream params.subject (CORO_EVTSRC_STREAM_RECV). */
    CORO_EVTSINK_STREAM_NOT_FULL,
    /** Bytes in the stream params.subject (CORO_EVTSRC_STREAM_SEND). */
    CORO_EVTSINK_STREAM_NOT_EMPTY,
} CoroEventSinkType;

/** One thing a blocked coroutine waits for. */
typedef struct coro_event_sink {
    /** What it waits for. */
    CoroEventSinkType type;
    /** Its parameter: the time left (CORO_EVTSINK_DELAY) or the object. */
    union {
        PlatformTick ticks_remaining;
        void *subject;
    } params;
} CoroEventSink;

/** What happened. */
typedef enum coro_event_source_type {
    /** Nothing (a plain yield). */
    CORO_EVTSRC_NOOP = 0,
    /** params.elapsed_ticks ticks passed (counts down CORO_EVTSINK_DELAY
     * sinks; cothread's scheduler keeps its own absolute deadlines). */
    CORO_EVTSRC_ELAPSED,
    /** An item was put into the queue params.subject. */
    CORO_EVTSRC_QUEUE_PUT,
    /** An item was taken from the queue params.subject. */
    CORO_EVTSRC_QUEUE_GET,
    /** Flags of the event params.subject were set. */
    CORO_EVTSRC_EVENT_SET,
    /** The semaphore params.subject was released. */
    CORO_EVTSRC_SEMAPHORE_RELEASE,
    /** The mutex params.subject was released. */
    CORO_EVTSRC_MUTEX_RELEASE,
    /** The coroutine params.subject finished. */
    CORO_EVTSRC_CORO_FINISHED,
    /** Bytes were taken from the stream params.subject. */
    CORO_EVTSRC_STREAM_RECV,
    /** Bytes were put into the stream params.subject. */
    CORO_EVTSRC_STREAM_SEND,
} CoroEventSourceType;

/** An event: what happened, and to what (or how much time passed). */
typedef struct coro_event_source {
    /** What happened. */
    CoroEventSourceType type;
    /** Its parameter: the ticks (CORO_EVTSRC_ELAPSED) or the object. */
    union {
        PlatformTick elapsed_ticks;
        void *subject;
    } params;
} CoroEventSource;

#ifdef __cplusplus
}
#endif

#endif /* POCO_INTRACORO_H */
