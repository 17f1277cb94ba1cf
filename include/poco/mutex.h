/* poco-compatible API (cothread): a mutex owned by one coroutine. No
 * _from_isr forms: a mutex is a coroutine primitive (as in poco). */
#ifndef POCO_MUTEX_H
#define POCO_MUTEX_H

#include <poco/coro.h>
#include <poco/platform.h>
#include <poco/result.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The mutex's result codes. */
enum res_codes_mutex {
    /** Released by a coroutine that does not own it. */
    RES_MUTEX_NOT_OWNER = RES_CODE(RES_GROUP_MUTEX, 0),
    /** Owned by another coroutine (mutex_acquire_no_wait). */
    RES_MUTEX_OCCUPIED = RES_CODE(RES_GROUP_MUTEX, 1),
};

/** A mutex: its owner (poco's field; NULL when free), then private fields. */
typedef struct mutex {
    Coro *owner;          /**< the coroutine holding it, NULL if free */
    PocoSubject subject_; /* private */
} Mutex;

/** Makes a free mutex in the caller's memory; returns `mutex`. */
Mutex *mutex_create_static(Mutex *mutex);

/** Makes a free mutex; NULL if out of memory. */
Mutex *mutex_create(void);

/** Frees a mutex of mutex_create (NULL is ignored). */
void mutex_free(Mutex *mutex);

/** In a coroutine: takes the mutex, waiting at most `timeout` ticks while
 * another coroutine holds it. RES_OK (also when the caller holds it
 * already) or RES_TIMEOUT. */
Result mutex_acquire(Mutex *mutex, PlatformTick timeout);

/** Takes the mutex if it is free (or the caller's already): RES_OK or
 * RES_MUTEX_OCCUPIED; never yields. */
Result mutex_acquire_no_wait(Mutex *mutex);

/** Frees the mutex, wakes its waiters and yields: RES_OK, also for a free
 * mutex (idempotent, as poco documents); RES_MUTEX_NOT_OWNER, without
 * yielding, when another coroutine holds it. */
Result mutex_release(Mutex *mutex);

#ifdef __cplusplus
}
#endif

#endif /* POCO_MUTEX_H */
