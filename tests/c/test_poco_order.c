/* poco-compatible API: the scheduling order, primitive by primitive. Each
 * scenario logs what its coroutines do; the expected logs are what poco
 * 3026877's round-robin scheduler prints for the same program (this file
 * builds against poco's own headers too, and was checked against it). The
 * rules at work: the pick is cyclic from the slot after the one that ran
 * last; every operation that may wake somebody yields afterwards
 * (CORO_SIG_NOTIFY), the _no_wait and _from_isr forms do not; a woken
 * coroutine is ready at the next pick; coro_join of a finished coroutine
 * yields. No timing is involved, so the order is exact. */
#include <poco/coro_raw.h>
#include <poco/mutex.h>
#include <poco/poco.h>
#include <stdint.h>

#include "check.h"
#include "poco_log.h"

static void run(CoroEntrypoint *fns, void **ctx, size_t n) {
    Coro *t[8] = {0};
    CHECK(n <= 8);
    for (size_t i = 0; i < n; ++i) {
        t[i] = coro_create(fns[i], ctx != NULL ? ctx[i] : NULL, DEFAULT_STACK_SIZE);
        CHECK(t[i] != NULL);
    }
    Scheduler *s = round_robin_scheduler_create(t, n);
    CHECK(s != NULL);
    scheduler_run(s);
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    for (size_t i = 0; i < n; ++i) {
        coro_free(t[i]);
    }
}

static void ticker(void *ctx) {
    for (int i = 0; i < 4; ++i) {
        LOG("%s%d\n", (char const *)ctx, i);
        coro_yield();
    }
}

/* ---- a queue of one item: put and get yield; the putter waits when full */
static Queue q1;
static uint8_t q1_buf[sizeof(int)];

static void q_producer(void *ctx) {
    (void)ctx;
    for (int i = 0; i < 3; ++i) {
        LOG("put %d\n", i);
        CHECK_EQ(queue_put(&q1, &i, PLATFORM_TICKS_FOREVER), RES_OK);
        LOG("put %d done\n", i);
    }
}

static void q_consumer(void *ctx) {
    (void)ctx;
    for (int i = 0; i < 3; ++i) {
        int v = -1;
        CHECK_EQ(queue_get(&q1, &v, PLATFORM_TICKS_FOREVER), RES_OK);
        LOG("got %d\n", v);
    }
}

static void queue_order(void) {
    queue_create_static(&q1, 1, sizeof(int), q1_buf);
    CoroEntrypoint f[] = {q_producer, q_consumer, ticker};
    void *c[] = {NULL, NULL, "t"};
    run(f, c, 3);
    EXPECT_LOG("put 0\n"
               "t0\n"
               "put 0 done\n"
               "put 1\n"
               "got 0\n"
               "t1\n"
               "put 1 done\n"
               "put 2\n"
               "got 1\n"
               "t2\n"
               "put 2 done\n"
               "got 2\n"
               "t3\n");
}

/* ---- a semaphore of two slots, three workers: release yields */
static Semaphore sem2;

static void sem_worker(void *ctx) {
    char const *name = ctx;
    CHECK_EQ(semaphore_acquire(&sem2, PLATFORM_TICKS_FOREVER), RES_OK);
    LOG("%s in\n", name);
    coro_yield();
    LOG("%s out\n", name);
    CHECK_EQ(semaphore_release(&sem2), RES_OK);
    LOG("%s after release\n", name);
}

static void semaphore_order(void) {
    semaphore_create_static(&sem2, 2);
    CoroEntrypoint f[] = {sem_worker, sem_worker, sem_worker};
    void *c[] = {"a", "b", "c"};
    run(f, c, 3);
    EXPECT_LOG("a in\n"
               "b in\n"
               "a out\n"
               "b out\n"
               "c in\n"
               "a after release\n"
               "b after release\n"
               "c out\n"
               "c after release\n");
}

/* ---- a mutex: the holder yields, a waiter waits, release yields */
static Mutex mtx;

static void mtx_user(void *ctx) {
    char const *name = ctx;
    CHECK_EQ(mutex_acquire(&mtx, PLATFORM_TICKS_FOREVER), RES_OK);
    LOG("%s holds\n", name);
    coro_yield();
    coro_yield();
    LOG("%s releases\n", name);
    CHECK_EQ(mutex_release(&mtx), RES_OK);
    LOG("%s released\n", name);
}

static void mutex_order(void) {
    mutex_create_static(&mtx);
    CoroEntrypoint f[] = {mtx_user, ticker, mtx_user};
    void *c[] = {"a", "t", "b"};
    run(f, c, 3);
    EXPECT_LOG("a holds\n"
               "t0\n"
               "t1\n"
               "a releases\n"
               "t2\n"
               "b holds\n"
               "a released\n"
               "t3\n"
               "b releases\n"
               "b released\n");
}

/* ---- events: event_set yields, event_set_no_wait and _from_isr do not */
static Event ev;

static void ev_waiter(void *ctx) {
    (void)ctx;
    for (int i = 0; i < 3; ++i) {
        Flags f = event_get(&ev, 0x7, 0x7, false, PLATFORM_TICKS_FOREVER);
        LOG("waiter got %#x\n", (unsigned)f);
    }
}

static void ev_setter(void *ctx) {
    (void)ctx;
    LOG("set\n");
    event_set(&ev, 0x1);
    LOG("set no_wait\n");
    CHECK_EQ(event_set_no_wait(&ev, 0x2), RES_OK);
    LOG("after no_wait\n");
    coro_yield();
    LOG("set from_isr\n");
    CHECK_EQ(event_set_from_isr(&ev, 0x4), RES_OK);
    LOG("after from_isr\n");
    coro_yield();
    LOG("setter done\n");
}

static void event_order(void) {
    event_create_static(&ev, 0);
    CoroEntrypoint f[] = {ev_waiter, ev_setter, ticker};
    void *c[] = {NULL, NULL, "t"};
    run(f, c, 3);
    EXPECT_LOG("set\n"
               "t0\n"
               "waiter got 0x1\n"
               "set no_wait\n"
               "after no_wait\n"
               "t1\n"
               "waiter got 0x2\n"
               "set from_isr\n"
               "after from_isr\n"
               "t2\n"
               "waiter got 0x4\n"
               "setter done\n"
               "t3\n");
}

/* ---- joining: a join of a finished coroutine yields too */
static Coro *short_one;

static void short_fn(void *ctx) {
    (void)ctx;
    LOG("short runs\n");
}

static void joiner(void *ctx) {
    (void)ctx;
    LOG("join 1\n");
    coro_join(short_one);
    LOG("joined 1\n");
    coro_join(short_one);
    LOG("joined 2\n");
}

static void join_order(void) {
    Coro *t[3] = {
        coro_create(joiner, NULL, DEFAULT_STACK_SIZE),
        coro_create(ticker, "t", DEFAULT_STACK_SIZE),
        coro_create(short_fn, NULL, DEFAULT_STACK_SIZE),
    };
    short_one = t[2];
    Scheduler *s = round_robin_scheduler_create(t, 3);
    scheduler_run(s);
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    for (int i = 0; i < 3; ++i) {
        coro_free(t[i]);
    }
    EXPECT_LOG("join 1\n"
               "t0\n"
               "short runs\n"
               "joined 1\n"
               "t1\n"
               "joined 2\n"
               "t2\n"
               "t3\n");
}

/* ---- a stream: send and receive yield when they moved bytes */
static Stream st;
static uint8_t st_buf[8];

static void st_sender(void *ctx) {
    (void)ctx;
    for (int i = 0; i < 2; ++i) {
        size_t n = 3;
        uint8_t b[3] = {(uint8_t)('a' + 3 * i), (uint8_t)('b' + 3 * i), (uint8_t)('c' + 3 * i)};
        LOG("send %d\n", i);
        CHECK_EQ(stream_send(&st, b, &n, PLATFORM_TICKS_FOREVER), RES_OK);
        LOG("sent %zu\n", n);
    }
}

static void st_receiver(void *ctx) {
    (void)ctx;
    for (int i = 0; i < 2; ++i) {
        uint8_t b[4] = {0};
        size_t n = 3;
        CHECK_EQ(stream_receive(&st, b, &n, PLATFORM_TICKS_FOREVER), RES_OK);
        LOG("received %s\n", (char *)b);
    }
}

static void stream_order(void) {
    stream_create_static(&st, sizeof st_buf, st_buf);
    CoroEntrypoint f[] = {st_receiver, ticker, st_sender};
    void *c[] = {NULL, "t", NULL};
    run(f, c, 3);
    EXPECT_LOG("t0\n"
               "send 0\n"
               "t1\n"
               "sent 3\n"
               "send 1\n"
               "received abc\n"
               "t2\n"
               "sent 3\n"
               "received def\n"
               "t3\n");
}

/* ---- free slots: the list order, with a coroutine added into a free slot
 * before the run and one added by a coroutine during it */
static RoundRobinScheduler *added_to;

static void adder(void *ctx) {
    (void)ctx;
    LOG("adder\n");
    Coro *late = coro_create(ticker, "l", DEFAULT_STACK_SIZE);
    CHECK_EQ(round_robin_scheduler_add_coro(added_to, late), RES_OK);
    coro_yield();
    LOG("adder again\n");
}

static void slot_order(void) {
    Coro *t[5] = {
        coro_create(adder, NULL, DEFAULT_STACK_SIZE),
        NULL,
        coro_create(ticker, "a", DEFAULT_STACK_SIZE),
        NULL,
        NULL,
    };
    Scheduler *s = round_robin_scheduler_create(t, 5);
    added_to = (RoundRobinScheduler *)s;
    CHECK_EQ(round_robin_scheduler_add_coro(added_to, coro_create(ticker, "b", DEFAULT_STACK_SIZE)),
             RES_OK); /* slot 1 */
    scheduler_run(s);
    EXPECT_LOG("adder\n"
               "b0\n"
               "a0\n"
               "l0\n"
               "adder again\n"
               "b1\n"
               "a1\n"
               "l1\n"
               "b2\n"
               "a2\n"
               "l2\n"
               "b3\n"
               "a3\n"
               "l3\n");
    for (size_t i = 0; i < 5; ++i) {
        Coro *c = added_to->tasks[i];
        round_robin_scheduler_remove_coro(added_to, c);
        coro_free(c);
    }
    round_round_robin_scheduler_free(added_to);
}

int main(void) {
    queue_order();
    semaphore_order();
    mutex_order();
    event_order();
    join_order();
    stream_order();
    slot_order();
    printf("test_poco_order: ok\n");
    return 0;
}
