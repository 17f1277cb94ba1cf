/* The round-robin scheduler with poco's pick order: a fixed cyclic list of
 * slots; the next coroutine is the first ready one after the one that ran
 * last, found in a ready bitset (a word at a time, not a coroutine at a
 * time). Timed waits sit in a min-heap; when nothing is ready the scheduler
 * sleeps in a cothread event loop until the next deadline or an ISR wakeup,
 * instead of spinning. */
#define _GNU_SOURCE
#include "internal.h"

#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define RR_OWNED 1u      /* the struct is from round_robin_scheduler_create */
#define RR_OWN_TASKS 2u  /* `tasks` is our copy */
#define RR_OWN_BITSET 4u /* `ready_` is allocated */

/* initial-exec: no __tls_get_addr call per step (8 bytes of static TLS). */
static _Thread_local RoundRobinScheduler *tls_scheduler __attribute__((tls_model("initial-exec")));

RoundRobinScheduler *poco_current_scheduler(void) { return tls_scheduler; }

static void rr_run(Scheduler *scheduler);

RoundRobinScheduler *poco_rr(Scheduler *s) {
    return s != NULL && s->run == rr_run ? (RoundRobinScheduler *)s : NULL;
}

static size_t words(size_t n) { return (n + 63) / 64; }

/* ---- ready bitset ---- */

void poco_rr_make_ready(RoundRobinScheduler *s, Coro *coro) {
    coro->coro_state = CORO_STATE_READY;
    s->ready_[coro->slot_ / 64] |= (uint64_t)1 << (coro->slot_ % 64);
}

static void clear_ready(RoundRobinScheduler *s, size_t slot) {
    s->ready_[slot / 64] &= ~((uint64_t)1 << (slot % 64));
}

/* The first ready slot at or after `from`, cyclically; SIZE_MAX if none. */
static size_t next_ready(RoundRobinScheduler const *s, size_t from) {
    size_t nw = words(s->max_tasks_count), w0 = from / 64, k = from % 64;
    if (nw == 0) {
        return SIZE_MAX;
    }
    uint64_t bits = s->ready_[w0] & (~(uint64_t)0 << k);
    for (size_t i = 1; bits == 0 && i <= nw; ++i) {
        size_t w = w0 + i >= nw ? w0 + i - nw : w0 + i;
        /* Back at the first word: only the bits before `from` are left. */
        bits = i < nw ? s->ready_[w] : s->ready_[w] & (((uint64_t)1 << k) - 1);
        if (bits != 0) {
            return w * 64 + (size_t)__builtin_ctzll(bits);
        }
    }
    return bits != 0 ? w0 * 64 + (size_t)__builtin_ctzll(bits) : SIZE_MAX;
}

/* ---- timer heap (by deadline) ---- */

static void heap_set(RoundRobinScheduler *s, size_t i, Coro *c) {
    s->heap_[i] = c;
    c->heap_index_ = i + 1;
}

static void heap_up(RoundRobinScheduler *s, size_t i) {
    Coro *c = s->heap_[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (s->heap_[p]->deadline_ <= c->deadline_) {
            break;
        }
        heap_set(s, i, s->heap_[p]);
        i = p;
    }
    heap_set(s, i, c);
}

static void heap_down(RoundRobinScheduler *s, size_t i) {
    Coro *c = s->heap_[i];
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        int64_t best = c->deadline_;
        if (l < s->heap_len_ && s->heap_[l]->deadline_ < best) {
            m = l;
            best = s->heap_[l]->deadline_;
        }
        if (l + 1 < s->heap_len_ && s->heap_[l + 1]->deadline_ < best) {
            m = l + 1;
        }
        if (m == i) {
            break;
        }
        heap_set(s, i, s->heap_[m]);
        i = m;
    }
    heap_set(s, i, c);
}

void poco_rr_timer_add(RoundRobinScheduler *s, Coro *coro) {
    heap_set(s, s->heap_len_++, coro);
    heap_up(s, s->heap_len_ - 1);
}

void poco_rr_timer_remove(RoundRobinScheduler *s, Coro *coro) {
    size_t i = coro->heap_index_ - 1;
    coro->heap_index_ = 0;
    Coro *last = s->heap_[--s->heap_len_];
    if (i < s->heap_len_) {
        heap_set(s, i, last);
        heap_up(s, i);
        heap_down(s, last->heap_index_ - 1);
    }
}

/* Elapsed time: every coroutine whose deadline passed times out. */
static void apply_time(RoundRobinScheduler *s) {
    if (s->heap_len_ == 0) {
        return;
    }
    int64_t now = poco_now_ns();
    s->previous_ticks = now / 1000000;
    while (s->heap_len_ > 0 && s->heap_[0]->deadline_ <= now) {
        Coro *c = s->heap_[0];
        poco_rr_timer_remove(s, c);
        poco_wait_expire(c);
        poco_rr_make_ready(s, c);
    }
}

/* External events: first the subjects other threads or signal handlers
 * changed (their waiters wake), then the slots of external_events (their
 * events go to the raw waiters, or to every blocked coroutine). */
static bool isr_pending(RoundRobinScheduler const *s) {
    return __atomic_load_n(&s->isr_head_, __ATOMIC_RELAXED) != NULL ||
           __atomic_load_n(&s->event_queue.count, __ATOMIC_RELAXED) != 0;
}

static void apply_isr(RoundRobinScheduler *s) {
    if (!isr_pending(s)) {
        return;
    }
    PocoSubject *l = __atomic_exchange_n(&s->isr_head_, NULL, __ATOMIC_ACQUIRE);
    while (l != NULL) {
        PocoSubject *next = l->isr_next;
        __atomic_store_n(&l->isr_queued, 0, __ATOMIC_SEQ_CST);
        poco_wake_all(l);
        l = next;
    }
    for (size_t i = 0; i < SCHEDULER_MAX_EXTERNAL_EVENT_COUNT; ++i) {
        uint32_t kind = __atomic_load_n(&s->ext_state_[i], __ATOMIC_SEQ_CST);
        if (kind == POCO_EXT_RAW || kind == POCO_EXT_ALL) {
            CoroEventSource ev = s->external_events[i];
            __atomic_fetch_sub(&s->event_queue.count, 1, __ATOMIC_RELAXED);
            __atomic_store_n(&s->ext_state_[i], POCO_EXT_FREE, __ATOMIC_RELEASE);
            if (kind == POCO_EXT_ALL) {
                poco_offer_all(s, &ev);
            } else if (s->raw_.head != NULL) {
                poco_offer_raw(s, &ev);
            }
        }
    }
}

/* ---- the event loop it sleeps in ---- */

static void on_timer(cot_loop *loop, cot_handle h, void *data) {
    (void)loop, (void)h, (void)data; /* waking the loop is all it is for */
}

static void on_wake_fd(cot_loop *loop, cot_handle h, int events, void *data) {
    (void)loop, (void)h, (void)events;
    RoundRobinScheduler *s = data;
    uint64_t v;
    while (read(s->wake_fd_, &v, sizeof v) == (ssize_t)sizeof v) {
    }
}

/* Makes the event loop the scheduler sleeps in (once). */
static void start(RoundRobinScheduler *s) {
    if (s->loop_ != NULL) {
        return;
    }
    s->previous_ticks = platform_get_monotonic_ticks();
    cot_loop *loop = cot_loop_new();
    if (loop == NULL) {
        return;
    }
    s->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    cot_timer_init(loop, s, &s->timer_);
    if (s->wake_fd_ >= 0 && cot_poll_init(loop, s->wake_fd_, s, &s->poll_) == 0) {
        cot_poll_start(loop, s->poll_, COT_READABLE, on_wake_fd);
    }
    s->loop_ = loop;
}

void scheduler_start(Scheduler *scheduler) {
    RoundRobinScheduler *s = poco_rr(scheduler);
    if (s != NULL) {
        context_set_scheduler(scheduler);
        start(s);
    }
}

/* Nothing is ready: sleep until the earliest deadline or an ISR wakeup. */
static void idle(RoundRobinScheduler *s) {
    if (s->loop_ == NULL) {
        start(s);
        if (s->loop_ == NULL) {
            return;
        }
    }
    cot_loop *loop = s->loop_;
    if (s->heap_len_ > 0) {
        int64_t left = s->heap_[0]->deadline_ - poco_now_ns();
        if (left <= 0) {
            return;
        }
        cot_loop_update_time(loop);
        cot_timer_start(loop, s->timer_, on_timer, (uint64_t)left, 0);
    }
    if (!isr_pending(s)) {
        cot_loop_run(loop, COT_RUN_ONCE);
    }
    cot_timer_stop(loop, s->timer_);
}

/* Takes a coroutine out of everything it may wait in: its subject's list,
 * the timer heap, the ready set (it is being removed or freed). */
void poco_rr_detach(RoundRobinScheduler *s, Coro *c) {
    if (c->waiting_on_ != NULL) {
        poco_wait_expire(c);
        /* Resumed again (under another scheduler), its wait looks again, as
         * after a wakeup: it did not time out. */
        c->triggered_event_sink_slot = EVENT_SINK_SLOT_PRIMARY;
    }
    if (c->heap_index_ != 0) {
        poco_rr_timer_remove(s, c);
    }
    clear_ready(s, c->slot_);
}

/* A yield's fast path: with no timed wait and no ISR wakeup pending, there
 * is nothing to apply between steps, so the running coroutine does the
 * step's bookkeeping itself and switches straight to the returned one (self
 * if it is next itself): one context switch per yield instead of two, none
 * when alone. NULL: go through the scheduler. */
Coro *poco_rr_yield_next(Coro *self) {
    RoundRobinScheduler *s = self->scheduler_;
    if (s == NULL || tls_scheduler != s || s->current_task != self || s->heap_len_ != 0 ||
        isr_pending(s)) {
        return NULL;
    }
    poco_rr_make_ready(s, self);
    size_t slot = next_ready(s, s->next_task_index); /* found: self is ready */
    Coro *next = s->tasks[slot];
    clear_ready(s, slot);
    s->next_task_index = slot + 1 == s->max_tasks_count ? 0 : slot + 1;
    next->coro_state = CORO_STATE_RUNNING;
    s->current_task = next;
    return next;
}

/* ---- steps ---- */

/* One step (scheduler_run_once of ours). */
static bool step(RoundRobinScheduler *s) {
    if (s->finished_tasks >= s->all_tasks) {
        return false;
    }
    apply_isr(s);
    apply_time(s);
    size_t slot = next_ready(s, s->next_task_index);
    if (slot == SIZE_MAX) {
        idle(s);
        return true;
    }
    Coro *coro = s->tasks[slot];
    clear_ready(s, slot);
    s->next_task_index = slot + 1 == s->max_tasks_count ? 0 : slot + 1; /* no division */
    s->current_task = coro;
    coro->coro_state = CORO_STATE_RUNNING;
    RoundRobinScheduler *outer = tls_scheduler;
    tls_scheduler = s;
    poco_switch_in(coro);
    /* Yields may have passed the CPU on directly (poco_rr_yield_next):
     * the one that came back is the current task. */
    coro = s->current_task;
    slot = coro->slot_;
    CoroSignal signal = coro->yield_signal;
    s->current_task = NULL;
    switch (signal) {
    case CORO_SIG_NOTIFY:
        poco_rr_make_ready(s, coro);
        break;
    case CORO_SIG_NOTIFY_AND_DONE: {
        coro->coro_state = CORO_STATE_FINISHED;
        s->finished_tasks++;
        poco_coro_retire(coro);
        /* Its joiners, and raw waiters on it (CORO_EVTSINK_WAIT_FINISH). */
        CoroEventSource done = {.type = CORO_EVTSRC_CORO_FINISHED, .params.subject = coro};
        poco_wake_all(&coro->joiners_);
        if (s->raw_.head != NULL) {
            poco_offer_raw(s, &done);
        }
        break;
    }
    default:
        /* Waiting: unless something woke it already, it stays blocked. */
        if (!(s->ready_[slot / 64] & ((uint64_t)1 << (slot % 64)))) {
            coro->coro_state = CORO_STATE_BLOCKED;
        }
        break;
    }
    tls_scheduler = outer;
    return s->finished_tasks < s->all_tasks;
}

bool scheduler_run_once(Scheduler *scheduler) {
    RoundRobinScheduler *s = poco_rr(scheduler);
    if (s != NULL) {
        return step(s);
    }
    if (scheduler != NULL && scheduler->run != NULL) {
        /* A scheduler of the user's: no step of it to take; run it out. */
        scheduler->run(scheduler);
    }
    return false;
}

static void rr_run(Scheduler *scheduler) {
    RoundRobinScheduler *s = (RoundRobinScheduler *)scheduler;
    start(s);
    while (step(s)) {
    }
}

void scheduler_run(Scheduler *scheduler) {
    if (scheduler == NULL || scheduler->run == NULL) {
        return;
    }
    context_set_scheduler(scheduler);
    scheduler->run(scheduler);
}

/* The interface's other entries. */
static Result rr_notify(Scheduler *scheduler, CoroEventSource const *event) {
    if (event == NULL) {
        return RES_INVALID_VALUE;
    }
    poco_offer_all((RoundRobinScheduler *)scheduler, event);
    return RES_OK;
}

static Result rr_notify_from_isr(Scheduler *scheduler, CoroEventSource const *event) {
    if (event == NULL) {
        return RES_INVALID_VALUE;
    }
    return poco_ext_post((RoundRobinScheduler *)scheduler, event, POCO_EXT_ALL)
               ? RES_OK
               : RES_NOTIFY_FAILED;
}

static Coro *rr_get_current(Scheduler *scheduler) {
    return ((RoundRobinScheduler *)scheduler)->current_task;
}

/* ---- creation ---- */

/* Takes `coro` into `slot`; false if it is in a scheduler already (this one
 * included: listed twice). */
static bool adopt(RoundRobinScheduler *s, size_t slot, Coro *coro) {
    if (coro->scheduler_ != NULL) {
        return false;
    }
    s->tasks[slot] = coro;
    coro->scheduler_ = s;
    coro->slot_ = slot;
    s->all_tasks++;
    if (coro->coro_state == CORO_STATE_FINISHED) {
        s->finished_tasks++;
    } else {
        poco_rr_make_ready(s, coro);
    }
    return true;
}

Scheduler *round_robin_scheduler_create_static(RoundRobinScheduler *s, Coro **coro_list,
                                               size_t num_coros) {
    if (s == NULL || (coro_list == NULL && num_coros > 0)) {
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->scheduler.run = rr_run;
    s->scheduler.notify = rr_notify;
    s->scheduler.notify_from_isr = rr_notify_from_isr;
    s->scheduler.get_current_coroutine = rr_get_current;
    s->tasks = coro_list;
    s->max_tasks_count = num_coros;
    queue_create_static(&s->event_queue, SCHEDULER_MAX_EXTERNAL_EVENT_COUNT,
                        sizeof(CoroEventSource), (uint8_t *)s->external_events);
    s->previous_ticks = platform_get_monotonic_ticks();
    s->wake_fd_ = -1;
    s->ready_ = s->ready_inline_;
    if (words(num_coros) > sizeof s->ready_inline_ / sizeof s->ready_inline_[0]) {
        s->ready_ = calloc(words(num_coros), sizeof(uint64_t));
        s->flags_ |= RR_OWN_BITSET;
    }
    s->heap_ = num_coros > 0 ? calloc(num_coros, sizeof(Coro *)) : NULL;
    bool ok = s->ready_ != NULL && (num_coros == 0 || s->heap_ != NULL);
    for (size_t i = 0; ok && i < num_coros; ++i) {
        if (coro_list[i] != NULL && !adopt(s, i, coro_list[i])) {
            ok = false; /* in another scheduler, or twice in the list */
        }
    }
    if (!ok) {
        /* Lets go of those it took (not of the one it refused: the slot
         * loop of the free checks the owner). */
        round_robin_scheduler_free(s);
        return NULL;
    }
    return &s->scheduler;
}

Scheduler *round_robin_scheduler_create(Coro *const *coro_list, size_t num_coros) {
    RoundRobinScheduler *s = malloc(sizeof *s);
    Coro **copy = malloc((num_coros > 0 ? num_coros : 1) * sizeof(Coro *));
    if (s == NULL || copy == NULL || (coro_list == NULL && num_coros > 0)) {
        free(s);
        free(copy);
        return NULL;
    }
    if (num_coros > 0) {
        memcpy(copy, coro_list, num_coros * sizeof(Coro *));
    }
    if (round_robin_scheduler_create_static(s, copy, num_coros) == NULL) {
        free(s);
        free(copy);
        return NULL;
    }
    s->flags_ |= RR_OWNED | RR_OWN_TASKS;
    return &s->scheduler;
}

static void on_closed(cot_loop *loop, cot_handle h, void *data) {
    (void)loop, (void)h, (void)data;
}

void round_robin_scheduler_free(RoundRobinScheduler *s) {
    if (s == NULL) {
        return;
    }
    poco_context_forget(&s->scheduler);
    /* Subjects still on the ISR list: off it, so that their next _from_isr
     * form (with another scheduler) queues them again. */
    for (PocoSubject *l = __atomic_exchange_n(&s->isr_head_, NULL, __ATOMIC_ACQUIRE); l != NULL;) {
        PocoSubject *next = l->isr_next;
        __atomic_store_n(&l->isr_queued, 0, __ATOMIC_SEQ_CST);
        l = next;
    }
    if (s->loop_ != NULL) {
        cot_loop *loop = s->loop_;
        cot_close(loop, s->timer_, on_closed);
        if (s->wake_fd_ >= 0 && s->poll_ != 0) {
            cot_close(loop, s->poll_, on_closed);
        }
        cot_loop_run(loop, COT_RUN_DEFAULT);
        cot_loop_close(loop);
    }
    if (s->wake_fd_ >= 0) {
        close(s->wake_fd_);
    }
    /* Its coroutines leave their waits (no primitive keeps a waiter, or a
     * binding, of a freed scheduler) and the scheduler. Every coroutine in
     * the slots is its own and alive: adding refuses a coroutine of another
     * scheduler, and coro_free takes one out of its slot. */
    for (size_t i = 0; i < s->max_tasks_count; ++i) {
        Coro *c = s->tasks != NULL ? s->tasks[i] : NULL;
        if (c != NULL && c->scheduler_ == s) {
            if (c->waiting_on_ != NULL) {
                poco_wait_expire(c);
                c->triggered_event_sink_slot = EVENT_SINK_SLOT_PRIMARY; /* see poco_rr_detach */
            }
            c->heap_index_ = 0;
            c->scheduler_ = NULL;
        }
    }
    if (s->flags_ & RR_OWN_BITSET) {
        free(s->ready_);
    }
    free(s->heap_);
    if (s->flags_ & RR_OWN_TASKS) {
        free(s->tasks);
    }
    if (s->flags_ & RR_OWNED) {
        free(s);
    }
}

void round_round_robin_scheduler_free(RoundRobinScheduler *s) { round_robin_scheduler_free(s); }

Result round_robin_scheduler_add_coro(RoundRobinScheduler *s, Coro *coro) {
    if (s == NULL || coro == NULL) {
        return RES_INVALID_VALUE;
    }
    if (coro->scheduler_ != NULL) {
        /* In a scheduler already: poco would hold it in two slot lists, and
         * the first freed would leave the other a dangling pointer. */
        return RES_INVALID_STATE;
    }
    for (size_t i = 0; i < s->max_tasks_count; ++i) {
        if (s->tasks[i] == NULL) {
            adopt(s, i, coro);
            return RES_OK;
        }
    }
    return RES_NO_MEM;
}

void round_robin_scheduler_remove_coro(RoundRobinScheduler *s, Coro const *coro) {
    if (s == NULL || coro == NULL) {
        return;
    }
    for (size_t i = 0; i < s->max_tasks_count; ++i) {
        if (s->tasks[i] == coro) {
            Coro *c = s->tasks[i];
            poco_rr_detach(s, c);
            s->all_tasks--;
            if (c->coro_state == CORO_STATE_FINISHED) {
                s->finished_tasks--;
            }
            c->scheduler_ = NULL;
            s->tasks[i] = NULL;
            return;
        }
    }
}
