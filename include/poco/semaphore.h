/* poco-compatible API (cothread): counting and binary semaphores. */
#ifndef POCO_SEMAPHORE_H
#define POCO_SEMAPHORE_H

#include <poco/coro.h>
#include <poco/platform.h>
#include <poco/result.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The semaphore's result codes. */
enum res_codes_semaphore {
    /** No slot left (semaphore_acquire_no_wait). */
    RES_SEMAPHORE_FULL = RES_CODE(RES_GROUP_SEMAPHORE, 0),
};

/** A semaphore: poco's two counts, then private fields. */
typedef struct semaphore {
    size_t slots_remaining; /**< slots free now */
    size_t slot_count;      /**< slots in all */
    PocoSubject subject_;   /* private */
} Semaphore;

/** Makes a semaphore of one slot, free; NULL if out of memory. */
Semaphore *semaphore_create_binary(void);

/** The same in the caller's memory; returns `semaphore`. */
Semaphore *semaphore_create_binary_static(Semaphore *semaphore);

/** Makes a semaphore of `slot_count` slots, all free; NULL if out of memory
 * or for 0 slots. */
Semaphore *semaphore_create(size_t slot_count);

/** The same in the caller's memory; returns `semaphore` (NULL for 0 slots). */
Semaphore *semaphore_create_static(Semaphore *semaphore, size_t slot_count);

/** Frees a semaphore of semaphore_create* (NULL is ignored). */
void semaphore_free(Semaphore *semaphore);

/** In a coroutine: takes a slot, waiting for one at most `timeout` ticks:
 * RES_OK or RES_TIMEOUT. */
Result semaphore_acquire(Semaphore *semaphore, PlatformTick timeout);

/** Takes a slot if one is free: RES_OK or RES_SEMAPHORE_FULL; never yields. */
Result semaphore_acquire_no_wait(Semaphore *semaphore);

/** From another thread or a signal handler: RES_OK, or RES_TIMEOUT when no
 * slot is free (poco's code). */
Result semaphore_acquire_from_isr(Semaphore *semaphore);

/** Gives a slot back, wakes the waiters and yields: RES_OK, or RES_OVERFLOW
 * (without yielding) when every slot is free already. */
Result semaphore_release(Semaphore *semaphore);

/** semaphore_release without yielding (cothread's addition). */
Result semaphore_release_no_wait(Semaphore *semaphore);

/** From another thread or a signal handler: RES_OK, RES_OVERFLOW, or
 * RES_NOTIFY_FAILED (released, but the scheduler took too many external
 * events since its last step). */
Result semaphore_release_from_isr(Semaphore *semaphore);

#ifdef __cplusplus
}
#endif

#endif /* POCO_SEMAPHORE_H */
