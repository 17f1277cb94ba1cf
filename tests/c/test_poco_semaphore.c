/* poco-compatible API: semaphores. Known output: three workers on a
 * semaphore of two slots, a binary semaphore handing a turn back and forth,
 * overflow, _no_wait and timeouts. */
#include <poco/poco.h>

#include "check.h"
#include "poco_log.h"

static Semaphore sem;

static void worker(void *ctx) {
    char const *name = ctx;
    CHECK_EQ(semaphore_acquire(&sem, PLATFORM_TICKS_FOREVER), RES_OK);
    LOG("%s in (%zu left)\n", name, sem.slots_remaining);
    coro_yield();
    coro_yield();
    LOG("%s out\n", name);
    CHECK_EQ(semaphore_release(&sem), RES_OK);
}

static void counting(void) {
    CHECK(semaphore_create_static(&sem, 2) == &sem);
    Coro *t[] = {
        coro_create(worker, "a", DEFAULT_STACK_SIZE),
        coro_create(worker, "b", DEFAULT_STACK_SIZE),
        coro_create(worker, "c", DEFAULT_STACK_SIZE),
    };
    Scheduler *s = round_robin_scheduler_create(t, 3);
    scheduler_run(s);
    EXPECT_LOG("a in (1 left)\n"
               "b in (0 left)\n"
               "a out\n" /* wakes c, which runs after b: cyclic order */
               "b out\n"
               "c in (1 left)\n"
               "c out\n");
    CHECK_EQ(sem.slots_remaining, 2);
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    for (int i = 0; i < 3; ++i) {
        coro_free(t[i]);
    }
}

/* Ping-pong over two binary semaphores. */
static Semaphore *ping, *pong;

static void pinger(void *ctx) {
    (void)ctx;
    for (int i = 0; i < 3; ++i) {
        CHECK_EQ(semaphore_acquire(ping, PLATFORM_TICKS_FOREVER), RES_OK);
        LOG("ping %d\n", i);
        CHECK_EQ(semaphore_release(pong), RES_OK);
    }
}

static void ponger(void *ctx) {
    (void)ctx;
    for (int i = 0; i < 3; ++i) {
        CHECK_EQ(semaphore_acquire(pong, PLATFORM_TICKS_FOREVER), RES_OK);
        LOG("pong %d\n", i);
        CHECK_EQ(semaphore_release(ping), RES_OK);
    }
}

static void binary(void) {
    ping = semaphore_create_binary();
    pong = semaphore_create_binary();
    CHECK(ping != NULL && pong != NULL);
    CHECK_EQ(semaphore_acquire_no_wait(pong), RES_OK); /* pong starts taken */
    Coro *t[] = {
        coro_create(ponger, NULL, DEFAULT_STACK_SIZE),
        coro_create(pinger, NULL, DEFAULT_STACK_SIZE),
    };
    Scheduler *s = round_robin_scheduler_create(t, 2);
    scheduler_run(s);
    EXPECT_LOG("ping 0\npong 0\nping 1\npong 1\nping 2\npong 2\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(t[0]);
    coro_free(t[1]);
    semaphore_free(ping);
    semaphore_free(pong);
}

static void errors_coro(void *ctx) {
    Semaphore *b = ctx;
    CHECK_EQ(semaphore_release(b), RES_OVERFLOW); /* all slots free already */
    CHECK_EQ(semaphore_acquire_no_wait(b), RES_OK);
    CHECK_EQ(semaphore_acquire_no_wait(b), RES_SEMAPHORE_FULL);
    CHECK_EQ(semaphore_acquire(b, 5), RES_TIMEOUT);
    CHECK_EQ(semaphore_acquire(b, 0), RES_TIMEOUT);
    CHECK_EQ(semaphore_release_no_wait(b), RES_OK);
    CHECK_EQ(semaphore_acquire(b, 0), RES_OK);
    LOG("errors ok\n");
}

static void errors(void) {
    Semaphore b;
    CHECK(semaphore_create_binary_static(&b) == &b);
    CHECK(semaphore_create_static(&b, 0) == NULL);
    semaphore_create_binary_static(&b);
    Coro *t[] = {coro_create(errors_coro, &b, DEFAULT_STACK_SIZE)};
    Scheduler *s = round_robin_scheduler_create(t, 1);
    scheduler_run(s);
    EXPECT_LOG("errors ok\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(t[0]);
}

int main(void) {
    counting();
    binary();
    errors();
    printf("test_poco_semaphore: ok\n");
    return 0;
}
