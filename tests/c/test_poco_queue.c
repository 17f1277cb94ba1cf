/* poco-compatible API: queues. Known output: a producer/consumer pair over a
 * queue of 3 that overflows (the producer waits while it is full), the
 * _no_wait forms, timeouts on an empty and a full queue. */
#include <poco/poco.h>
#include <poco/queue_raw.h>

#include "check.h"
#include "poco_log.h"

static void producer(void *ctx) {
    Queue *q = ctx;
    for (int i = 0; i < 6; ++i) {
        Result r = queue_put(q, &i, PLATFORM_TICKS_FOREVER);
        LOG("put %d: %s, %zu queued\n", i, r == RES_OK ? "ok" : "?", queue_item_count(q));
    }
}

static void consumer(void *ctx) {
    Queue *q = ctx;
    /* Let the producer fill the queue first. */
    for (int i = 0; i < 4; ++i) {
        coro_yield();
    }
    LOG("full: %d\n", queue_is_full(q));
    int v = -1;
    for (int i = 0; i < 6; ++i) {
        Result r = queue_get(q, &v, PLATFORM_TICKS_FOREVER);
        LOG("got %d: %s\n", v, r == RES_OK ? "ok" : "?");
    }
    LOG("empty: %d\n", queue_is_empty(q));
    CHECK_EQ(queue_get(q, &v, 10), RES_TIMEOUT);
    CHECK_EQ(queue_get_no_wait(q, &v), RES_QUEUE_EMPTY);
}

static void producer_consumer(void) {
    Queue *q = queue_create(3, sizeof(int));
    CHECK(q != NULL);
    Coro *t[] = {
        coro_create(producer, q, DEFAULT_STACK_SIZE),
        coro_create(consumer, q, DEFAULT_STACK_SIZE),
    };
    Scheduler *s = round_robin_scheduler_create(t, 2);
    scheduler_run(s);
    /* Each put and get yields after it (CORO_SIG_NOTIFY): once the queue is
     * full, the producer's put completes, it yields, and the consumer takes
     * the next item before the producer logs, hence "2 queued". */
    EXPECT_LOG("put 0: ok, 1 queued\n"
               "put 1: ok, 2 queued\n"
               "put 2: ok, 3 queued\n"
               "full: 1\n"
               "got 0: ok\n"
               "put 3: ok, 2 queued\n"
               "got 1: ok\n"
               "put 4: ok, 2 queued\n"
               "got 2: ok\n"
               "put 5: ok, 2 queued\n"
               "got 3: ok\n"
               "got 4: ok\n"
               "got 5: ok\n"
               "empty: 1\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(t[0]);
    coro_free(t[1]);
    queue_free(q);
}

static void overflow_coro(void *ctx) {
    Queue *q = ctx;
    char c = 'a';
    CHECK_EQ(queue_put_no_wait(q, &c), RES_OK);
    c = 'b';
    CHECK_EQ(queue_put_no_wait(q, &c), RES_OK);
    c = 'c';
    CHECK_EQ(queue_put_no_wait(q, &c), RES_QUEUE_FULL);
    CHECK_EQ(queue_put(q, &c, 5), RES_TIMEOUT);
    CHECK_EQ(queue_put(q, &c, 0), RES_TIMEOUT); /* waits one tick */
    CHECK_EQ(queue_get_no_wait(q, &c), RES_OK);
    LOG("%c", c);
    CHECK_EQ(queue_raw_get(q, &c), RES_OK);
    LOG("%c\n", c);
    CHECK_EQ(queue_raw_get(q, &c), RES_QUEUE_EMPTY);
    CHECK_EQ(queue_raw_put(q, &c), RES_OK);
    CHECK_EQ(queue_item_count(q), 1);
}

static void overflow(void) {
    Queue q;
    uint8_t buf[2];
    CHECK(queue_create_static(&q, 2, 1, buf) == &q);
    CHECK(queue_create_static(&q, 0, 1, buf) == NULL);
    queue_create_static(&q, 2, 1, buf);
    Coro *t[] = {coro_create(overflow_coro, &q, DEFAULT_STACK_SIZE)};
    Scheduler *s = round_robin_scheduler_create(t, 1);
    scheduler_run(s);
    EXPECT_LOG("ab\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(t[0]);
}

int main(void) {
    producer_consumer();
    overflow();
    printf("test_poco_queue: ok\n");
    return 0;
}
