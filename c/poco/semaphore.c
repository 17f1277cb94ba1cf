/* Counting semaphores; the count changes with compare-and-swap, since
 * _from_isr forms change it from other threads and signal handlers. */
#include "internal.h"

/* seq_cst, which poco_bind and poco_isr_changed rely on (see wait.c, isr.c). */
#define SC __ATOMIC_SEQ_CST

Semaphore *semaphore_create_static(Semaphore *semaphore, size_t slot_count) {
    if (semaphore == NULL || slot_count == 0) {
        return NULL;
    }
    *semaphore = (Semaphore){.slots_remaining = slot_count, .slot_count = slot_count};
    semaphore->subject_.owner = semaphore;
    return semaphore;
}

Semaphore *semaphore_create(size_t slot_count) {
    Semaphore *s = malloc(sizeof *s);
    if (s != NULL && semaphore_create_static(s, slot_count) == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

Semaphore *semaphore_create_binary_static(Semaphore *semaphore) {
    return semaphore_create_static(semaphore, 1);
}

Semaphore *semaphore_create_binary(void) { return semaphore_create(1); }

void semaphore_free(Semaphore *semaphore) { free(semaphore); }

static bool try_acquire(Semaphore *s) {
    size_t cur = __atomic_load_n(&s->slots_remaining, SC);
    while (cur != 0) {
        if (__atomic_compare_exchange_n(&s->slots_remaining, &cur, cur - 1, false, SC, SC)) {
            return true;
        }
    }
    return false;
}

static bool try_release(Semaphore *s) {
    size_t cur = __atomic_load_n(&s->slots_remaining, SC);
    while (cur < s->slot_count) {
        if (__atomic_compare_exchange_n(&s->slots_remaining, &cur, cur + 1, false, SC, SC)) {
            return true;
        }
    }
    return false;
}

Result semaphore_acquire(Semaphore *semaphore, PlatformTick timeout) {
    if (semaphore == NULL) {
        return RES_INVALID_VALUE;
    }
    int64_t deadline = poco_deadline(timeout);
    for (;;) {
        if (try_acquire(semaphore)) {
            return RES_OK;
        }
        if (poco_current() == NULL) {
            return RES_TIMEOUT;
        }
        poco_bind(&semaphore->subject_); /* then look again: see poco_bind */
        if (try_acquire(semaphore)) {
            poco_unbind_idle(&semaphore->subject_);
            return RES_OK;
        }
        if (!poco_wait(&semaphore->subject_, deadline, CORO_EVTSINK_SEMAPHORE_ACQUIRE)) {
            return RES_TIMEOUT; /* as poco, even if a slot came free meanwhile */
        }
    }
}

Result semaphore_acquire_no_wait(Semaphore *semaphore) {
    if (semaphore == NULL) {
        return RES_INVALID_VALUE;
    }
    return try_acquire(semaphore) ? RES_OK : RES_SEMAPHORE_FULL;
}

static Result release(Semaphore *semaphore, bool yield) {
    if (semaphore == NULL) {
        return RES_INVALID_VALUE;
    }
    if (!try_release(semaphore)) {
        return RES_OVERFLOW;
    }
    return poco_changed(&semaphore->subject_, CORO_EVTSRC_SEMAPHORE_RELEASE, yield);
}

Result semaphore_release_no_wait(Semaphore *semaphore) { return release(semaphore, false); }

Result semaphore_release(Semaphore *semaphore) { return release(semaphore, true); }

Result semaphore_acquire_from_isr(Semaphore *semaphore) {
    if (semaphore == NULL) {
        return RES_INVALID_VALUE;
    }
    return try_acquire(semaphore) ? RES_OK : RES_TIMEOUT;
}

Result semaphore_release_from_isr(Semaphore *semaphore) {
    if (semaphore == NULL) {
        return RES_INVALID_VALUE;
    }
    if (!try_release(semaphore)) {
        return RES_OVERFLOW;
    }
    return poco_isr_changed(&semaphore->subject_, CORO_EVTSRC_SEMAPHORE_RELEASE);
}
