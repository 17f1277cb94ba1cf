/* poco-compatible API: the raw and intra-coroutine surface (poco/coro_raw.h,
 * poco/intracoro.h, poco/context.h, poco/queue_raw.h, the scheduler's
 * function table, platform contexts) and poco's constants.
 *
 * - poco's values of every enum and macro (CoroSignal's order, result codes,
 *   SCHEDULER_MAX_EXTERNAL_EVENT_COUNT, PLATFORM_TICKS_FOREVER);
 * - coro_resume by hand and coro_notify's matching of event sinks;
 * - raw waits under the round-robin scheduler, woken by the primitives'
 *   events, by raw events (coro_yield_with_event, scheduler_notify), by their
 *   own announcement (CORO_SIG_NOTIFY_AND_WAIT), or timed out;
 *   CORO_SIG_NOTIFY_AND_DONE finishes a coroutine;
 * - the primitives' waits fill the sinks as poco's do;
 * - scheduler_notify_from_isr: 16 external events per step, then
 *   RES_NOTIFY_FAILED;
 * - context_get_scheduler / context_get_coro / context_set_scheduler;
 * - a scheduler of our own (poco's "roll your own") driving the primitives
 *   with coro_resume and coro_notify only;
 * - queue_raw_put/get wake nobody;
 * - platform_make/swap/set_context. */
#include <poco/context.h>
#include <poco/coro_raw.h>
#include <poco/intracoro.h>
#include <poco/mutex.h>
#include <poco/poco.h>
#include <poco/queue_raw.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "poco_log.h"

/* ---- constants: poco's values ---- */

static void constants(void) {
    CHECK_EQ(CORO_SIG_WAIT, 0);
    CHECK_EQ(CORO_SIG_NOTIFY, 1);
    CHECK_EQ(CORO_SIG_NOTIFY_AND_WAIT, 2);
    CHECK_EQ(CORO_SIG_NOTIFY_AND_DONE, 3);
    CHECK_EQ(CORO_STATE_READY, 0);
    CHECK_EQ(CORO_STATE_RUNNING, 1);
    CHECK_EQ(CORO_STATE_BLOCKED, 2);
    CHECK_EQ(CORO_STATE_FINISHED, 3);
    CHECK_EQ(EVENT_SINK_SLOT_PRIMARY, 0);
    CHECK_EQ(EVENT_SINK_SLOT_TIMEOUT, 1);
    CHECK_EQ(EVENT_SINK_SLOT_COUNT, 2);
    CHECK_EQ(CORO_EVTSINK_NONE, 0);
    CHECK_EQ(CORO_EVTSINK_DELAY, 1);
    CHECK_EQ(CORO_EVTSINK_QUEUE_NOT_FULL, 2);
    CHECK_EQ(CORO_EVTSINK_QUEUE_NOT_EMPTY, 3);
    CHECK_EQ(CORO_EVTSINK_EVENT_GET, 4);
    CHECK_EQ(CORO_EVTSINK_SEMAPHORE_ACQUIRE, 5);
    CHECK_EQ(CORO_EVTSINK_MUTEX_ACQUIRE, 6);
    CHECK_EQ(CORO_EVTSINK_WAIT_FINISH, 7);
    CHECK_EQ(CORO_EVTSINK_STREAM_NOT_FULL, 8);
    CHECK_EQ(CORO_EVTSINK_STREAM_NOT_EMPTY, 9);
    CHECK_EQ(CORO_EVTSRC_NOOP, 0);
    CHECK_EQ(CORO_EVTSRC_ELAPSED, 1);
    CHECK_EQ(CORO_EVTSRC_QUEUE_PUT, 2);
    CHECK_EQ(CORO_EVTSRC_QUEUE_GET, 3);
    CHECK_EQ(CORO_EVTSRC_EVENT_SET, 4);
    CHECK_EQ(CORO_EVTSRC_SEMAPHORE_RELEASE, 5);
    CHECK_EQ(CORO_EVTSRC_MUTEX_RELEASE, 6);
    CHECK_EQ(CORO_EVTSRC_CORO_FINISHED, 7);
    CHECK_EQ(CORO_EVTSRC_STREAM_RECV, 8);
    CHECK_EQ(CORO_EVTSRC_STREAM_SEND, 9);
    CHECK_EQ(RES_GROUP_GENERAL, 0);
    CHECK_EQ(RES_GROUP_CORE, 1);
    CHECK_EQ(RES_GROUP_QUEUE, 2);
    CHECK_EQ(RES_GROUP_EVENT, 3);
    CHECK_EQ(RES_GROUP_MUTEX, 4);
    CHECK_EQ(RES_GROUP_STREAM, 5);
    CHECK_EQ(RES_GROUP_SEMAPHORE, 7);
    CHECK_EQ(RES_CODE(7, 1), 0x70001);
    CHECK_EQ(RES_OK, 0);
    CHECK_EQ(RES_NO_MEM, 1);
    CHECK_EQ(RES_INVALID_STATE, 2);
    CHECK_EQ(RES_INVALID_VALUE, 3);
    CHECK_EQ(RES_OVERFLOW, 4);
    CHECK_EQ(RES_TIMEOUT, 5);
    CHECK_EQ(RES_NOTIFY_FAILED, 6);
    CHECK_EQ(RES_QUEUE_EMPTY, 0x20000);
    CHECK_EQ(RES_QUEUE_FULL, 0x20001);
    CHECK_EQ(RES_MUTEX_NOT_OWNER, 0x40000);
    CHECK_EQ(RES_MUTEX_OCCUPIED, 0x40001);
    CHECK_EQ(RES_STREAM_EMPTY, 0x50000);
    CHECK_EQ(RES_STREAM_FULL, 0x50001);
    CHECK_EQ(RES_SEMAPHORE_FULL, 0x70000);
    CHECK_EQ(SCHEDULER_MAX_EXTERNAL_EVENT_COUNT, 16);
    CHECK(PLATFORM_TICKS_FOREVER == INT64_MIN);
    CHECK_EQ(platform_get_ticks_per_ms(), 1);
    CHECK_EQ(EVENT_FLAGS_MASK_ALL, UINT32_MAX);
    CHECK_EQ(EVENT_FLAGS_MASK_NONE, 0);
    CHECK(MIN_STACK_SIZE <= DEFAULT_STACK_SIZE);
    RoundRobinScheduler rr;
    CHECK((void *)&rr == (void *)&rr.scheduler);
    CHECK_EQ(sizeof rr.external_events / sizeof rr.external_events[0],
             SCHEDULER_MAX_EXTERNAL_EVENT_COUNT);
}

/* ---- coro_resume by hand, coro_notify's rules ---- */

static Queue rq, other_q;
static uint8_t rq_buf[4 * sizeof(int)], other_buf[sizeof(int)];
static Event flag_ev;

static void sink(Coro *c, size_t slot, CoroEventSinkType type, void *subject) {
    c->event_sinks[slot].type = type;
    c->event_sinks[slot].params.subject = subject;
}

static void delay_sink(Coro *c, size_t slot, PlatformTick ticks) {
    c->event_sinks[slot].type = CORO_EVTSINK_DELAY;
    c->event_sinks[slot].params.ticks_remaining = ticks;
}

static void by_hand_body(void *ctx) {
    (void)ctx;
    Coro *me = context_get_coro();
    LOG("start\n");
    coro_yield();
    sink(me, EVENT_SINK_SLOT_PRIMARY, CORO_EVTSINK_QUEUE_NOT_EMPTY, &rq);
    delay_sink(me, EVENT_SINK_SLOT_TIMEOUT, 5);
    coro_yield_with_signal(CORO_SIG_WAIT);
    LOG("woken by slot %d\n", (int)me->triggered_event_sink_slot);
    sink(me, EVENT_SINK_SLOT_PRIMARY, CORO_EVTSINK_NONE, NULL);
    delay_sink(me, EVENT_SINK_SLOT_TIMEOUT, 4);
    coro_yield_with_signal(CORO_SIG_WAIT);
    LOG("woken by slot %d\n", (int)me->triggered_event_sink_slot);
    CoroEventSource e = {.type = CORO_EVTSRC_EVENT_SET, .params.subject = &flag_ev};
    coro_yield_with_event(&e);
    coro_yield_with_signal(CORO_SIG_NOTIFY_AND_DONE);
    LOG("never\n");
}

static void by_hand(void) {
    queue_create_static(&rq, 4, sizeof(int), rq_buf);
    queue_create_static(&other_q, 1, sizeof(int), other_buf);
    Coro *c = coro_create(by_hand_body, NULL, DEFAULT_STACK_SIZE);
    CoroEventSource put_rq = {.type = CORO_EVTSRC_QUEUE_PUT, .params.subject = &rq};
    CoroEventSource get_rq = {.type = CORO_EVTSRC_QUEUE_GET, .params.subject = &rq};
    CoroEventSource put_other = {.type = CORO_EVTSRC_QUEUE_PUT, .params.subject = &other_q};
    CoroEventSource tick3 = {.type = CORO_EVTSRC_ELAPSED, .params.elapsed_ticks = 3};

    CHECK_EQ(c->coro_state, CORO_STATE_READY);
    CHECK_EQ(coro_resume(c), CORO_SIG_NOTIFY);
    CHECK_EQ(c->coro_state, CORO_STATE_READY);
    CHECK_EQ(c->event_source.type, CORO_EVTSRC_NOOP); /* coro_yield announces nothing */
    CHECK(!coro_notify(c, &put_rq)); /* not blocked: ignored */

    CHECK_EQ(coro_resume(c), CORO_SIG_WAIT);
    CHECK_EQ(c->coro_state, CORO_STATE_BLOCKED);
    CHECK(!coro_notify(c, &put_other)); /* another queue */
    CHECK(!coro_notify(c, &get_rq));    /* room, not an item */
    CHECK(!coro_notify(c, &tick3));     /* 5 - 3 ticks: 2 left */
    CHECK_EQ(c->event_sinks[EVENT_SINK_SLOT_TIMEOUT].params.ticks_remaining, 2);
    CHECK_EQ(c->coro_state, CORO_STATE_BLOCKED);
    CHECK(coro_notify(c, &put_rq));
    CHECK_EQ(c->coro_state, CORO_STATE_READY);
    CHECK_EQ(c->triggered_event_sink_slot, EVENT_SINK_SLOT_PRIMARY);
    CHECK(!coro_notify(c, &put_rq)); /* ready now */

    CHECK_EQ(coro_resume(c), CORO_SIG_WAIT);
    CHECK(!coro_notify(c, &tick3)); /* 4 - 3 */
    CHECK(coro_notify(c, &tick3));  /* 1 - 3: time is up */
    CHECK_EQ(c->triggered_event_sink_slot, EVENT_SINK_SLOT_TIMEOUT);

    CHECK_EQ(coro_resume(c), CORO_SIG_NOTIFY);
    CHECK_EQ(c->event_source.type, CORO_EVTSRC_EVENT_SET);
    CHECK(c->event_source.params.subject == &flag_ev);
    CHECK_EQ(coro_resume(c), CORO_SIG_NOTIFY_AND_DONE);
    CHECK_EQ(c->coro_state, CORO_STATE_FINISHED);
    CHECK_EQ(coro_resume(c), CORO_SIG_NOTIFY_AND_DONE);
    EXPECT_LOG("start\nwoken by slot 0\nwoken by slot 1\n");
    coro_free(c);
}

/* ---- raw waits and raw events under the round-robin scheduler ---- */

static Queue wq;
static uint8_t wq_buf[2 * sizeof(int)];
static Event prim_ev, self_ev, timed_ev, isr_ev;
static Mutex raw_mtx;
static Coro *finisher_coro, *prim_waiter_coro;
static Scheduler *raw_s;
static bool finisher_added;

/* Waits (raw) for an item in wq: woken by queue_put's event. */
static void raw_queue_waiter(void *ctx) {
    (void)ctx;
    Coro *me = context_get_coro();
    sink(me, EVENT_SINK_SLOT_PRIMARY, CORO_EVTSINK_QUEUE_NOT_EMPTY, &wq);
    delay_sink(me, EVENT_SINK_SLOT_TIMEOUT, PLATFORM_TICKS_FOREVER);
    LOG("raw waits for an item\n");
    coro_yield_with_signal(CORO_SIG_WAIT);
    int v = 0;
    CHECK_EQ(queue_get_no_wait(&wq, &v), RES_OK);
    LOG("raw got %d (slot %d)\n", v, (int)me->triggered_event_sink_slot);
    /* Then waits on a mutex (raw), released by a raw event. */
    sink(me, EVENT_SINK_SLOT_PRIMARY, CORO_EVTSINK_MUTEX_ACQUIRE, &raw_mtx);
    coro_yield_with_signal(CORO_SIG_WAIT);
    LOG("raw mutex event\n");
    /* Then for the finisher (raw join). */
    sink(me, EVENT_SINK_SLOT_PRIMARY, CORO_EVTSINK_WAIT_FINISH, finisher_coro);
    coro_yield_with_signal(CORO_SIG_WAIT);
    LOG("raw join done\n");
}

/* Waits (raw) with a time limit of 200 ticks that nothing beats. */
static void raw_timed(void *ctx) {
    (void)ctx;
    Coro *me = context_get_coro();
    sink(me, EVENT_SINK_SLOT_PRIMARY, CORO_EVTSINK_EVENT_GET, &timed_ev);
    delay_sink(me, EVENT_SINK_SLOT_TIMEOUT, 200);
    coro_yield_with_signal(CORO_SIG_WAIT);
    LOG("timed out: slot %d\n", (int)me->triggered_event_sink_slot);
}

/* Announces an event it waits for itself: blocked first, then woken by its
 * own announcement (poco's order for CORO_SIG_NOTIFY_AND_WAIT). */
static void self_waker(void *ctx) {
    (void)ctx;
    Coro *me = context_get_coro();
    me->event_source.type = CORO_EVTSRC_EVENT_SET;
    me->event_source.params.subject = &self_ev;
    sink(me, EVENT_SINK_SLOT_PRIMARY, CORO_EVTSINK_EVENT_GET, &self_ev);
    delay_sink(me, EVENT_SINK_SLOT_TIMEOUT, PLATFORM_TICKS_FOREVER);
    coro_yield_with_signal(CORO_SIG_NOTIFY_AND_WAIT);
    LOG("self woken\n");
}

/* A primitive's waiter: its sinks are poco's; a raw event whose change it
 * makes itself (flags set by hand, then scheduler_notify) wakes it. */
static void prim_waiter(void *ctx) {
    (void)ctx;
    Flags f = event_get(&prim_ev, 0x1, 0x1, false, PLATFORM_TICKS_FOREVER);
    LOG("primitive waiter got %#x\n", (unsigned)f);
}

static void finisher(void *ctx) {
    (void)ctx;
    LOG("finisher done\n");
    coro_yield_with_signal(CORO_SIG_NOTIFY_AND_DONE);
    LOG("never\n");
}

static void driver(void *ctx) {
    (void)ctx;
    Coro *me = context_get_coro();
    CHECK(context_get_scheduler() == raw_s);
    CHECK(scheduler_get_current_coroutine(raw_s) == me);
    coro_yield(); /* everybody waits now */
    Coro *pw = prim_waiter_coro;
    CHECK_EQ(pw->coro_state, CORO_STATE_BLOCKED);
    CHECK_EQ(pw->event_sinks[EVENT_SINK_SLOT_PRIMARY].type, CORO_EVTSINK_EVENT_GET);
    CHECK(pw->event_sinks[EVENT_SINK_SLOT_PRIMARY].params.subject == &prim_ev);
    CHECK_EQ(pw->event_sinks[EVENT_SINK_SLOT_TIMEOUT].type, CORO_EVTSINK_DELAY);
    CHECK(pw->event_sinks[EVENT_SINK_SLOT_TIMEOUT].params.ticks_remaining ==
          PLATFORM_TICKS_FOREVER);

    int one = 1;
    LOG("put\n");
    CHECK_EQ(queue_put(&wq, &one, PLATFORM_TICKS_FOREVER), RES_OK);
    CHECK_EQ(me->event_source.type, CORO_EVTSRC_QUEUE_PUT);
    CHECK(me->event_source.params.subject == &wq);

    LOG("raw mutex release\n");
    CoroEventSource rel = {.type = CORO_EVTSRC_MUTEX_RELEASE, .params.subject = &raw_mtx};
    coro_yield_with_event(&rel);

    LOG("flags by hand, then scheduler_notify\n");
    prim_ev.flags |= 0x1;
    CoroEventSource set = {.type = CORO_EVTSRC_EVENT_SET, .params.subject = &prim_ev};
    CHECK_EQ(scheduler_notify(context_get_scheduler(), &set), RES_OK);
    coro_yield();

    /* External events: 16 slots, then RES_NOTIFY_FAILED, until a step. */
    RoundRobinScheduler *rr = (RoundRobinScheduler *)raw_s;
    CoroEventSource isr = {.type = CORO_EVTSRC_EVENT_SET, .params.subject = &isr_ev};
    for (int i = 0; i < SCHEDULER_MAX_EXTERNAL_EVENT_COUNT; ++i) {
        CHECK_EQ(scheduler_notify_from_isr(raw_s, &isr), RES_OK);
    }
    CHECK_EQ(scheduler_notify_from_isr(raw_s, &isr), RES_NOTIFY_FAILED);
    CHECK_EQ(event_set_from_isr(&isr_ev, 0x1), RES_NOTIFY_FAILED); /* set all the same */
    CHECK_EQ(isr_ev.flags, 0x1);
    CHECK_EQ(queue_item_count(&rr->event_queue), SCHEDULER_MAX_EXTERNAL_EVENT_COUNT);
    coro_yield();
    CHECK_EQ(queue_item_count(&rr->event_queue), 0);
    CHECK_EQ(scheduler_notify_from_isr(raw_s, &isr), RES_OK);
    coro_yield();
    LOG("driver done\n");
}

static void raw_waits(void) {
    queue_create_static(&wq, 2, sizeof(int), wq_buf);
    event_create_static(&prim_ev, 0);
    event_create_static(&self_ev, 0);
    event_create_static(&timed_ev, 0);
    event_create_static(&isr_ev, 0);
    mutex_create_static(&raw_mtx);
    Coro *t[6] = {
        coro_create(raw_queue_waiter, NULL, DEFAULT_STACK_SIZE),
        coro_create(raw_timed, NULL, DEFAULT_STACK_SIZE),
        coro_create(self_waker, NULL, DEFAULT_STACK_SIZE),
        coro_create(prim_waiter, NULL, DEFAULT_STACK_SIZE),
        coro_create(driver, NULL, DEFAULT_STACK_SIZE),
        coro_create(finisher, NULL, DEFAULT_STACK_SIZE),
    };
    prim_waiter_coro = t[3];
    finisher_coro = t[5];
    /* The finisher runs only once the raw waiter joins it: added later. */
    t[5] = NULL;
    raw_s = round_robin_scheduler_create(t, 6);
    CHECK(raw_s != NULL);
    CHECK(context_get_coro() == NULL);
    scheduler_start(raw_s);
    CHECK(context_get_scheduler() == raw_s);
    while (scheduler_run_once(raw_s)) {
        if (prim_waiter_coro->coro_state == CORO_STATE_FINISHED && !finisher_added) {
            CHECK_EQ(round_robin_scheduler_add_coro((RoundRobinScheduler *)raw_s, finisher_coro),
                     RES_OK);
            finisher_added = true;
        }
    }
    EXPECT_LOG("raw waits for an item\n"
               "self woken\n"
               "put\n"
               "raw got 1 (slot 0)\n"
               "raw mutex release\n"
               "raw mutex event\n"
               "flags by hand, then scheduler_notify\n"
               "primitive waiter got 0x1\n"
               "finisher done\n"
               "raw join done\n"
               "driver done\n"
               "timed out: slot 1\n");
    CHECK(context_get_coro() == NULL);
    round_round_robin_scheduler_free((RoundRobinScheduler *)raw_s);
    CHECK(context_get_scheduler() == NULL); /* the freed one is forgotten */
    for (int i = 0; i < 5; ++i) {
        coro_free(t[i]);
    }
    coro_free(finisher_coro);
}

/* ---- a scheduler of our own: poco's interface, driving the primitives ---- */

typedef struct mini {
    Scheduler scheduler; /* first, as poco requires */
    Coro *tasks[4];
    size_t n;
    Coro *current;
    PlatformTick last;
    int notified, isr_notified;
} Mini;

static void mini_broadcast(Mini *m, CoroEventSource const *e) {
    for (size_t i = 0; i < m->n; ++i) {
        coro_notify(m->tasks[i], e);
    }
}

static Result mini_notify(Scheduler *s, CoroEventSource const *e) {
    Mini *m = (Mini *)s;
    m->notified++;
    mini_broadcast(m, e);
    return RES_OK;
}

static Result mini_notify_from_isr(Scheduler *s, CoroEventSource const *e) {
    ((Mini *)s)->isr_notified++;
    mini_broadcast((Mini *)s, e);
    return RES_OK;
}

static Coro *mini_current(Scheduler *s) { return ((Mini *)s)->current; }

static void mini_run(Scheduler *s) {
    Mini *m = (Mini *)s;
    m->last = platform_get_monotonic_ticks();
    for (;;) {
        size_t finished = 0;
        for (size_t i = 0; i < m->n; ++i) {
            Coro *c = m->tasks[i];
            if (c->coro_state == CORO_STATE_FINISHED) {
                finished++;
                continue;
            }
            if (c->coro_state != CORO_STATE_READY) {
                continue;
            }
            m->current = c;
            CoroSignal sig = coro_resume(c);
            m->current = NULL;
            if (sig != CORO_SIG_WAIT) {
                mini_broadcast(m, &c->event_source);
            }
        }
        if (finished == m->n) {
            return;
        }
        PlatformTick now = platform_get_monotonic_ticks();
        if (now != m->last) {
            CoroEventSource e = {.type = CORO_EVTSRC_ELAPSED, .params.elapsed_ticks = now - m->last};
            m->last = now;
            mini_broadcast(m, &e);
        }
    }
}

static Queue mq;
static uint8_t mq_buf[sizeof(int)];
static Event mev;
static Coro *mini_producer_coro;

static void mini_consumer(void *ctx) {
    (void)ctx;
    for (int i = 0; i < 3; ++i) {
        int v = -1;
        CHECK_EQ(queue_get(&mq, &v, PLATFORM_TICKS_FOREVER), RES_OK);
        LOG("mini got %d\n", v);
    }
    Flags f = event_get(&mev, 0x3, 0x3, true, PLATFORM_TICKS_FOREVER);
    LOG("mini event %#x\n", (unsigned)f);
    CHECK_EQ(queue_get(&mq, &f, 10), RES_TIMEOUT); /* the scheduler's ELAPSED events */
    LOG("mini timeout\n");
    coro_join(mini_producer_coro);
    LOG("mini joined\n");
}

static void mini_producer(void *ctx) {
    (void)ctx;
    for (int i = 0; i < 3; ++i) {
        CHECK_EQ(queue_put(&mq, &i, PLATFORM_TICKS_FOREVER), RES_OK);
        LOG("mini put %d\n", i);
    }
    event_set(&mev, 0x1);
    CHECK_EQ(event_set_no_wait(&mev, 0x2), RES_OK); /* told through notify */
    coro_yield_delay(20);
    LOG("mini producer done\n");
}

static void own_scheduler(void) {
    queue_create_static(&mq, 1, sizeof(int), mq_buf);
    event_create_static(&mev, 0);
    Mini m = {
        .scheduler = {.run = mini_run,
                      .notify = mini_notify,
                      .notify_from_isr = mini_notify_from_isr,
                      .get_current_coroutine = mini_current},
    };
    Coro *first[2] = {coro_create(mini_consumer, NULL, DEFAULT_STACK_SIZE),
                      coro_create(mini_producer, NULL, DEFAULT_STACK_SIZE)};
    memcpy(m.tasks, first, sizeof first);
    mini_producer_coro = first[1];
    m.n = 2;
    /* Step by step: nothing to start, and the one step runs it out. The
     * _no_wait forms tell the context's scheduler, set by hand here. */
    context_set_scheduler(&m.scheduler);
    scheduler_start(&m.scheduler);
    CHECK(!scheduler_run_once(&m.scheduler));
    EXPECT_LOG("mini put 0\n"
               "mini got 0\n"
               "mini put 1\n"
               "mini got 1\n"
               "mini put 2\n"
               "mini got 2\n"
               "mini event 0x3\n"
               "mini timeout\n"
               "mini producer done\n"
               "mini joined\n");
    CHECK(m.notified >= 1); /* event_set_no_wait */
    /* Again through scheduler_run, which sets the context itself. */
    context_set_scheduler(NULL);
    Coro *second[2] = {coro_create(mini_consumer, NULL, DEFAULT_STACK_SIZE),
                       coro_create(mini_producer, NULL, DEFAULT_STACK_SIZE)};
    memcpy(m.tasks, second, sizeof second);
    mini_producer_coro = second[1];
    scheduler_run(&m.scheduler);
    CHECK(context_get_scheduler() == &m.scheduler);
    CHECK(strstr(poco_log_buf, "mini joined\n") != NULL);
    poco_log_len = 0;
    poco_log_buf[0] = '\0';
    CHECK_EQ(event_set_from_isr(&mev, 0x4), RES_OK); /* nobody waits: told from_isr */
    CHECK_EQ(m.isr_notified, 1);
    context_set_scheduler(NULL);
    CHECK(context_get_scheduler() == NULL);
    for (int i = 0; i < 2; ++i) {
        coro_free(first[i]);
        coro_free(second[i]);
    }
}

/* ---- queue_raw_put/get wake nobody ---- */

static Queue rawq;
static uint8_t rawq_buf[sizeof(int)];

static void rawq_getter(void *ctx) {
    (void)ctx;
    int v = -1;
    CHECK_EQ(queue_get(&rawq, &v, 30), RES_TIMEOUT); /* never told of the item */
    CHECK_EQ(queue_get_no_wait(&rawq, &v), RES_OK);
    LOG("getter: %d after its timeout\n", v);
}

static void rawq_putter(void *ctx) {
    (void)ctx;
    int v = 7;
    CHECK_EQ(queue_raw_put(&rawq, &v), RES_OK);
    CHECK_EQ(queue_raw_put(&rawq, &v), RES_QUEUE_FULL);
    LOG("raw put\n");
}

static void queue_raw(void) {
    queue_create_static(&rawq, 1, sizeof(int), rawq_buf);
    Coro *t[2] = {
        coro_create(rawq_getter, NULL, DEFAULT_STACK_SIZE),
        coro_create(rawq_putter, NULL, DEFAULT_STACK_SIZE),
    };
    Scheduler *s = round_robin_scheduler_create(t, 2);
    scheduler_run(s);
    EXPECT_LOG("raw put\ngetter: 7 after its timeout\n");
    int v;
    CHECK_EQ(queue_raw_get(&rawq, &v), RES_QUEUE_EMPTY);
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(t[0]);
    coro_free(t[1]);
}

/* ---- platform contexts ---- */

static PlatformContext main_ctx, fn_ctx;
static PlatformStackElement fn_stack[DEFAULT_STACK_SIZE];

static void fn(void *a, void *b) {
    LOG("fn %s %s\n", (char const *)a, (char const *)b);
    CHECK_EQ(platform_swap_context(&fn_ctx, &main_ctx), 0);
    LOG("fn again\n");
} /* returns: uc_link (main_ctx) resumes */

static void platform_contexts(void) {
    memset(&fn_ctx, 0, sizeof fn_ctx);
    CHECK_EQ(platform_get_context(&fn_ctx), 0);
    fn_ctx.uc_stack.ss_sp = fn_stack;
    fn_ctx.uc_stack.ss_size = 16; /* too small */
    CHECK_EQ(platform_make_context(&fn_ctx, fn, "x", "y"), -1);
    fn_ctx.uc_stack.ss_size = sizeof fn_stack;
    fn_ctx.uc_link = &main_ctx;
    CHECK_EQ(platform_make_context(&fn_ctx, fn, "x", "y"), 0);
    CHECK_EQ(platform_swap_context(&main_ctx, &fn_ctx), 0);
    LOG("main\n");
    CHECK_EQ(platform_swap_context(&main_ctx, &fn_ctx), 0);
    LOG("main again\n");
    EXPECT_LOG("fn x y\nmain\nfn again\nmain again\n");
    CHECK_EQ(platform_destroy_context(&fn_ctx), 0);
    CHECK_EQ(platform_set_context(&fn_ctx), -1); /* holds nothing */
    CHECK_EQ(platform_swap_context(&main_ctx, &fn_ctx), -1);
    CHECK(platform_get_monotonic_ticks() > 0);
}

/* ---- a wait whose time ran out is a timeout, as in poco ---- */

/* The state became ready without a wakeup (set by hand, as an interrupt
 * handler of poco's might): the wait still ends with RES_TIMEOUT (event_get:
 * 0), and the state stays for the next look. */
static Semaphore quiet_sem;
static Event quiet_ev;
static Mutex quiet_mtx;

static void quiet_waiter(void *ctx) {
    (void)ctx;
    CHECK_EQ(semaphore_acquire(&quiet_sem, 20), RES_TIMEOUT); /* a slot came at once */
    CHECK_EQ(quiet_sem.slots_remaining, 1);
    CHECK_EQ(semaphore_acquire_no_wait(&quiet_sem), RES_OK);
    CHECK_EQ(event_get(&quiet_ev, 0x1, 0x1, false, 200), 0); /* set at about 40 ms */
    CHECK_EQ(quiet_ev.flags, 0x1);
    CHECK_EQ(mutex_acquire(&quiet_mtx, 20), RES_TIMEOUT); /* held until about 540 ms */
    LOG("timeouts as poco\n");
}

static void quiet_setter(void *ctx) {
    (void)ctx;
    CHECK_EQ(mutex_acquire(&quiet_mtx, 0), RES_OK);
    coro_yield();                  /* the waiter waits for a slot */
    quiet_sem.slots_remaining = 1; /* no wakeup */
    coro_yield_delay(40);          /* its 20 ticks pass; it waits for the flag */
    quiet_ev.flags = 0x1;          /* no wakeup */
    coro_yield_delay(500);         /* its 200 ticks pass, and its 20 for the mutex */
    CHECK_EQ(mutex_release(&quiet_mtx), RES_OK);
}

static void timeouts(void) {
    semaphore_create_static(&quiet_sem, 1);
    CHECK_EQ(semaphore_acquire_no_wait(&quiet_sem), RES_OK);
    event_create_static(&quiet_ev, 0);
    mutex_create_static(&quiet_mtx);
    Coro *t[2] = {
        coro_create(quiet_setter, NULL, DEFAULT_STACK_SIZE),
        coro_create(quiet_waiter, NULL, DEFAULT_STACK_SIZE),
    };
    Scheduler *s = round_robin_scheduler_create(t, 2);
    scheduler_run(s);
    EXPECT_LOG("timeouts as poco\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(t[0]);
    coro_free(t[1]);
}

int main(void) {
    constants();
    by_hand();
    raw_waits();
    own_scheduler();
    queue_raw();
    timeouts();
    platform_contexts();
    printf("test_poco_raw: ok\n");
    return 0;
}
