/* poco-compatible API (cothread): a mutex owned by one coroutine (no ISR
 * forms: a mutex is a coroutine primitive). */
#ifndef POCO_MUTEX_H
#define POCO_MUTEX_H

#include <poco/coro.h>
#include <poco/platform.h>
#include <poco/result.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ResultMutex {
    /** Released by a coroutine that does not own it. */
    RES_MUTEX_NOT_OWNER = RES_CODE(RES_GROUP_MUTEX, 0),
    /** Owned by another coroutine (mutex_acquire_no_wait). */
    RES_MUTEX_OCCUPIED = RES_CODE(RES_GROUP_MUTEX, 1),
};

typedef struct mutex {
    Coro *owner;
    PocoSubject subject_; /* private */
} Mutex;

Mutex *mutex_create_static(Mutex *mutex);
Mutex *mutex_create(void);
void mutex_free(Mutex *mutex);

/** Waits until free, or `timeout` ticks: RES_OK or RES_TIMEOUT. */
Result mutex_acquire(Mutex *mutex, PlatformTick timeout);
/** RES_OK (free, or owned by the caller already) or RES_MUTEX_OCCUPIED. */
Result mutex_acquire_no_wait(Mutex *mutex);
/** RES_OK (then yields) or RES_MUTEX_NOT_OWNER. */
Result mutex_release(Mutex *mutex);

#ifdef __cplusplus
}
#endif

#endif /* POCO_MUTEX_H */
