/* poco-compatible API: coroutines and the round-robin scheduler. Known
 * output: hello/world alternation, poco's cyclic pick order, delays that last
 * at least their time (poco counts elapsed ticks twice), joining, static
 * coroutines and schedulers, free slots, scheduler_run_once. */
#define _POSIX_C_SOURCE 200809L
#include <poco/poco.h>
#include <stdint.h>
#include <time.h>

#include "check.h"
#include "poco_log.h"

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(void *ctx) {
    for (int i = 0; i < 3; ++i) {
        LOG("%s\n", (char const *)ctx);
        coro_yield();
    }
}

static void hello_world(void) {
    Coro *tasks[] = {
        coro_create(say, "hello", DEFAULT_STACK_SIZE),
        coro_create(say, "world", DEFAULT_STACK_SIZE),
    };
    CHECK(tasks[0] != NULL && tasks[1] != NULL);
    Scheduler *s = round_robin_scheduler_create(tasks, 2);
    CHECK(s != NULL);
    scheduler_run(s);
    EXPECT_LOG("hello\nworld\nhello\nworld\nhello\nworld\n");
    CHECK_EQ(tasks[0]->coro_state, CORO_STATE_FINISHED);
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(tasks[0]);
    coro_free(tasks[1]);
}

/* Pick order: cyclic from the one that ran last, not FIFO by readiness. C
 * is woken by B (the event) while A, earlier in the list, is ready too: after
 * B, the scheduler looks at C first. */
static Event order_ev;

static void order_a(void *ctx) {
    (void)ctx;
    for (int i = 0; i < 3; ++i) {
        LOG("a%d\n", i);
        coro_yield();
    }
}

static void order_b(void *ctx) {
    (void)ctx;
    LOG("b sets\n");
    event_set(&order_ev, 1);
    LOG("b again\n");
}

static void order_c(void *ctx) {
    (void)ctx;
    LOG("c waits\n");
    Flags f = event_get(&order_ev, 1, 1, false, PLATFORM_TICKS_FOREVER);
    LOG("c got %u\n", (unsigned)f);
}

static void pick_order(void) {
    event_create_static(&order_ev, 0);
    /* C first, so that it waits before B sets. */
    Coro *tasks[] = {
        coro_create(order_c, NULL, DEFAULT_STACK_SIZE),
        coro_create(order_a, NULL, DEFAULT_STACK_SIZE),
        coro_create(order_b, NULL, DEFAULT_STACK_SIZE),
    };
    Scheduler *s = round_robin_scheduler_create(tasks, 3);
    scheduler_run(s);
    EXPECT_LOG("c waits\na0\nb sets\nc got 1\na1\nb again\na2\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    for (int i = 0; i < 3; ++i) {
        coro_free(tasks[i]);
    }
}

/* Delays last at least their time; timeout 0 waits one tick. */
static int64_t slept[3];

static void sleeper(void *ctx) {
    int64_t ms = (int64_t)(intptr_t)ctx;
    int64_t t0 = now_ms();
    coro_yield_delay(ms);
    slept[ms == 0 ? 0 : ms == 30 ? 1 : 2] = now_ms() - t0;
    LOG("slept %d\n", (int)ms);
}

static void delays(void) {
    Coro *tasks[] = {
        coro_create(sleeper, (void *)(intptr_t)60, DEFAULT_STACK_SIZE),
        coro_create(sleeper, (void *)(intptr_t)30, DEFAULT_STACK_SIZE),
        coro_create(sleeper, (void *)(intptr_t)0, DEFAULT_STACK_SIZE),
    };
    Scheduler *s = round_robin_scheduler_create(tasks, 3);
    int64_t t0 = now_ms();
    scheduler_run(s);
    int64_t total = now_ms() - t0;
    EXPECT_LOG("slept 0\nslept 30\nslept 60\n");
    CHECK(slept[0] >= 1);
    CHECK(slept[1] >= 30);
    CHECK(slept[2] >= 60);
    CHECK(total < 1000); /* slept in the event loop, not longer */
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    for (int i = 0; i < 3; ++i) {
        coro_free(tasks[i]);
    }
}

/* Joining, with static coroutines and a static scheduler, free slots and
 * coroutines added later. */
static PlatformStackElement stacks[3][MIN_STACK_SIZE * 4];
static Coro statics[3];
static Coro *joined;

static void worker(void *ctx) {
    (void)ctx;
    LOG("worker starts\n");
    coro_yield_delay(5);
    LOG("worker ends\n");
}

static void joiner(void *ctx) {
    (void)ctx;
    LOG("joiner waits\n");
    coro_join(joined);
    LOG("joiner joined\n");
    coro_join(joined); /* finished already: at once */
    LOG("joiner again\n");
}

static void late(void *ctx) {
    (void)ctx;
    LOG("late runs\n");
}

static void joining(void) {
    joined = coro_create_static(&statics[0], worker, NULL, stacks[0], MIN_STACK_SIZE * 4);
    Coro *j = coro_create_static(&statics[1], joiner, NULL, stacks[1], MIN_STACK_SIZE * 4);
    CHECK(joined != NULL && j != NULL);
    CHECK(coro_create_static(&statics[2], late, NULL, stacks[2], 8) == NULL); /* too small */
    Coro *list[4] = {j, NULL, joined, NULL};
    RoundRobinScheduler rr;
    Scheduler *s = round_robin_scheduler_create_static(&rr, list, 4);
    CHECK(s == &rr.scheduler);
    Coro *l = coro_create_static(&statics[2], late, NULL, stacks[2], MIN_STACK_SIZE * 4);
    CHECK_EQ(round_robin_scheduler_add_coro(&rr, l), RES_OK);
    CHECK(list[1] == l);
    scheduler_start(s);
    CHECK(scheduler_get_current_coroutine(s) == NULL);
    while (scheduler_run_once(s)) {
    }
    CHECK(!scheduler_run_once(s));
    EXPECT_LOG("joiner waits\nlate runs\nworker starts\nworker ends\njoiner joined\njoiner again\n");
    round_robin_scheduler_remove_coro(&rr, l);
    CHECK(list[1] == NULL);
    round_robin_scheduler_free(&rr);
    for (int i = 0; i < 3; ++i) {
        coro_destroy_static(&statics[i]);
    }
}

/* A full scheduler refuses more coroutines (RES_NO_MEM); poco's test shim
 * pattern (a list of 16 with one coroutine) works; coro_free(NULL) is fine.
 * A coroutine is in one scheduler at a time: another refuses it
 * (RES_INVALID_STATE, or NULL from create), as does a list naming it twice.
 * poco would hold it in both, and ours once did: freeing the second
 * scheduler left the first a freed coroutine to read when freed itself (a
 * use-after-free TSan found; the _asan variant compiles c/poco with ASan to
 * catch its like). Freed in either order, schedulers and coroutines leave
 * nothing dangling; a freed scheduler's coroutines may join another. */
static void current(void *ctx) {
    Scheduler **s = ctx;
    CHECK(scheduler_get_current_coroutine(*s) != NULL);
    LOG("current ok\n");
}

static void slots(void) {
    static Scheduler *sp;
    Coro *tasks[16] = {coro_create(current, &sp, DEFAULT_STACK_SIZE)};
    sp = round_robin_scheduler_create(tasks, 16);
    scheduler_run(sp);
    EXPECT_LOG("current ok\n");
    CHECK(scheduler_get_current_coroutine(sp) == NULL);
    RoundRobinScheduler *rr = (RoundRobinScheduler *)sp;

    Coro *one[1] = {tasks[0]};
    CHECK(round_robin_scheduler_create(one, 1) == NULL); /* tasks[0] is sp's */
    Coro *other = coro_create(current, &sp, DEFAULT_STACK_SIZE);
    Coro *third = coro_create(current, &sp, DEFAULT_STACK_SIZE);
    Coro *two[1] = {other};
    Scheduler *full = round_robin_scheduler_create(two, 1);
    CHECK(full != NULL);
    CHECK_EQ(round_robin_scheduler_add_coro((RoundRobinScheduler *)full, tasks[0]),
             RES_INVALID_STATE);
    CHECK_EQ(round_robin_scheduler_add_coro((RoundRobinScheduler *)full, third), RES_NO_MEM);
    CHECK_EQ(round_robin_scheduler_add_coro(rr, other), RES_INVALID_STATE); /* full's */
    CHECK_EQ(round_robin_scheduler_add_coro(rr, tasks[0]), RES_INVALID_STATE); /* twice */
    Coro *twice[2] = {third, third};
    CHECK(round_robin_scheduler_create(twice, 2) == NULL);
    CHECK_EQ(rr->all_tasks, 1);

    /* The scheduler first, then its coroutine: `other` is free to join sp. */
    round_round_robin_scheduler_free((RoundRobinScheduler *)full);
    CHECK_EQ(round_robin_scheduler_add_coro(rr, other), RES_OK);
    CHECK_EQ(round_robin_scheduler_add_coro(rr, third), RES_OK);
    CHECK_EQ(rr->all_tasks, 3);
    /* The coroutines first (they leave their slots), then the scheduler. */
    for (int i = 0; i < 16; ++i) {
        coro_free(tasks[i]);
    }
    coro_free(other);
    CHECK_EQ(rr->all_tasks, 1);
    CHECK(rr->tasks[1] == NULL && rr->tasks[2] == third);
    round_round_robin_scheduler_free(rr);
    coro_free(third); /* out of any scheduler since sp was freed */
}

/* A coroutine freed while it waits leaves its event's waiters, the timer
 * heap and its slot (ASan would catch a dangling pointer). */
static Event freed_ev;
static Coro *victim;

static void waits_long(void *ctx) {
    (void)ctx;
    event_get(&freed_ev, 1, 1, false, 100000);
    LOG("never\n");
}

static void frees_it(void *ctx) {
    (void)ctx;
    CHECK_EQ(victim->coro_state, CORO_STATE_BLOCKED);
    coro_free(victim);
    event_set(&freed_ev, 1);
    LOG("freed a waiting coroutine\n");
}

static void free_waiting(void) {
    event_create_static(&freed_ev, 0);
    victim = coro_create(waits_long, NULL, DEFAULT_STACK_SIZE);
    Coro *tasks[] = {victim, coro_create(frees_it, NULL, DEFAULT_STACK_SIZE)};
    Scheduler *s = round_robin_scheduler_create(tasks, 2);
    scheduler_run(s); /* returns: the freed one no longer counts */
    EXPECT_LOG("freed a waiting coroutine\n");
    CHECK(freed_ev.subject_.head == NULL);
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(tasks[1]);
}

/* A scheduler freed while its coroutine waits on an event: the coroutine
 * leaves the event's waiters and the event its binding to the scheduler (no
 * pointer to the freed scheduler stays), and the coroutine may then run under
 * another scheduler, where its wait goes on. */
static Event orphan_ev;

static void orphan(void *ctx) {
    (void)ctx;
    Flags f = event_get(&orphan_ev, 1, 1, false, PLATFORM_TICKS_FOREVER);
    LOG("orphan got %u\n", (unsigned)f);
}

static void scheduler_freed_while_waiting(void) {
    event_create_static(&orphan_ev, 0);
    Coro *c = coro_create(orphan, NULL, DEFAULT_STACK_SIZE);
    Coro *list[1] = {c};
    Scheduler *s1 = round_robin_scheduler_create(list, 1);
    CHECK(scheduler_run_once(s1)); /* it waits */
    CHECK_EQ(c->coro_state, CORO_STATE_BLOCKED);
    CHECK(orphan_ev.subject_.head == c);
    CHECK(orphan_ev.subject_.scheduler == s1);
    round_round_robin_scheduler_free((RoundRobinScheduler *)s1);
    CHECK(orphan_ev.subject_.head == NULL);
    CHECK(orphan_ev.subject_.scheduler == NULL);
    CHECK(context_get_scheduler() == NULL);
    CHECK_EQ(event_set_no_wait(&orphan_ev, 1), RES_OK); /* nobody to wake */
    Scheduler *s2 = round_robin_scheduler_create(list, 1);
    CHECK(s2 != NULL);
    scheduler_run(s2);
    EXPECT_LOG("orphan got 1\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s2);
    coro_free(c);
}

int main(void) {
    hello_world();
    pick_order();
    delays();
    joining();
    slots();
    free_waiting();
    scheduler_freed_while_waiting();
    printf("test_poco_coro: ok\n");
    return 0;
}
