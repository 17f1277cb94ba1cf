/* poco's context: the scheduler the library works for. poco keeps one
 * process-wide; here the scheduler running on the calling thread comes
 * first, so that schedulers on several threads each see their own. */
#include "internal.h"

/* Set by context_set_scheduler, scheduler_run and scheduler_start; read from
 * any thread and from signal handlers (the _from_isr forms). */
static Scheduler *assigned;

Scheduler *context_get_scheduler(void) {
    RoundRobinScheduler *s = poco_current_scheduler();
    return s != NULL ? &s->scheduler : __atomic_load_n(&assigned, __ATOMIC_ACQUIRE);
}

void context_set_scheduler(Scheduler *scheduler) {
    __atomic_store_n(&assigned, scheduler, __ATOMIC_RELEASE);
}

void poco_context_forget(Scheduler *s) {
    Scheduler *expected = s;
    __atomic_compare_exchange_n(&assigned, &expected, NULL, false, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
}
