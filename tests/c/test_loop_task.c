/* Loop tasks awaiting operations through the C ABI: sleeps re-armed, work,
 * outside resumes, timeouts and signals, each task resumed once per wake. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <stdatomic.h>
#include <string.h>

#include <sys/socket.h>
#include <unistd.h>

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
static void sleeper(cot_loop *loop, cot_handle task, int wake, int events, void *data) {
    (void)events;
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
static void worker(cot_loop *loop, cot_handle task, int wake, int events, void *data) {
    (void)events;
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
static void waiter(cot_loop *loop, cot_handle task, int wake, int events, void *data) {
    (void)events;
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

/* Reads from a socket each time it is ready, until end of file. */
struct reader {
    cot_handle poll;
    int fd, reads, last_wake, last_events;
    char got[16];
};

static void reader_cb(cot_loop *loop, cot_handle task, int wake, int events, void *data) {
    struct reader *r = data;
    r->last_wake = wake;
    r->last_events = events;
    if (wake == COT_WAKE_CLOSED) return;
    if (wake == COT_WAKE_READY) {
        ssize_t n = read(r->fd, r->got + r->reads, sizeof r->got - 1 - (size_t)r->reads);
        if (n <= 0) return; /* end of file: stop awaiting */
        r->reads += (int)n;
    }
    CHECK_EQ(cot_loop_task_poll(loop, task, r->poll, COT_READABLE), 0);
}

static void test_poll(void) {
    cot_loop *loop = cot_loop_new();
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct reader r = {.fd = sv[1]};
    cot_handle t, second;
    CHECK_EQ(cot_poll_init(loop, sv[1], NULL, &r.poll), 0);
    CHECK_EQ(cot_loop_task_init(loop, reader_cb, &r, &t), 0);
    CHECK_EQ(cot_loop_task_init(loop, reader_cb, &r, &second), 0);
    CHECK_EQ(cot_loop_task_schedule(loop, t, COT_LATER), 1);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1);
    CHECK_EQ(cot_loop_task_poll(loop, second, r.poll, COT_READABLE), COT_EBUSY);
    CHECK_EQ(cot_loop_task_poll(loop, second, r.poll, 0), COT_EINVAL);
    CHECK_EQ(write(sv[0], "ab", 2), 2);
    while (r.reads < 2) CHECK(cot_loop_run(loop, COT_RUN_ONCE) >= 0);
    CHECK_EQ(r.last_wake, COT_WAKE_READY);
    CHECK_EQ(r.last_events, COT_READABLE);
    close(sv[0]); /* end of file: the reader stops awaiting */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK(memcmp(r.got, "ab", 2) == 0);
    /* A waiter is told when the handle closes. */
    CHECK_EQ(cot_loop_task_poll(loop, second, r.poll, COT_READABLE), 0);
    CHECK_EQ(cot_close(loop, r.poll, NULL), 0);
    r.last_wake = -1;
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 0);
    CHECK_EQ(r.last_wake, COT_WAKE_CLOSED);
    close(sv[1]);
    CHECK_EQ(cot_close(loop, t, NULL), 0);
    CHECK_EQ(cot_close(loop, second, NULL), 0);
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
    test_poll();
    test_bad_input();
    puts("test_loop_task ok");
    return 0;
}
