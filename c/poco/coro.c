/* poco coroutines on cothread's raw contexts: a stack (mapped with a guard
 * page, or the caller's) and a cot_context switched to and from (kept in the
 * coroutine's resume_context; its resumer's in suspend_context). */
#define _GNU_SOURCE
#include "internal.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ThreadSanitizer fibers and ASan's unpoisoning, present only when the
 * program runs under that sanitizer (weak: NULL otherwise). Each coroutine
 * gets a TSan fiber so that TSan follows the stack switches. */
void *__tsan_get_current_fiber(void) __attribute__((weak));
void *__tsan_create_fiber(unsigned flags) __attribute__((weak));
void __tsan_destroy_fiber(void *fiber) __attribute__((weak));
void __tsan_switch_to_fiber(void *fiber, unsigned flags) __attribute__((weak));
void __asan_unpoison_memory_region(void const volatile *addr, size_t size)
    __attribute__((weak));

/* initial-exec: no __tls_get_addr call per switch (8 bytes of static TLS). */
static _Thread_local Coro *tls_current __attribute__((tls_model("initial-exec")));

Coro *poco_current(void) { return tls_current; }

Coro *context_get_coro(void) { return tls_current; }

/* The first function on a coroutine's stack; it never returns. */
static void trampoline(void *arg) {
    Coro *coro = arg;
    coro->entrypoint(coro->context_);
    coro->event_source.type = CORO_EVTSRC_CORO_FINISHED;
    coro->event_source.params.subject = coro;
    for (;;) {
        poco_switch_out(coro, CORO_SIG_NOTIFY_AND_DONE);
    }
}

static bool make_context(Coro *coro) {
    coro->resume_context.ctx_ = cot_context_make(coro->stack, coro->stack_size, trampoline);
    return coro->resume_context.ctx_ != NULL;
}

CoroSignal poco_switch_in(Coro *coro) {
    Coro *outer = tls_current;
    tls_current = coro;
    if (__tsan_switch_to_fiber != NULL) {
        coro->caller_fiber_ = __tsan_get_current_fiber();
        if (coro->fiber_ == NULL) {
            coro->fiber_ = __tsan_create_fiber(0);
        }
        __tsan_switch_to_fiber(coro->fiber_, 0);
    }
    cot_context_switch((cot_context *)&coro->suspend_context.ctx_,
                       (cot_context)coro->resume_context.ctx_, coro);
    tls_current = outer;
    return coro->yield_signal;
}

/* From the running coroutine straight into `to`, which then switches out
 * to the scheduler `from` came from. */
static void switch_direct(Coro *from, Coro *to) {
    /* `to` will switch out to where `from` would have: the scheduler. */
    to->suspend_context.ctx_ = from->suspend_context.ctx_;
    tls_current = to;
    if (__tsan_switch_to_fiber != NULL) {
        to->caller_fiber_ = from->caller_fiber_;
        if (to->fiber_ == NULL) {
            to->fiber_ = __tsan_create_fiber(0);
        }
        __tsan_switch_to_fiber(to->fiber_, 0);
    }
    /* Peers: every coroutine handing off suspends at this very call, so the
     * peer switch's `ret` lands where the return predictor expects. */
    cot_context_switch_peer((cot_context *)&from->resume_context.ctx_,
                            (cot_context)to->resume_context.ctx_, to);
}

void poco_switch_out(Coro *coro, CoroSignal signal) {
    Coro *next = signal == CORO_SIG_NOTIFY ? poco_rr_yield_next(coro) : NULL;
    if (next != NULL) {
        if (next != coro) {
            switch_direct(coro, next);
        }
        return;
    }
    coro->yield_signal = signal;
    if (__tsan_switch_to_fiber != NULL) {
        __tsan_switch_to_fiber(coro->caller_fiber_, 0);
    }
    cot_context_switch((cot_context *)&coro->resume_context.ctx_,
                       (cot_context)coro->suspend_context.ctx_, NULL);
}

void poco_coro_retire(Coro *coro) {
    if (coro->fiber_ != NULL && __tsan_destroy_fiber != NULL) {
        __tsan_destroy_fiber(coro->fiber_);
    }
    coro->fiber_ = NULL;
}

Coro *coro_create_static(Coro *coro, CoroEntrypoint entrypoint, void *context,
                         PlatformStackElement *stack, size_t stack_count) {
    if (coro == NULL || entrypoint == NULL || stack == NULL || stack_count < MIN_STACK_SIZE) {
        return NULL;
    }
    memset(coro, 0, sizeof *coro);
    coro->entrypoint = entrypoint;
    coro->context_ = context;
    coro->stack = stack;
    coro->stack_size = stack_count * sizeof(PlatformStackElement);
    coro->coro_state = CORO_STATE_READY;
    coro->joiners_.owner = coro;
    return make_context(coro) ? coro : NULL;
}

void coro_destroy_static(Coro *coro) {
    if (coro != NULL) {
        RoundRobinScheduler *s = coro->scheduler_;
        if (s != NULL) {
            round_robin_scheduler_remove_coro(s, coro);
        }
        poco_coro_retire(coro);
        coro->resume_context.ctx_ = NULL;
        coro->suspend_context.ctx_ = NULL;
    }
}

Coro *coro_create(CoroEntrypoint entrypoint, void *context, size_t stack_count) {
    if (entrypoint == NULL) {
        return NULL;
    }
    if (stack_count < MIN_STACK_SIZE) {
        stack_count = MIN_STACK_SIZE;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = (stack_count * sizeof(PlatformStackElement) + page - 1) / page * page;
    Coro *coro = malloc(sizeof *coro);
    if (coro == NULL) {
        return NULL;
    }
    /* One guard page below the stack: an overflow faults. */
    uint8_t *map = mmap(NULL, bytes + page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (map == MAP_FAILED) {
        free(coro);
        return NULL;
    }
    if (mprotect(map, page, PROT_NONE) != 0 ||
        coro_create_static(coro, entrypoint, context, (PlatformStackElement *)(map + page),
                           bytes / sizeof(PlatformStackElement)) == NULL) {
        munmap(map, bytes + page);
        free(coro);
        return NULL;
    }
    coro->flags_ = POCO_CORO_MAPPED | POCO_CORO_CREATED;
    return coro;
}

void coro_free(Coro *coro) {
    if (coro == NULL) {
        return;
    }
    RoundRobinScheduler *s = coro->scheduler_;
    if (s != NULL) {
        /* Freed while waiting (poco leaves this undefined): no dangling
         * pointer stays in a primitive, the timer heap or the slot list. */
        round_robin_scheduler_remove_coro(s, coro);
    }
    poco_coro_retire(coro);
    if (coro->flags_ & POCO_CORO_MAPPED) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        uint8_t *map = (uint8_t *)coro->stack - page;
        /* Frames abandoned on the stack may leave ASan poison behind. */
        if (__asan_unpoison_memory_region != NULL) {
            __asan_unpoison_memory_region(coro->stack, coro->stack_size);
        }
        munmap(map, coro->stack_size + page);
    }
    if (coro->flags_ & POCO_CORO_CREATED) {
        free(coro);
    }
}

void coro_yield(void) {
    Coro *coro = poco_current();
    if (coro != NULL) {
        coro->event_source.type = CORO_EVTSRC_NOOP;
        poco_switch_out(coro, CORO_SIG_NOTIFY);
    }
}

void coro_yield_delay(int64_t duration_ms) {
    /* The deadline is absolute: a wakeup before it (a raw event) does not
     * end the delay, and elapsed time is counted once. */
    int64_t deadline = poco_deadline(duration_ms < 0 ? 0 : duration_ms);
    while (poco_now_ns() < deadline) {
        if (poco_current() == NULL) {
            return;
        }
        poco_wait(NULL, deadline, CORO_EVTSINK_NONE);
    }
}

/* The round-robin scheduler running `coro` right now, if any. */
static RoundRobinScheduler *running_under(Coro *coro) {
    RoundRobinScheduler *s = coro->scheduler_;
    return s != NULL && s == poco_current_scheduler() ? s : NULL;
}

void coro_yield_with_event(CoroEventSource const *event) {
    Coro *coro = poco_current();
    if (coro == NULL) {
        return;
    }
    if (event != NULL) {
        coro->event_source = *event;
    } else {
        coro->event_source.type = CORO_EVTSRC_NOOP;
    }
    coro_yield_with_signal(CORO_SIG_NOTIFY);
}

void coro_yield_with_signal(CoroSignal signal) {
    Coro *coro = poco_current();
    if (coro == NULL) {
        return;
    }
    RoundRobinScheduler *s = running_under(coro);
    if (s == NULL) {
        /* coro_resume by hand, or a scheduler of the user's: it routes. */
        poco_switch_out(coro, signal);
        return;
    }
    bool announce = signal != CORO_SIG_WAIT && coro->event_source.type != CORO_EVTSRC_NOOP;
    switch (signal) {
    case CORO_SIG_WAIT:
    case CORO_SIG_NOTIFY_AND_WAIT:
        /* Blocked before the broadcast, as in poco (its own event may wake
         * it). */
        poco_raw_wait(coro, s, announce);
        return;
    case CORO_SIG_NOTIFY:
        if (announce) {
            poco_offer_all(s, &coro->event_source);
        }
        poco_switch_out(coro, CORO_SIG_NOTIFY);
        return;
    default:
        if (announce) {
            poco_offer_all(s, &coro->event_source);
        }
        /* Finished: the scheduler never resumes it. */
        for (;;) {
            poco_switch_out(coro, CORO_SIG_NOTIFY_AND_DONE);
        }
    }
}

CoroSignal coro_resume(Coro *coro) {
    if (coro == NULL || coro->coro_state == CORO_STATE_FINISHED ||
        coro->resume_context.ctx_ == NULL) {
        return CORO_SIG_NOTIFY_AND_DONE;
    }
    coro->coro_state = CORO_STATE_RUNNING;
    CoroSignal signal = poco_switch_in(coro);
    coro->coro_state = signal == CORO_SIG_NOTIFY_AND_DONE ? CORO_STATE_FINISHED
                       : signal == CORO_SIG_NOTIFY        ? CORO_STATE_READY
                                                          : CORO_STATE_BLOCKED;
    if (coro->coro_state == CORO_STATE_FINISHED) {
        poco_coro_retire(coro);
    }
    return signal;
}

bool coro_notify(Coro *coro, CoroEventSource const *event) {
    if (coro == NULL || event == NULL || coro->coro_state != CORO_STATE_BLOCKED) {
        return false;
    }
    return poco_offer(coro, event);
}

void coro_join(Coro *coro) {
    Coro *me = poco_current();
    if (coro == NULL || coro == me || me == NULL) {
        return;
    }
    if (coro->coro_state == CORO_STATE_FINISHED) {
        coro_yield(); /* as poco */
        return;
    }
    while (coro->coro_state != CORO_STATE_FINISHED) {
        poco_wait(&coro->joiners_, POCO_NEVER, CORO_EVTSINK_WAIT_FINISH);
    }
}
