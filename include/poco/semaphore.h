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

enum ResultSemaphore {
    /** No slot left (semaphore_acquire_no_wait). */
    RES_SEMAPHORE_FULL = RES_CODE(RES_GROUP_SEMAPHORE, 0),
};

typedef struct semaphore {
    size_t slots_remaining;
    size_t slot_count;
    PocoSubject subject_; /* private */
} Semaphore;

Semaphore *semaphore_create_binary(void);
Semaphore *semaphore_create_binary_static(Semaphore *semaphore);
Semaphore *semaphore_create(size_t slot_count);
Semaphore *semaphore_create_static(Semaphore *semaphore, size_t slot_count);
void semaphore_free(Semaphore *semaphore);

/** Waits for a slot, or `timeout` ticks: RES_OK or RES_TIMEOUT. */
Result semaphore_acquire(Semaphore *semaphore, PlatformTick timeout);
/** RES_OK or RES_SEMAPHORE_FULL, never yields. */
Result semaphore_acquire_no_wait(Semaphore *semaphore);
/** Gives a slot back and yields: RES_OK or RES_OVERFLOW (all slots free). */
Result semaphore_release(Semaphore *semaphore);
/** The same without yielding. */
Result semaphore_release_no_wait(Semaphore *semaphore);
/** From another thread or a signal handler: RES_OK or RES_TIMEOUT. */
Result semaphore_acquire_from_isr(Semaphore *semaphore);
/** RES_OK, RES_OVERFLOW or RES_NOTIFY_FAILED. */
Result semaphore_release_from_isr(Semaphore *semaphore);

#ifdef __cplusplus
}
#endif

#endif /* POCO_SEMAPHORE_H */
