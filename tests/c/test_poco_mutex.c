/* poco-compatible API: mutexes. Known output: ownership passing between
 * three coroutines, RES_MUTEX_NOT_OWNER for a release by another coroutine,
 * mutex_acquire_no_wait (which poco gets backwards), timeouts. */
#include <poco/poco.h>

#include "check.h"
#include "poco_log.h"

static Mutex mtx;
static Event thief_done; /* "a" holds the mutex until the thief timed out */

static void user(void *ctx) {
    char const *name = ctx;
    CHECK_EQ(mutex_acquire(&mtx, PLATFORM_TICKS_FOREVER), RES_OK);
    LOG("%s owns\n", name);
    event_get(&thief_done, 1, 0, false, PLATFORM_TICKS_FOREVER);
    LOG("%s releases\n", name);
    CHECK_EQ(mutex_release(&mtx), RES_OK);
}

static void thief(void *ctx) {
    (void)ctx;
    /* Held by "a" now. */
    LOG("thief: release %s\n", mutex_release(&mtx) == RES_MUTEX_NOT_OWNER ? "not owner" : "?");
    LOG("thief: no_wait %s\n", mutex_acquire_no_wait(&mtx) == RES_MUTEX_OCCUPIED ? "occupied" : "?");
    Result r = mutex_acquire(&mtx, 1);
    LOG("thief: timeout %s\n", r == RES_TIMEOUT ? "yes" : "no");
    if (r == RES_OK) {
        mutex_release(&mtx);
    }
    event_set(&thief_done, 1);
}

static void ownership(void) {
    CHECK(mutex_create_static(&mtx) == &mtx);
    event_create_static(&thief_done, 0);
    Coro *t[] = {
        coro_create(user, "a", DEFAULT_STACK_SIZE),
        coro_create(thief, NULL, DEFAULT_STACK_SIZE),
        coro_create(user, "b", DEFAULT_STACK_SIZE),
    };
    Scheduler *s = round_robin_scheduler_create(t, 3);
    scheduler_run(s);
    EXPECT_LOG("a owns\n"
               "thief: release not owner\n"
               "thief: no_wait occupied\n"
               "thief: timeout yes\n"
               "a releases\n"
               "b owns\n"
               "b releases\n");
    CHECK(mtx.owner == NULL);
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    for (int i = 0; i < 3; ++i) {
        coro_free(t[i]);
    }
}

static void no_wait_coro(void *ctx) {
    Mutex *m = ctx;
    CHECK_EQ(mutex_acquire_no_wait(m), RES_OK); /* free: taken (poco refuses) */
    CHECK_EQ(mutex_acquire_no_wait(m), RES_OK); /* ours already */
    CHECK_EQ(mutex_acquire(m, 0), RES_OK);
    CHECK_EQ(mutex_release(m), RES_OK);
    CHECK_EQ(mutex_release(m), RES_OK); /* free now: idempotent, as poco documents */
    CHECK(m->owner == NULL);
    LOG("no_wait ok\n");
}

static void no_wait(void) {
    Mutex *m = mutex_create();
    CHECK(m != NULL);
    Coro *t[] = {coro_create(no_wait_coro, m, DEFAULT_STACK_SIZE)};
    Scheduler *s = round_robin_scheduler_create(t, 1);
    scheduler_run(s);
    EXPECT_LOG("no_wait ok\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(t[0]);
    mutex_free(m);
}

int main(void) {
    ownership();
    no_wait();
    printf("test_poco_mutex: ok\n");
    return 0;
}
