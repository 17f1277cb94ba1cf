/* A mutex owned by one coroutine. Unlike poco's code, mutex_acquire_no_wait
 * takes a free mutex (poco's tests the owner backwards), and the owner may
 * acquire again (poco's header says so; its code would wait for itself). */
#include "internal.h"

Mutex *mutex_create_static(Mutex *mutex) {
    if (mutex == NULL) {
        return NULL;
    }
    *mutex = (Mutex){0};
    mutex->subject_.owner = mutex;
    return mutex;
}

Mutex *mutex_create(void) {
    Mutex *m = malloc(sizeof *m);
    return m != NULL ? mutex_create_static(m) : NULL;
}

void mutex_free(Mutex *mutex) { free(mutex); }

Result mutex_acquire_no_wait(Mutex *mutex) {
    if (mutex == NULL) {
        return RES_INVALID_VALUE;
    }
    Coro *me = poco_current();
    if (mutex->owner != NULL && mutex->owner != me) {
        return RES_MUTEX_OCCUPIED;
    }
    mutex->owner = me;
    return RES_OK;
}

Result mutex_acquire(Mutex *mutex, PlatformTick timeout) {
    if (mutex == NULL) {
        return RES_INVALID_VALUE;
    }
    int64_t deadline = poco_deadline(timeout);
    for (;;) {
        if (mutex_acquire_no_wait(mutex) == RES_OK) {
            return RES_OK;
        }
        if (poco_current() == NULL ||
            !poco_wait(&mutex->subject_, deadline, CORO_EVTSINK_MUTEX_ACQUIRE)) {
            return RES_TIMEOUT; /* as poco, even if it became free meanwhile */
        }
    }
}

/* As poco: releasing a free mutex is fine (and yields), another's is not. */
Result mutex_release(Mutex *mutex) {
    if (mutex == NULL) {
        return RES_INVALID_VALUE;
    }
    if (mutex->owner != NULL && mutex->owner != poco_current()) {
        return RES_MUTEX_NOT_OWNER;
    }
    mutex->owner = NULL;
    poco_changed(&mutex->subject_, CORO_EVTSRC_MUTEX_RELEASE, true);
    return RES_OK;
}
