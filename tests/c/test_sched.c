/* The scheduler through the C ABI: queues, every `when`, time, iteration. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int sig_a, sig_b;  /* signal keys: addresses we own */
#define A ((const void *)&sig_a)
#define B ((const void *)&sig_b)

static uint64_t fake_now = 1000;
static uint64_t fake_clock(void *data) { return *(uint64_t *)data; }

static cot_task task(cot_sched *s, intptr_t n) {
    cot_task t = 0;
    CHECK_EQ(cot_task_new(s, (void *)n, &t), 0);
    CHECK(t != 0);
    return t;
}

static intptr_t data(cot_sched *s, cot_task t) {
    void *d = NULL;
    CHECK_EQ(cot_task_data(s, t, &d), 0);
    return (intptr_t)d;
}

/* Writes the user values of a queue, head first, as digits: "2013". */
static const char *order(cot_sched *s, cot_task head) {
    static char buf[64];
    size_t n = 0;
    for (cot_task t = head; t && n < sizeof buf - 1; t = cot_task_next(s, t))
        buf[n++] = (char)('0' + data(s, t));
    buf[n] = 0;
    return buf;
}

#define READY(s) order(s, cot_sched_ready_head(s))
#define WAITERS(s, k) order(s, cot_sched_signal_head(s, k))

static void test_ready_queue(void) {
    cot_sched *s = cot_sched_new();
    cot_task t[4];
    for (int i = 0; i < 4; i++) t[i] = task(s, i);
    CHECK_EQ(cot_sched_ready_head(s), 0);
    CHECK_EQ(cot_sched_schedule(s, t[0], COT_LATER), 1);
    CHECK_EQ(cot_sched_schedule(s, t[1], COT_LATER), 1);
    CHECK_EQ(cot_sched_schedule(s, t[2], COT_NEXT), 1);
    CHECK_EQ(cot_sched_schedule(s, t[2], COT_LATER), 0); /* already there */
    CHECK(strcmp(READY(s), "201") == 0);
    CHECK_EQ(cot_sched_is_scheduled(s, t[3]), 0);
    CHECK_EQ(cot_sched_unschedule(s, t[0]), 1);
    CHECK_EQ(cot_sched_unschedule(s, t[0]), 0);
    CHECK(strcmp(READY(s), "21") == 0);
    CHECK_EQ(cot_task_set_data(s, t[1], (void *)7), 0);
    CHECK(strcmp(READY(s), "27") == 0);
    CHECK_EQ(cot_sched_free(s), 0);
}

static void test_signals(void) {
    cot_sched *s = cot_sched_new();
    CHECK_EQ(cot_sched_set_clock(s, fake_clock, &fake_now), 0);
    cot_task t[5];
    for (int i = 0; i < 5; i++) t[i] = task(s, i);
    for (int i = 0; i < 3; i++) CHECK_EQ(cot_sched_wait(s, t[i], A), 1);
    CHECK_EQ(cot_sched_waiting(s, A), 1);
    CHECK(strcmp(WAITERS(s, A), "012") == 0);
    CHECK_EQ(cot_sched_schedule(s, t[3], COT_LATER), 1);
    CHECK_EQ(cot_sched_notify(s, A, COT_NEXT), 1);
    CHECK(strcmp(READY(s), "0123") == 0);
    CHECK_EQ(cot_sched_notify(s, A, COT_LATER), 0); /* nobody waits */
    CHECK_EQ(cot_sched_waiting(s, A), 0);

    for (int i = 0; i < 3; i++) {
        CHECK_EQ(cot_sched_unschedule(s, t[i]), 1);
        CHECK_EQ(cot_sched_wait(s, t[i], A), 1);
    }
    CHECK_EQ(cot_sched_wait(s, t[4], B), 1);
    CHECK_EQ(cot_sched_notify_wait(s, A, B), 1);
    CHECK(strcmp(WAITERS(s, B), "4012") == 0);
    CHECK_EQ(cot_sched_notify_delay(s, B, 500), 1);
    uint64_t wake = 0;
    CHECK_EQ(cot_sched_next_wake(s, &wake), 1);
    CHECK_EQ(wake, 1500);
    CHECK_EQ(cot_sched_take_due(s), 0);
    fake_now = 1500;
    CHECK_EQ(cot_sched_take_due(s), 1);
    CHECK(strcmp(READY(s), "34012") == 0);
    CHECK_EQ(cot_sched_next_wake(s, &wake), 0);

    /* Postpone by absolute time, in (time, order) order. */
    for (int i = 0; i < 5; i++) CHECK_EQ(cot_sched_unschedule(s, t[i]), 1);
    CHECK_EQ(cot_sched_postpone(s, t[0], 3000), 1);
    CHECK_EQ(cot_sched_delay(s, t[1], 500), 1); /* 2000 */
    CHECK_EQ(cot_sched_postpone(s, t[2], 2000), 1);
    CHECK_EQ(cot_sched_postpone(s, t[3], 10), 1); /* past: due at once */
    CHECK_EQ(cot_sched_wait(s, t[4], A), 1);
    CHECK_EQ(cot_sched_notify_postpone(s, A, 2000), 1);
    fake_now = 2500;
    CHECK_EQ(cot_sched_take_due(s), 1);
    CHECK(strcmp(READY(s), "3124") == 0);
    CHECK_EQ(cot_sched_now(s), 2500);
    CHECK_EQ(cot_sched_free(s), 0);
}

static void test_default_clock_is_monotonic(void) {
    cot_sched *s = cot_sched_new();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t before = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    uint64_t now = cot_sched_now(s);
    CHECK(now >= before && now - before < 1000000000u);
    cot_task t = task(s, 1);
    CHECK_EQ(cot_sched_delay(s, t, 0), 1);
    CHECK_EQ(cot_sched_take_due(s), 1);
    CHECK_EQ(cot_sched_ready_head(s), t);
    CHECK_EQ(cot_sched_free(s), 0);
}

static void test_combined(void) {
    cot_sched *s = cot_sched_new();
    cot_task t[3];
    for (int i = 0; i < 3; i++) t[i] = task(s, i);
    const void *parts[] = {A, B};
    const void *all = NULL, *any = NULL, *outer = NULL;
    CHECK_EQ(cot_sched_onall(s, parts, 2, &all), 0);
    CHECK_EQ(cot_sched_onany(s, parts, 2, &any), 0);
    CHECK(all && any && all != any);

    CHECK_EQ(cot_sched_notify(s, A, COT_LATER), 0); /* not waited on */
    CHECK_EQ(cot_sched_wait(s, t[0], all), 1);
    CHECK_EQ(cot_sched_wait(s, t[1], any), 1);
    CHECK_EQ(cot_sched_notify(s, A, COT_LATER), 1);
    CHECK(strcmp(READY(s), "1") == 0); /* any fired, all waits for B */
    CHECK_EQ(cot_sched_reset(s, all), 1);
    CHECK_EQ(cot_sched_notify(s, B, COT_LATER), 1);
    CHECK(strcmp(READY(s), "1") == 0); /* A was forgotten */
    CHECK_EQ(cot_sched_notify(s, A, COT_LATER), 1);
    CHECK(strcmp(READY(s), "10") == 0);

    const void *nested[] = {any, all};
    CHECK_EQ(cot_sched_onall(s, nested, 2, &outer), 0);
    CHECK_EQ(cot_sched_wait(s, t[2], outer), 1);
    CHECK_EQ(cot_sched_notify(s, A, COT_LATER), 1); /* any fires, all counts A */
    CHECK(strcmp(READY(s), "10") == 0);
    CHECK_EQ(cot_sched_notify(s, B, COT_LATER), 1); /* all fires */
    CHECK(strcmp(READY(s), "102") == 0);

    CHECK_EQ(cot_sched_combined_free(s, any), COT_EBUSY); /* part of outer */
    CHECK_EQ(cot_sched_combined_free(s, outer), 0);
    CHECK_EQ(cot_sched_combined_free(s, any), 0);
    CHECK_EQ(cot_sched_combined_free(s, any), COT_EINVAL);
    CHECK_EQ(cot_sched_reset(s, any), COT_EINVAL);
    CHECK_EQ(cot_sched_unschedule(s, t[0]), 1);
    CHECK_EQ(cot_sched_wait(s, t[0], all), 1);
    CHECK_EQ(cot_sched_combined_free(s, all), COT_EBUSY); /* has a waiter */
    CHECK_EQ(cot_sched_free(s), 0);                        /* frees it anyway */
}

static int hook_calls;
static void hook(void *data, const void *signal, int active) {
    cot_sched *s = data;
    (void)signal;
    (void)active;
    hook_calls++;
    /* Calls back into the scheduler from its own callback are refused. */
    CHECK_EQ(cot_sched_notify(s, B, COT_LATER), COT_EBUSY);
    CHECK_EQ(cot_sched_free(s), COT_EBUSY);
    CHECK_EQ(cot_sched_now(s), 0);
}

static void test_hook_and_reentry(void) {
    cot_sched *s = cot_sched_new();
    CHECK_EQ(cot_sched_set_signal_hook(s, hook, s), 0);
    cot_task t = task(s, 0);
    CHECK_EQ(cot_sched_wait(s, t, A), 1);
    CHECK_EQ(hook_calls, 1);
    CHECK_EQ(cot_sched_notify(s, A, COT_LATER), 1);
    CHECK_EQ(hook_calls, 2);
    CHECK_EQ(cot_sched_set_signal_hook(s, NULL, NULL), 0);
    CHECK_EQ(cot_sched_unschedule(s, t), 1);
    CHECK_EQ(cot_sched_wait(s, t, A), 1);
    CHECK_EQ(hook_calls, 2);
    CHECK_EQ(cot_sched_set_clock(s, NULL, NULL), 0); /* back to monotonic */
    CHECK(cot_sched_now(s) > 0);
    CHECK_EQ(cot_sched_free(s), 0);
}

static void test_version_and_errors(void) {
    CHECK_EQ(cot_version(), (COT_VERSION_MAJOR << 16) | (COT_VERSION_MINOR << 8) | COT_VERSION_PATCH);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", COT_VERSION_MAJOR, COT_VERSION_MINOR, COT_VERSION_PATCH);
    CHECK(strcmp(cot_version_string(), v) == 0);
    CHECK(strcmp(cot_strerror(COT_EINVAL), "invalid argument") == 0);
    CHECK(strcmp(cot_err_name(COT_EBUSY), "COT_EBUSY") == 0);
    CHECK(strcmp(cot_strerror(12345), "unknown error") == 0);
    CHECK(strcmp(cot_strerror(COT_ECANCELED), "operation canceled") == 0);
    CHECK(strcmp(cot_err_name(COT_ENOMEM), "COT_ENOMEM") == 0);
}

int main(void) {
    test_version_and_errors();
    test_ready_queue();
    test_signals();
    test_default_clock_is_monotonic();
    test_combined();
    test_hook_and_reentry();
    puts("test_sched ok");
    return 0;
}
