/* Event flags. The flags word is changed atomically, since _from_isr forms
 * set and clear it from other threads and signal handlers. */
#include "internal.h"

/* seq_cst, which poco_bind and poco_isr_changed rely on (see wait.c, isr.c). */
#define ACQ __ATOMIC_SEQ_CST

Event *event_create_static(Event *event, Flags initial) {
    if (event == NULL) {
        return NULL;
    }
    *event = (Event){.flags = initial};
    event->subject_.owner = event;
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
    return poco_changed(&event->subject_, CORO_EVTSRC_EVENT_SET, false);
}

void event_set(Event *event, Flags mask) {
    if (event != NULL) {
        __atomic_fetch_or(&event->flags, mask, ACQ);
        poco_changed(&event->subject_, CORO_EVTSRC_EVENT_SET, true);
    }
}

Result event_set_from_isr(Event *event, Flags mask) {
    if (event == NULL) {
        return RES_INVALID_VALUE;
    }
    __atomic_fetch_or(&event->flags, mask, ACQ);
    return poco_isr_changed(&event->subject_, CORO_EVTSRC_EVENT_SET);
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
    for (;;) {
        Flags got = take(event, mask, clear_mask, wait_for_all);
        if (got != 0 || poco_current() == NULL) {
            return got;
        }
        poco_bind(&event->subject_); /* then look again: see poco_bind */
        got = take(event, mask, clear_mask, wait_for_all);
        if (got != 0) {
            poco_unbind_idle(&event->subject_);
            return got;
        }
        if (!poco_wait(&event->subject_, deadline, CORO_EVTSINK_EVENT_GET)) {
            return 0; /* timed out: the flags stay, as in poco */
        }
    }
}

Flags event_get_no_wait(Event *event, Flags mask, Flags clear_mask) {
    return event != NULL ? take(event, mask, clear_mask, false) : 0;
}

Flags event_get_from_isr(Event *event, Flags mask, Flags clear_mask) {
    return event_get_no_wait(event, mask, clear_mask);
}
