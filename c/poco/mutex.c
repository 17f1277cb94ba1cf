/* A mutex owned by one coroutine. Unlike poco, mutex_acquire_no_wait takes
 * a free mutex (poco tests the owner backwards). */
#include "internal.h"

Mutex *mutex_create_static(Mutex *mutex) {
    if (mutex == NULL) {
        return NULL;
    }
    *mutex = (Mutex){0};
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
        if (poco_current() == NULL || !poco_wait(&mutex->subject_, deadline)) {
            return mutex_acquire_no_wait(mutex) == RES_OK ? RES_OK : RES_TIMEOUT;
        }
    }
}

Result mutex_release(Mutex *mutex) {
    if (mutex == NULL) {
        return RES_INVALID_VALUE;
    }
    if (mutex->owner != poco_current()) {
        return RES_MUTEX_NOT_OWNER;
    }
    mutex->owner = NULL;
    poco_wake_all(&mutex->subject_);
    poco_notify_yield();
    return RES_OK;
}
