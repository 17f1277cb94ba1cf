/* poco-compatible API (cothread): event flags, 32 bits set by producers
 * (coroutines, other threads, signal handlers) and waited on by a coroutine,
 * which clears them. */
#ifndef POCO_EVENT_H
#define POCO_EVENT_H

#include <poco/coro.h>
#include <poco/platform.h>
#include <poco/result.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Every flag. */
#define EVENT_FLAGS_MASK_ALL (UINT32_MAX)
/** No flag. */
#define EVENT_FLAGS_MASK_NONE (0)

/** The 32 flags of an event. */
typedef uint32_t Flags;

/** An event: its flags (poco's field), then private ones. */
typedef struct event {
    Flags flags;          /**< the flags set */
    PocoSubject subject_; /* private */
} Event;

/** Makes an event in the caller's memory with `initial` set; returns `event`
 * (NULL for NULL). */
Event *event_create_static(Event *event, Flags initial);

/** Makes an event with `initial` set; NULL if out of memory. */
Event *event_create(Flags initial);

/** Frees an event of event_create (NULL is ignored). */
void event_free(Event *event);

/** Sets the flags of `mask`, wakes the event's waiters, and yields
 * (CORO_SIG_NOTIFY) when called from a coroutine. */
void event_set(Event *event, Flags mask);

/** Sets the flags of `mask` and wakes the waiters, without yielding: RES_OK. */
Result event_set_no_wait(Event *event, Flags mask);

/** From another thread or a signal handler: RES_OK, or RES_NOTIFY_FAILED
 * (set, but the scheduler took too many external events since its last
 * step). */
Result event_set_from_isr(Event *event, Flags mask);

/** In a coroutine: waits until any flag of `mask` (with `wait_for_all`: all
 * of them) is set, at most `timeout` ticks; returns the flags of `mask` that
 * are set then, clearing those of `clear_mask`; 0 on timeout. */
Flags event_get(Event *event, Flags mask, Flags clear_mask, bool wait_for_all,
                PlatformTick timeout);

/** The flags of `mask` set now; if any, clears those of `clear_mask`. */
Flags event_get_no_wait(Event *event, Flags mask, Flags clear_mask);

/** event_get_no_wait, from another thread or a signal handler. */
Flags event_get_from_isr(Event *event, Flags mask, Flags clear_mask);

#ifdef __cplusplus
}
#endif

#endif /* POCO_EVENT_H */
