/* Work on the loop's thread pool through the C ABI: results, cancel before
 * start, exactly one after-callback per request, bad input. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"

#define JOBS 64

static pthread_t loop_thread;
static atomic_int ran;
static int after_calls[JOBS], statuses[JOBS];

static void work(void *data) {
    CHECK(!pthread_equal(pthread_self(), loop_thread)); /* on a pool thread */
    atomic_fetch_add(&ran, 1);
    (void)data;
}

static void after(cot_loop *loop, cot_req req, int status, void *data) {
    (void)loop;
    (void)req;
    CHECK(pthread_equal(pthread_self(), loop_thread)); /* on the loop */
    int i = (int)(intptr_t)data;
    after_calls[i]++;
    statuses[i] = status;
}

static void test_many_jobs(void) {
    cot_loop *loop = cot_loop_new();
    for (intptr_t i = 0; i < JOBS; i++) CHECK_EQ(cot_work_submit(loop, work, after, (void *)i, NULL), 0);
    CHECK_EQ(cot_loop_alive(loop), 1);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(atomic_load(&ran), JOBS);
    for (int i = 0; i < JOBS; i++) {
        CHECK_EQ(after_calls[i], 1);
        CHECK_EQ(statuses[i], 0);
    }
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* A one-thread pool kept busy by a job that waits for a flag, so the next
 * job is still queued when cancelled. */
static atomic_int release_first, first_started;
static void blocking(void *data) {
    (void)data;
    atomic_store(&first_started, 1);
    while (!atomic_load(&release_first)) sched_yield();
}
static void never(void *data) {
    (void)data;
    CHECK(!"a cancelled job ran");
}
static int order[2], norder;
static void after_cancel(cot_loop *loop, cot_req req, int status, void *data) {
    (void)loop;
    (void)req;
    order[norder++] = (int)(intptr_t)data;
    if ((intptr_t)data == 2) {
        CHECK_EQ(status, COT_ECANCELED);
        atomic_store(&release_first, 1);
    } else {
        CHECK_EQ(status, 0);
    }
}

static void test_cancel(void) {
    cot_loop *loop = cot_loop_new();
    CHECK_EQ(cot_loop_set_pool_size(loop, 0), COT_EINVAL);
    CHECK_EQ(cot_loop_set_pool_size(loop, 1), 0);
    cot_req first, second;
    CHECK_EQ(cot_work_submit(loop, blocking, after_cancel, (void *)1, &first), 0);
    CHECK_EQ(cot_loop_set_pool_size(loop, 2), COT_EBUSY); /* too late */
    CHECK_EQ(cot_work_submit(loop, never, after_cancel, (void *)2, &second), 0);
    while (!atomic_load(&first_started)) sched_yield();
    CHECK_EQ(cot_work_cancel(loop, first), COT_EBUSY); /* running */
    CHECK_EQ(cot_work_cancel(loop, second), 0);
    CHECK_EQ(norder, 0); /* the callback never runs inside cancel */
    CHECK_EQ(cot_work_cancel(loop, second), COT_EBUSY);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(norder, 2);
    CHECK_EQ(order[0], 2); /* the cancelled one first: it released the other */
    CHECK_EQ(order[1], 1);
    CHECK_EQ(cot_work_cancel(loop, first), COT_EINVAL); /* done */
    CHECK_EQ(cot_loop_close(loop), 0);
}

static void test_bad_input(void) {
    cot_loop *loop = cot_loop_new();
    cot_req r;
    CHECK_EQ(cot_work_submit(NULL, work, after, NULL, &r), COT_EINVAL);
    CHECK_EQ(cot_work_submit(loop, NULL, after, NULL, &r), COT_EINVAL);
    CHECK_EQ(cot_work_submit(loop, work, NULL, NULL, &r), COT_EINVAL);
    CHECK_EQ(cot_work_cancel(loop, 0), COT_EINVAL);
    CHECK_EQ(cot_work_cancel(loop, 12345), COT_EINVAL);
    CHECK_EQ(cot_work_cancel(NULL, 1), COT_EINVAL);
    CHECK_EQ(cot_loop_set_pool_size(NULL, 1), COT_EINVAL);
    CHECK_EQ(cot_loop_close(loop), 0);
}

int main(void) {
    loop_thread = pthread_self();
    test_many_jobs();
    test_cancel();
    test_bad_input();
    puts("test_work ok");
    return 0;
}
