/* Loop tasks awaiting operations through the C ABI: sleeps re-armed, work,
 * outside resumes, timeouts and signals, each task resumed once per wake. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <stdatomic.h>

#include "check.h"

#define MS 1000000ull
#define MAX_WAKES 8

struct record {
    int n;
    int wakes[MAX_WAKES];
};

static void note(struct record *r, int wake) {
    CHECK(r->n < MAX_WAKES);
    r->wakes[r->n++] = wake;
}

/* Sleeps twice, then ends. */
static void sleeper(cot_loop *loop, cot_handle task, int wake, void *data) {
    struct record *r = data;
    note(r, wake);
    if (r->n <= 2) CHECK_EQ(cot_loop_task_sleep(loop, task, 1 * MS), 0);
}

static void test_sleep(void) {
    cot_loop *loop = cot_loop_new();
    struct record r = {0};
    cot_handle t;
    CHECK_EQ(cot_loop_task_init(loop, sleeper, &r, &t), 0);
    CHECK_EQ(cot_loop_task_schedule(loop, t, COT_LATER), 1);
    CHECK_EQ(cot_loop_task_schedule(loop, t, COT_LATER), 0); /* already ready */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(r.n, 3);
    CHECK_EQ(r.wakes[0], COT_WAKE_RESUMED);
    CHECK_EQ(r.wakes[1], COT_WAKE_SLEPT);
    CHECK_EQ(r.wakes[2], COT_WAKE_SLEPT);
    CHECK_EQ(cot_close(loop, t, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

static atomic_int worked;
static void work(void *data) {
    (void)data;
    atomic_fetch_add(&worked, 1);
}

/* Awaits work with a timeout it will not need. */
static void worker(cot_loop *loop, cot_handle task, int wake, void *data) {
    struct record *r = data;
    note(r, wake);
    if (r->n == 1) {
        CHECK_EQ(cot_loop_task_work(loop, task, work, NULL), 0);
        CHECK_EQ(cot_loop_task_delay(loop, task, 10000 * MS), 1); /* a 10 s timeout */
    }
}

static void test_work_with_timeout(void) {
    cot_loop *loop = cot_loop_new();
    struct record r = {0};
    cot_handle t;
    CHECK_EQ(cot_loop_task_init(loop, worker, &r, &t), 0);
    CHECK_EQ(cot_loop_task_schedule(loop, t, COT_NEXT), 1);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0); /* the work wins: the timeout is dropped */
    CHECK_EQ(r.n, 2);
    CHECK_EQ(r.wakes[1], COT_WAKE_WORKED);
    CHECK_EQ(atomic_load(&worked), 1);
    CHECK_EQ(cot_close(loop, t, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

static int sig;

/* Sleeps for a long time, but waits on a signal meanwhile. */
static void waiter(cot_loop *loop, cot_handle task, int wake, void *data) {
    struct record *r = data;
    note(r, wake);
    if (r->n == 1) {
        CHECK_EQ(cot_loop_task_sleep(loop, task, 60000 * MS), 0);
        CHECK_EQ(cot_loop_task_wait(loop, task, &sig), 1);
        CHECK_EQ(cot_loop_task_sleep(loop, task, 1), COT_EINVAL); /* already awaiting */
    }
}

static void notifier(cot_loop *loop, cot_handle timer, void *data) {
    (void)data;
    CHECK_EQ(cot_loop_notify(loop, &sig, COT_LATER), 1);
    CHECK_EQ(cot_close(loop, timer, NULL), 0);
}

static void test_signal_resumes_a_sleeper(void) {
    cot_loop *loop = cot_loop_new();
    struct record r = {0};
    cot_handle t, timer;
    CHECK_EQ(cot_loop_task_init(loop, waiter, &r, &t), 0);
    CHECK_EQ(cot_loop_task_schedule(loop, t, COT_LATER), 1);
    CHECK_EQ(cot_timer_init(loop, NULL, &timer), 0);
    CHECK_EQ(cot_timer_start(loop, timer, notifier, 2 * MS, 0), 0);
    uint64_t start = cot_loop_now(loop);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0); /* the long sleep's timer was closed */
    cot_loop_update_time(loop);
    CHECK(cot_loop_now(loop) - start < 5000 * MS);
    CHECK_EQ(r.n, 2);
    CHECK_EQ(r.wakes[1], COT_WAKE_RESUMED); /* left the sleep */
    CHECK_EQ(cot_close(loop, t, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

static void test_bad_input(void) {
    cot_loop *loop = cot_loop_new();
    cot_handle t, timer;
    struct record r = {0};
    CHECK_EQ(cot_loop_task_init(loop, NULL, NULL, &t), COT_EINVAL);
    CHECK_EQ(cot_loop_task_init(loop, sleeper, &r, NULL), COT_EINVAL);
    CHECK_EQ(cot_loop_task_init(NULL, sleeper, &r, &t), COT_EINVAL);
    CHECK_EQ(cot_loop_task_init(loop, sleeper, &r, &t), 0);
    CHECK_EQ(cot_loop_task_schedule(loop, t, 9), COT_EINVAL);
    CHECK_EQ(cot_loop_task_wait(loop, t, NULL), COT_EINVAL);
    CHECK_EQ(cot_loop_notify(loop, NULL, COT_LATER), COT_EINVAL);
    CHECK_EQ(cot_loop_task_work(loop, t, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_timer_init(loop, NULL, &timer), 0);
    CHECK_EQ(cot_loop_task_sleep(loop, timer, 1), COT_EINVAL); /* a timer is not a task */
    CHECK_EQ(cot_loop_task_schedule(loop, 12345, COT_LATER), COT_EINVAL);
    CHECK_EQ(cot_close(loop, t, NULL), 0);
    CHECK_EQ(cot_close(loop, timer, NULL), 0);
    CHECK_EQ(cot_loop_task_schedule(loop, t, COT_LATER), COT_EINVAL); /* closing */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

int main(void) {
    test_sleep();
    test_work_with_timeout();
    test_signal_resumes_a_sleeper();
    test_bad_input();
    puts("test_loop_task ok");
    return 0;
}
