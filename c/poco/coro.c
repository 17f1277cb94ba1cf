/* poco coroutines on cothread's raw contexts: a stack (mapped with a guard
 * page, or the caller's) and a cot_context switched to and from. */
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

/* The first function on a coroutine's stack; it never returns. */
static void trampoline(void *arg) {
    Coro *coro = arg;
    coro->entrypoint(coro->context);
    for (;;) {
        poco_switch_out(coro, CORO_SIG_NOTIFY_AND_DONE);
    }
}

static bool make_context(Coro *coro) {
    coro->ctx_ = cot_context_make(coro->stack, coro->stack_size, trampoline);
    return coro->ctx_ != NULL;
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
    cot_context_switch((cot_context *)&coro->caller_ctx_, (cot_context)coro->ctx_, coro);
    tls_current = outer;
    return coro->yield_signal;
}

/* From the running coroutine straight into `to`, which then switches out
 * to the scheduler `from` came from. */
static void switch_direct(Coro *from, Coro *to) {
    /* `to` will switch out to where `from` would have: the scheduler. */
    to->caller_ctx_ = from->caller_ctx_;
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
    cot_context_switch_peer((cot_context *)&from->ctx_, (cot_context)to->ctx_, to);
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
    cot_context_switch((cot_context *)&coro->ctx_, (cot_context)coro->caller_ctx_, NULL);
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
    coro->context = context;
    coro->stack = stack;
    coro->stack_size = stack_count * sizeof(PlatformStackElement);
    coro->coro_state = CORO_STATE_READY;
    return make_context(coro) ? coro : NULL;
}

void coro_destroy_static(Coro *coro) {
    if (coro != NULL) {
        poco_coro_retire(coro);
        coro->ctx_ = NULL;
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

void coro_yield(void) { coro_yield_with_signal(CORO_SIG_NOTIFY); }

void coro_yield_delay(int64_t duration_ms) {
    /* The deadline is absolute: waking early (never happens) would not
     * shorten the delay, and elapsed time is counted once. */
    int64_t deadline = poco_deadline(duration_ms < 0 ? 0 : duration_ms);
    while (poco_now_ns() < deadline) {
        if (poco_current() == NULL) {
            return;
        }
        poco_wait(NULL, deadline);
    }
}

void coro_yield_with_event(CoroEventSource const *event) {
    (void)event;
    coro_yield_with_signal(CORO_SIG_NOTIFY);
}

void coro_yield_with_signal(CoroSignal signal) {
    Coro *coro = poco_current();
    if (coro == NULL) {
        return;
    }
    if (signal == CORO_SIG_WAIT || signal == CORO_SIG_NOTIFY_AND_WAIT) {
        poco_wait(NULL, POCO_NEVER);
        return;
    }
    poco_switch_out(coro, signal == CORO_SIG_NOTIFY_AND_DONE ? CORO_SIG_NOTIFY : signal);
}

bool coro_notify(Coro *coro, CoroEventSource const *event) {
    (void)event;
    if (coro == NULL || coro->coro_state != CORO_STATE_BLOCKED) {
        return false;
    }
    if (coro->waiting_on_ != NULL) {
        /* Detach it from its subject, then wake it as the subject would. */
        PocoSubject one = {0};
        PocoSubject *from = coro->waiting_on_;
        if (coro->wait_prev_) coro->wait_prev_->wait_next_ = coro->wait_next_;
        else from->head = coro->wait_next_;
        if (coro->wait_next_) coro->wait_next_->wait_prev_ = coro->wait_prev_;
        else from->tail = coro->wait_prev_;
        coro->wait_next_ = coro->wait_prev_ = NULL;
        one.head = one.tail = coro;
        coro->waiting_on_ = &one;
        poco_wake_all(&one);
        return true;
    }
    PocoSubject one = {.head = coro, .tail = coro};
    coro->waiting_on_ = &one;
    poco_wake_all(&one);
    return true;
}

CoroSignal coro_resume(Coro *coro) {
    if (coro == NULL || coro->coro_state == CORO_STATE_FINISHED || coro->ctx_ == NULL) {
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

void coro_join(Coro *coro) {
    if (coro == NULL || coro == poco_current()) {
        return;
    }
    while (coro->coro_state != CORO_STATE_FINISHED && poco_current() != NULL) {
        poco_wait(&coro->joiners_, POCO_NEVER);
    }
}
