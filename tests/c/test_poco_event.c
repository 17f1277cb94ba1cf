/* poco-compatible API: event flags. Known output: wait-for-any and
 * wait-for-all, clear masks, timeouts (timeout 0 waits one tick), _no_wait,
 * only the event's waiters woken. */
#define _POSIX_C_SOURCE 200809L
#include <poco/poco.h>
#include <time.h>

#include "check.h"
#include "poco_log.h"

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static Event ev, other;

static void waiter_all(void *ctx) {
    (void)ctx;
    LOG("all waits\n");
    Flags f = event_get(&ev, 0x3, 0x3, true, PLATFORM_TICKS_FOREVER);
    LOG("all got %#x, left %#x\n", (unsigned)f, (unsigned)ev.flags);
}

static void waiter_any(void *ctx) {
    (void)ctx;
    LOG("any waits\n");
    Flags f = event_get(&ev, 0x5, 0x1, false, PLATFORM_TICKS_FOREVER);
    LOG("any got %#x\n", (unsigned)f);
}

static void other_waiter(void *ctx) {
    (void)ctx;
    /* Never woken by `ev`: it runs once more only when `other` is set. */
    Flags f = event_get(&other, 1, 1, false, PLATFORM_TICKS_FOREVER);
    LOG("other got %#x\n", (unsigned)f);
}

static void setter(void *ctx) {
    (void)ctx;
    LOG("set 4\n");
    event_set(&ev, 0x4);
    LOG("set 1\n");
    event_set(&ev, 0x1);
    LOG("set 2\n");
    event_set(&ev, 0x2);
    LOG("set other\n");
    event_set(&other, 1);
    LOG("setter done\n");
}

static void flags(void) {
    event_create_static(&ev, 0);
    event_create_static(&other, 0);
    Coro *t[] = {
        coro_create(waiter_all, NULL, DEFAULT_STACK_SIZE),
        coro_create(waiter_any, NULL, DEFAULT_STACK_SIZE),
        coro_create(other_waiter, NULL, DEFAULT_STACK_SIZE),
        coro_create(setter, NULL, DEFAULT_STACK_SIZE),
    };
    Scheduler *s = round_robin_scheduler_create(t, 4);
    scheduler_run(s);
    EXPECT_LOG("all waits\n"
               "any waits\n"
               "set 4\n"
               "any got 0x4\n"
               "set 1\n"
               "set 2\n"
               "all got 0x3, left 0x4\n"
               "set other\n"
               "other got 0x1\n"
               "setter done\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    for (int i = 0; i < 4; ++i) {
        coro_free(t[i]);
    }
}

static void timeouts_coro(void *ctx) {
    Event *e = ctx;
    int64_t t0 = now_ms();
    Flags f = event_get(e, 0x8, 0x8, false, 25);
    int64_t waited = now_ms() - t0;
    LOG("timeout got %#x\n", (unsigned)f);
    CHECK(waited >= 25);
    t0 = now_ms();
    f = event_get(e, 0x8, 0x8, false, 0);
    LOG("timeout 0 got %#x\n", (unsigned)f);
    CHECK(now_ms() - t0 >= 1);
    /* Set already: no wait. */
    f = event_get(e, 0x10, 0, false, 0);
    LOG("set got %#x\n", (unsigned)f);
    Flags first = event_get_no_wait(e, 0x30, 0x10);
    Flags second = event_get_no_wait(e, 0x30, 0);
    LOG("no_wait got %#x then %#x\n", (unsigned)first, (unsigned)second);
    CHECK_EQ(event_set_no_wait(e, 0x100), RES_OK);
    LOG("flags %#x\n", (unsigned)e->flags);
}

static void timeouts(void) {
    Event *e = event_create(0x10);
    CHECK(e != NULL);
    Coro *t[] = {coro_create(timeouts_coro, e, DEFAULT_STACK_SIZE)};
    Scheduler *s = round_robin_scheduler_create(t, 1);
    scheduler_run(s);
    EXPECT_LOG("timeout got 0\n"
               "timeout 0 got 0\n"
               "set got 0x10\n"
               "no_wait got 0x10 then 0\n"
               "flags 0x100\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(t[0]);
    event_free(e);
}

int main(void) {
    flags();
    timeouts();
    printf("test_poco_event: ok\n");
    return 0;
}
