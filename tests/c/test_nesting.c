/* Combined signals nested a million levels deep through the C ABI: armed,
 * disarmed, fired and freed on the main stack and on a 64 KiB coroutine
 * stack. The scheduler spreads the work along the chain without recursion;
 * before it did, about 65 000 levels overflowed an 8 MiB stack. */
#include <cothread.h>
#include <stdint.h>

#include "check.h"

#define LEVELS 1000000

static int base_key;
#define BASE ((const void *)&base_key)

/* LEVELS combined signals over BASE, each the only part of the next (onany
 * and onall alternating); chain[LEVELS - 1] is the top. */
static void build(cot_sched *s, const void **chain) {
    const void *below = BASE;
    for (int i = 0; i < LEVELS; i++) {
        const void *parts[] = {below};
        int rc = i % 2 ? cot_sched_onall(s, parts, 1, &chain[i]) : cot_sched_onany(s, parts, 1, &chain[i]);
        CHECK_EQ(rc, 0);
        below = chain[i];
    }
}

/* The whole round trip on the caller's stack; returns 0 (checks exit). */
static int round_trip(void) {
    const void **chain = malloc(sizeof *chain * LEVELS);
    CHECK(chain != NULL);
    cot_sched *s = cot_sched_new();
    cot_task t = 0;
    CHECK_EQ(cot_task_new(s, (void *)7, &t), 0);
    build(s, chain);
    const void *top = chain[LEVELS - 1];

    /* Waiting on the top arms every level; leaving disarms them. */
    CHECK_EQ(cot_sched_wait(s, t, top), 1);
    CHECK_EQ(cot_sched_unschedule(s, t), 1);
    CHECK_EQ(cot_sched_notify(s, BASE, COT_LATER), 0); /* nothing armed counted it */

    /* Armed again, the base fires every level: the waiter is ready. */
    CHECK_EQ(cot_sched_wait(s, t, top), 1);
    CHECK_EQ(cot_sched_notify(s, BASE, COT_LATER), 1);
    CHECK_EQ(cot_sched_ready_head(s), t);
    CHECK_EQ(cot_sched_waiting(s, top), 0);

    /* Freed top first; a part of a live signal is busy. */
    CHECK_EQ(cot_sched_combined_free(s, chain[0]), COT_EBUSY);
    for (int i = LEVELS - 1; i >= 0; i--) CHECK_EQ(cot_sched_combined_free(s, chain[i]), 0);
    CHECK_EQ(cot_sched_combined_free(s, top), COT_EINVAL);

    /* A chain armed when its scheduler is freed goes with it. */
    build(s, chain);
    CHECK_EQ(cot_sched_unschedule(s, t), 1);
    CHECK_EQ(cot_sched_wait(s, t, chain[LEVELS - 1]), 1);
    CHECK_EQ(cot_sched_free(s), 0);
    free(chain);
    return 0;
}

static void *on_coroutine(void *arg) {
    (void)arg;
    return (void *)(intptr_t)(round_trip() == 0 ? 42 : 0);
}

int main(void) {
    CHECK_EQ(round_trip(), 0);

    cot_loop *loop = cot_loop_new();
    CHECK(loop != NULL);
    cot_coro *co = NULL;
    CHECK_EQ(cot_coro_new(loop, on_coroutine, NULL, 64 * 1024, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    void *result = NULL;
    CHECK_EQ(cot_coro_result(co, &result), 0);
    CHECK_EQ((intptr_t)result, 42);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
    puts("test_nesting: ok");
    return 0;
}
