/* poco-compatible API (cothread): event flags, 32 bits set by producers
 * (coroutines, other threads, signal handlers) and waited on by coroutines. */
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

#define EVENT_FLAGS_MASK_ALL (UINT32_MAX)
#define EVENT_FLAGS_MASK_NONE (0)

typedef uint32_t Flags;

typedef struct event {
    Flags flags;
    PocoSubject subject_; /* private */
} Event;

Event *event_create_static(Event *event, Flags initial);
Event *event_create(Flags initial);
void event_free(Event *event);

/** Sets flags, wakes the event's waiters and yields (CORO_SIG_NOTIFY). */
void event_set(Event *event, Flags mask);
/** Sets flags and wakes the waiters, without yielding. */
Result event_set_no_wait(Event *event, Flags mask);
/** From another thread or a signal handler: RES_OK or RES_NOTIFY_FAILED. */
Result event_set_from_isr(Event *event, Flags mask);

/** Waits until any (or, with wait_for_all, all) of `mask` is set, or for
 * `timeout` ticks; returns the flags of `mask` that ended the wait (0 on
 * timeout) and clears `clear_mask` of them. */
Flags event_get(Event *event, Flags mask, Flags clear_mask, bool wait_for_all,
                PlatformTick timeout);
/** The flags of `mask` set now; clears `clear_mask` of them if any. */
Flags event_get_no_wait(Event *event, Flags mask, Flags clear_mask);
Flags event_get_from_isr(Event *event, Flags mask, Flags clear_mask);

#ifdef __cplusplus
}
#endif

#endif /* POCO_EVENT_H */
