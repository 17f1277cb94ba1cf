/* Futures through the C ABI: settling once (first wins, the value's
 * destructor run exactly once, a refused value left to the caller), errors
 * and dropped promises, blocking waits with timeouts, callbacks and their
 * cancellation, loop requests, loop tasks and stackful coroutines awaiting a
 * future settled on other threads, and bad input everywhere. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "check.h"

static atomic_int destroyed;
static void destroy(void *value) {
    (void)value;
    atomic_fetch_add(&destroyed, 1);
}

static void test_settle_once(void) {
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    CHECK_EQ(cot_future_state(f), COT_FUTURE_PENDING);
    CHECK_EQ(cot_future_result(f, NULL, NULL), COT_EBUSY);
    CHECK_EQ(cot_promise_settled(p), 0);
    static int a, b;
    atomic_store(&destroyed, 0);
    CHECK_EQ(cot_promise_set(p, &a, destroy), 0);
    CHECK_EQ(cot_promise_set(p, &b, destroy), COT_EALREADY);
    CHECK_EQ(atomic_load(&destroyed), 0); /* the refused value is still ours */
    CHECK_EQ(cot_promise_fail(p, COT_EIO, "late"), COT_EALREADY);
    CHECK_EQ(cot_promise_settled(p), 1);
    void *v = NULL;
    const char *msg = "unchanged";
    CHECK_EQ(cot_future_result(f, &v, &msg), 0);
    CHECK(v == &a);
    CHECK(msg == NULL);
    CHECK_EQ(cot_future_state(f), COT_FUTURE_VALUE);

    cot_future *g = cot_future_clone(f);
    cot_promise *q = cot_promise_clone(p);
    cot_future *h = cot_promise_future(p);
    cot_future_free(f);
    cot_promise_free(p);
    cot_future_free(h);
    cot_promise_free(q);
    CHECK_EQ(atomic_load(&destroyed), 0); /* g still holds it */
    CHECK_EQ(cot_future_result(g, &v, NULL), 0);
    CHECK(v == &a);
    cot_future_free(g);
    CHECK_EQ(atomic_load(&destroyed), 1); /* with the last handle, once */
}

static void test_error_and_dropped(void) {
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    CHECK_EQ(cot_promise_fail(p, 5, "positive"), COT_EINVAL); /* codes are negative */
    CHECK_EQ(cot_future_state(f), COT_FUTURE_PENDING);
    CHECK_EQ(cot_promise_fail(p, -1000, "it broke"), 0);
    const char *msg = NULL;
    void *v = &msg;
    CHECK_EQ(cot_future_result(f, &v, &msg), -1000);
    CHECK(v == NULL);
    CHECK(strcmp(msg, "it broke") == 0);
    CHECK_EQ(cot_future_state(f), COT_FUTURE_ERROR);
    cot_promise_free(p);
    cot_future_free(f);

    CHECK_EQ(cot_promise_new(&p, &f), 0);
    CHECK_EQ(cot_promise_fail(p, COT_EIO, NULL), 0); /* NULL message: empty */
    CHECK_EQ(cot_future_result(f, NULL, &msg), COT_EIO);
    CHECK(strcmp(msg, "") == 0);
    cot_promise_free(p);
    cot_future_free(f);

    CHECK_EQ(cot_promise_new(&p, &f), 0);
    cot_promise *q = cot_promise_clone(p);
    cot_promise_free(p);
    CHECK_EQ(cot_future_state(f), COT_FUTURE_PENDING); /* a clone lives */
    cot_promise_free(q);
    CHECK_EQ(cot_future_state(f), COT_FUTURE_DROPPED);
    CHECK_EQ(cot_future_result(f, NULL, &msg), COT_EDROPPED);
    CHECK(strcmp(msg, cot_strerror(COT_EDROPPED)) == 0);
    cot_future_free(f);
}

/* ---- callbacks ------------------------------------------------------- */

static int order[8], norder;
static void record(const cot_future *f, void *data) {
    CHECK(cot_future_state(f) != COT_FUTURE_PENDING);
    order[norder++] = (int)(intptr_t)data;
}

static void test_callbacks(void) {
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    uint64_t id[3];
    norder = 0;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(cot_future_on_ready(f, record, (void *)(intptr_t)(i + 1), &id[i]), 0);
        CHECK(id[i] != 0);
    }
    CHECK_EQ(cot_future_cancel(f, id[1]), 0);
    CHECK_EQ(cot_future_cancel(f, id[1]), COT_EBUSY);
    CHECK_EQ(cot_future_cancel(f, 0), COT_EINVAL);
    cot_future_free(f); /* the waiters stay */
    CHECK_EQ(norder, 0);
    cot_promise_free(p); /* dropped: the waiters run here, oldest first */
    CHECK_EQ(norder, 2);
    CHECK_EQ(order[0], 1);
    CHECK_EQ(order[1], 3);

    CHECK_EQ(cot_promise_new(&p, &f), 0);
    CHECK_EQ(cot_promise_fail(p, COT_EIO, "x"), 0);
    uint64_t late = 99;
    CHECK_EQ(cot_future_on_ready(f, record, (void *)(intptr_t)7, &late), 1); /* settled: runs now */
    CHECK_EQ(late, 0);
    CHECK_EQ(norder, 3);
    CHECK_EQ(order[2], 7);
    cot_promise_free(p);
    cot_future_free(f);
}

/* ---- blocking waits and threads -------------------------------------- */

static void *settle_later(void *arg) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
    static int value;
    CHECK_EQ(cot_promise_set(arg, &value, NULL), 0);
    return NULL;
}

static void test_blocking_wait(void) {
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    CHECK_EQ(cot_future_wait(f, 0), COT_ETIMEDOUT);
    uint64_t t0 = cot_monotonic_ns();
    CHECK_EQ(cot_future_wait(f, 20 * 1000 * 1000), COT_ETIMEDOUT);
    CHECK(cot_monotonic_ns() - t0 >= 20 * 1000 * 1000);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, settle_later, p), 0);
    CHECK_EQ(cot_future_wait(f, COT_FOREVER), 0);
    CHECK_EQ(cot_future_state(f), COT_FUTURE_VALUE);
    CHECK_EQ(pthread_join(t, NULL), 0);
    cot_promise_free(p);
    cot_future_free(f);
}

#define RACERS 4
static atomic_int wins;
static void *race(void *arg) {
    static int values[RACERS];
    int i = (int)(intptr_t)((void **)arg)[1];
    if (cot_promise_set(((void **)arg)[0], &values[i], destroy) == 0) atomic_fetch_add(&wins, 1);
    return NULL;
}

static void test_race(void) {
    for (int round = 0; round < 20; round++) {
        cot_promise *p;
        cot_future *f;
        CHECK_EQ(cot_promise_new(&p, &f), 0);
        atomic_store(&wins, 0);
        atomic_store(&destroyed, 0);
        pthread_t t[RACERS];
        void *args[RACERS][2];
        for (int i = 0; i < RACERS; i++) {
            args[i][0] = cot_promise_clone(p);
            args[i][1] = (void *)(intptr_t)i;
            CHECK_EQ(pthread_create(&t[i], NULL, race, args[i]), 0);
        }
        CHECK_EQ(cot_future_wait(f, COT_FOREVER), 0);
        for (int i = 0; i < RACERS; i++) {
            CHECK_EQ(pthread_join(t[i], NULL), 0);
            cot_promise_free(args[i][0]);
        }
        CHECK_EQ(atomic_load(&wins), 1);
        cot_promise_free(p);
        CHECK_EQ(atomic_load(&destroyed), 0);
        cot_future_free(f);
        CHECK_EQ(atomic_load(&destroyed), 1);
    }
}

/* ---- on a loop ------------------------------------------------------- */

static int waited[4], nwaited;
static void on_wait(cot_loop *loop, cot_req req, const cot_future *f, int status, void *data) {
    (void)loop;
    (void)req;
    (void)data;
    CHECK(status == 0 ? cot_future_state(f) != COT_FUTURE_PENDING : status == COT_ECANCELED);
    waited[nwaited++] = status;
}

static void test_loop_wait(void) {
    cot_loop *loop = cot_loop_new();
    CHECK(loop != NULL);
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    cot_req a, b;
    nwaited = 0;
    CHECK_EQ(cot_loop_future_wait(loop, f, on_wait, NULL, &a), 0);
    CHECK_EQ(cot_loop_future_wait(loop, f, on_wait, NULL, &b), 0);
    cot_future_free(f); /* each request holds its own handle */
    CHECK_EQ(cot_req_cancel(loop, a), 0);
    CHECK_EQ(nwaited, 0); /* never inside cancel */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1);
    CHECK_EQ(nwaited, 1);
    CHECK_EQ(waited[0], COT_ECANCELED);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, settle_later, p), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0); /* kept alive until settled */
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(nwaited, 2);
    CHECK_EQ(waited[1], 0);
    CHECK_EQ(cot_req_cancel(loop, b), COT_EINVAL); /* finished */
    cot_promise_free(p);
    CHECK_EQ(cot_loop_close(loop), 0);
}

static int task_wakes[4], ntask_wakes;
static cot_future *task_future;
static void task_cb(cot_loop *loop, cot_handle task, int wake, int events, void *data) {
    (void)events;
    (void)data;
    task_wakes[ntask_wakes++] = wake;
    if (ntask_wakes == 1) CHECK_EQ(cot_loop_task_future(loop, task, task_future), 0);
    else CHECK_EQ(cot_close(loop, task, NULL), 0);
}

static void test_loop_task(void) {
    cot_loop *loop = cot_loop_new();
    cot_promise *p;
    CHECK_EQ(cot_promise_new(&p, &task_future), 0);
    cot_handle task;
    CHECK_EQ(cot_loop_task_init(loop, task_cb, NULL, &task), 0);
    CHECK_EQ(cot_loop_task_schedule(loop, task, COT_LATER), 1);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1);
    CHECK_EQ(ntask_wakes, 1);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, settle_later, p), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(ntask_wakes, 2);
    CHECK_EQ(task_wakes[1], COT_WAKE_SETTLED);
    CHECK_EQ(cot_loop_task_future(loop, task, NULL), COT_EINVAL);
    cot_promise_free(p);
    cot_future_free(task_future);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ---- stackful coroutines --------------------------------------------- */

struct awaiter {
    cot_future *f;
    int first, second;
};

static void *await_twice(void *arg) {
    struct awaiter *a = arg;
    a->first = cot_coro_await(a->f, 5 * 1000 * 1000); /* times out */
    a->second = cot_coro_await(a->f, COT_CORO_FOREVER);
    return NULL;
}

static void pool_settle(void *data, int status) {
    CHECK_EQ(status, 0);
    settle_later(data);
}

static void test_coro_await(void) {
    cot_loop *loop = cot_loop_new();
    cot_pool *pool = cot_pool_new(1);
    cot_promise *p;
    struct awaiter a = {0};
    CHECK_EQ(cot_promise_new(&p, &a.f), 0);
    cot_coro *co;
    CHECK_EQ(cot_coro_new(loop, await_twice, &a, 0, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1);
    /* Settled on a pool thread after the first wait timed out. */
    struct timespec ts = {0, 8 * 1000 * 1000};
    nanosleep(&ts, NULL);
    CHECK_EQ(cot_pool_submit(pool, pool_settle, p), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(a.first, COT_ETIMEDOUT);
    CHECK_EQ(a.second, 0);
    CHECK_EQ(cot_future_state(a.f), COT_FUTURE_VALUE);
    /* Settled already: no suspension. Outside a coroutine: refused. */
    CHECK_EQ(cot_coro_await(a.f, 0), COT_EPERM);
    CHECK_EQ(cot_coro_free(co), 0);
    cot_pool_free(pool);
    cot_promise_free(p);
    cot_future_free(a.f);
    CHECK_EQ(cot_loop_close(loop), 0);
}

static void test_bad_input(void) {
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(NULL, &f), COT_EINVAL);
    CHECK_EQ(cot_promise_new(&p, NULL), COT_EINVAL);
    CHECK(cot_promise_clone(NULL) == NULL);
    CHECK(cot_promise_future(NULL) == NULL);
    CHECK(cot_future_clone(NULL) == NULL);
    cot_promise_free(NULL);
    cot_future_free(NULL);
    CHECK_EQ(cot_promise_set(NULL, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_promise_fail(NULL, -1, "x"), COT_EINVAL);
    CHECK_EQ(cot_promise_settled(NULL), COT_EINVAL);
    CHECK_EQ(cot_future_state(NULL), COT_EINVAL);
    CHECK_EQ(cot_future_result(NULL, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_future_wait(NULL, 0), COT_EINVAL);
    CHECK_EQ(cot_future_on_ready(NULL, record, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_future_cancel(NULL, 1), COT_EINVAL);
    CHECK_EQ(cot_coro_await(NULL, 0), COT_EINVAL);
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    CHECK_EQ(cot_future_on_ready(f, NULL, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_loop_future_wait(NULL, f, on_wait, NULL, NULL), COT_EINVAL);
    cot_loop *loop = cot_loop_new();
    CHECK_EQ(cot_loop_future_wait(loop, NULL, on_wait, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_loop_future_wait(loop, f, NULL, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_req_cancel(loop, 0), COT_EINVAL);
    CHECK_EQ(cot_req_cancel(loop, 12345), COT_EINVAL);
    CHECK_EQ(cot_loop_task_future(loop, 0, f), COT_EINVAL);
    CHECK_EQ(cot_loop_close(loop), 0);
    cot_promise_free(p);
    cot_future_free(f);
}

int main(void) {
    test_settle_once();
    test_error_and_dropped();
    test_callbacks();
    test_blocking_wait();
    test_race();
    test_loop_wait();
    test_loop_task();
    test_coro_await();
    test_bad_input();
    puts("test_future: ok");
    return 0;
}
