/* Event flags. The flags word is changed atomically, since _from_isr forms
 * set and clear it from other threads and signal handlers. */
#include "internal.h"

/* seq_cst, which poco_bind and poco_isr_wake rely on (see wait.c, isr.c). */
#define ACQ __ATOMIC_SEQ_CST

Event *event_create_static(Event *event, Flags initial) {
    if (event == NULL) {
        return NULL;
    }
    *event = (Event){.flags = initial};
    return event;
}

Event *event_create(Flags initial) {
    Event *event = malloc(sizeof *event);
    return event != NULL ? event_create_static(event, initial) : NULL;
}

void event_free(Event *event) { free(event); }

Result event_set_no_wait(Event *event, Flags mask) {
    if (event == NULL) {
        return RES_INVALID_VALUE;
    }
    __atomic_fetch_or(&event->flags, mask, ACQ);
    poco_wake_all(&event->subject_);
    return RES_OK;
}

void event_set(Event *event, Flags mask) {
    if (event_set_no_wait(event, mask) == RES_OK) {
        poco_notify_yield();
    }
}

Result event_set_from_isr(Event *event, Flags mask) {
    if (event == NULL) {
        return RES_INVALID_VALUE;
    }
    __atomic_fetch_or(&event->flags, mask, ACQ);
    return poco_isr_wake(&event->subject_);
}

/* Takes the flags of `mask` if they end a wait, clearing `clear_mask` of them. */
static Flags take(Event *event, Flags mask, Flags clear_mask, bool all) {
    Flags cur = __atomic_load_n(&event->flags, ACQ);
    for (;;) {
        Flags got = cur & mask;
        if (got == 0 || (all && got != mask)) {
            return 0;
        }
        if (__atomic_compare_exchange_n(&event->flags, &cur, cur & ~(clear_mask & got), false,
                                        ACQ, ACQ)) {
            return got;
        }
    }
}

Flags event_get(Event *event, Flags mask, Flags clear_mask, bool wait_for_all,
                PlatformTick timeout) {
    if (event == NULL || mask == 0) {
        return 0;
    }
    int64_t deadline = poco_deadline(timeout);
    poco_bind(&event->subject_);
    for (;;) {
        Flags got = take(event, mask, clear_mask, wait_for_all);
        if (got != 0 || poco_current() == NULL) {
            return got;
        }
        if (!poco_wait(&event->subject_, deadline)) {
            return take(event, mask, clear_mask, wait_for_all);
        }
    }
}

Flags event_get_no_wait(Event *event, Flags mask, Flags clear_mask) {
    return event != NULL ? take(event, mask, clear_mask, false) : 0;
}

Flags event_get_from_isr(Event *event, Flags mask, Flags clear_mask) {
    return event_get_no_wait(event, mask, clear_mask);
}
