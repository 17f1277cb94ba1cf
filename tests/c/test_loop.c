/* The event loop through the C ABI: timers, fd readiness, async wakeups from
 * threads, close, run modes, embedding, and bad input. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

#define MS 1000000ull

static char order[64];
static void append(char c) {
    size_t n = strlen(order);
    order[n] = c;
    order[n + 1] = 0;
}

static void on_timer(cot_loop *loop, cot_handle t, void *data) {
    (void)loop;
    (void)t;
    append(*(const char *)data);
}

static void test_timers(void) {
    cot_loop *loop = cot_loop_new();
    CHECK(loop != NULL);
    static const char names[] = "cab";
    const uint64_t due[] = {30, 10, 20};
    cot_handle t[3];
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(cot_timer_init(loop, (void *)&names[i], &t[i]), 0);
        CHECK_EQ(cot_handle_is_active(loop, t[i]), 0);
        CHECK_EQ(cot_timer_start(loop, t[i], on_timer, due[i] * MS, 0), 0);
        CHECK_EQ(cot_handle_is_active(loop, t[i]), 1);
    }
    order[0] = 0;
    uint64_t start = cot_loop_now(loop);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK(strcmp(order, "abc") == 0);
    cot_loop_update_time(loop);
    CHECK(cot_loop_now(loop) - start >= 30 * MS);
    CHECK_EQ(cot_loop_close(loop), COT_EBUSY); /* three handles, not closed */
    for (int i = 0; i < 3; i++) CHECK_EQ(cot_close(loop, t[i], NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

static int ticks;
static void on_tick(cot_loop *loop, cot_handle t, void *data) {
    (void)data;
    if (++ticks == 3) CHECK_EQ(cot_timer_stop(loop, t), 0);
}

static int closed;
static void on_closed(cot_loop *loop, cot_handle h, void *data) {
    void *d;
    CHECK_EQ(cot_handle_data(loop, h, &d), COT_EINVAL); /* already invalid */
    closed += *(int *)data;
}

static void test_repeat_and_close(void) {
    cot_loop *loop = cot_loop_new();
    cot_handle t;
    static int weight = 10;
    CHECK_EQ(cot_timer_init(loop, &weight, &t), 0);
    CHECK_EQ(cot_timer_again(loop, t), COT_EINVAL); /* never started */
    CHECK_EQ(cot_timer_start(loop, t, on_tick, 1 * MS, 1 * MS), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(ticks, 3);
    CHECK_EQ(cot_timer_again(loop, t), 0);
    CHECK_EQ(cot_timer_set_repeat(loop, t, 0), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(ticks, 4);
    CHECK_EQ(cot_close(loop, t, on_closed), 0);
    CHECK_EQ(closed, 0); /* never inside cot_close */
    CHECK_EQ(cot_close(loop, t, on_closed), COT_EINVAL); /* twice */
    CHECK_EQ(cot_timer_start(loop, t, on_tick, 0, 0), COT_EINVAL);
    CHECK_EQ(cot_loop_backend_timeout(loop), 0); /* a close callback is due */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(closed, 10);
    CHECK_EQ(cot_close(loop, t, NULL), COT_EINVAL); /* gone */
    CHECK_EQ(cot_loop_close(loop), 0);

    /* Closed without a callback, a handle does not wait for a run to let the
     * loop close; with one, the loop is busy until the callback ran. */
    loop = cot_loop_new();
    cot_handle quiet, told;
    CHECK_EQ(cot_timer_init(loop, &weight, &quiet), 0);
    CHECK_EQ(cot_timer_init(loop, &weight, &told), 0);
    CHECK_EQ(cot_timer_start(loop, quiet, on_tick, 1000 * MS, 0), 0);
    CHECK_EQ(cot_close(loop, quiet, NULL), 0);
    CHECK_EQ(cot_close(loop, told, on_closed), 0);
    CHECK_EQ(cot_loop_close(loop), COT_EBUSY); /* told's callback is due */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(closed, 20);
    CHECK_EQ(cot_loop_close(loop), 0);
    loop = cot_loop_new();
    CHECK_EQ(cot_timer_init(loop, &weight, &quiet), 0);
    CHECK_EQ(cot_close(loop, quiet, NULL), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

static int reads;
static void on_readable(cot_loop *loop, cot_handle p, int events, void *data) {
    int fd = *(int *)data;
    char buf[16];
    ssize_t n = read(fd, buf, sizeof buf);
    CHECK(events & COT_READABLE);
    reads++;
    if (n <= 0) CHECK_EQ(cot_close(loop, p, NULL), 0); /* closing from its own callback */
}

static void test_poll_socketpair(void) {
    cot_loop *loop = cot_loop_new();
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    cot_handle p;
    CHECK_EQ(cot_poll_init(loop, sv[1], &sv[1], &p), 0);
    CHECK_EQ(cot_poll_start(loop, p, COT_READABLE, on_readable), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1);
    CHECK_EQ(reads, 0);
    CHECK_EQ(write(sv[0], "hello", 5), 5);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_ONCE), 1);
    CHECK_EQ(reads, 1);
    close(sv[0]); /* end of file: the callback closes the handle */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(reads, 2);
    close(sv[1]);

    cot_handle bad;
    CHECK_EQ(cot_poll_init(loop, -1, NULL, &bad), COT_EBADF);
    CHECK_EQ(cot_poll_init(loop, 1000000, NULL, &bad), 0);
    CHECK_EQ(cot_poll_start(loop, bad, COT_READABLE, on_readable), COT_EBADF);
    CHECK_EQ(cot_poll_start(loop, bad, 0, on_readable), COT_EINVAL);
    CHECK_EQ(cot_poll_start(loop, bad, COT_READABLE, NULL), COT_EINVAL);
    CHECK_EQ(cot_close(loop, bad, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

#define THREADS 4
#define SENDS 10000
static atomic_int sent;
static int async_calls, last_seen;
static cot_loop *async_loop;
static cot_handle async_h;

static void on_async(cot_loop *loop, cot_handle h, void *data) {
    (void)loop;
    (void)h;
    (void)data;
    async_calls++;
    last_seen = atomic_load(&sent);
}

static void *sender(void *arg) {
    (void)arg;
    for (int i = 0; i < SENDS; i++) {
        atomic_fetch_add(&sent, 1);
        CHECK_EQ(cot_async_send(async_loop, async_h), 0);
    }
    return NULL;
}

static void test_async_from_threads(void) {
    async_loop = cot_loop_new();
    CHECK_EQ(cot_async_init(async_loop, on_async, NULL, &async_h), 0);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK_EQ(pthread_create(&th[i], NULL, sender, NULL), 0);
    /* Every send made after a callback started causes another callback, so
     * the callbacks end up seeing the last count (ONCE blocks until a wakeup). */
    while (last_seen < THREADS * SENDS) CHECK_EQ(cot_loop_run(async_loop, COT_RUN_ONCE), 1);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    CHECK_EQ(last_seen, THREADS * SENDS); /* nothing lost */
    CHECK(async_calls >= 1 && async_calls <= THREADS * SENDS);
    CHECK_EQ(cot_close(async_loop, async_h, NULL), 0);
    CHECK_EQ(cot_loop_run(async_loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_async_send(async_loop, async_h), COT_EINVAL); /* closed */
    CHECK_EQ(cot_loop_close(async_loop), 0);
}

static int nested_result;
static void on_nested(cot_loop *loop, cot_handle t, void *data) {
    (void)data;
    (void)t;
    nested_result = cot_loop_run(loop, COT_RUN_NOWAIT);
    CHECK_EQ(cot_loop_close(loop), COT_EBUSY);
    CHECK_EQ(cot_loop_stop(loop), 0);
}

static void test_reentry_and_bad_input(void) {
    cot_loop *loop = cot_loop_new();
    cot_handle t, a;
    CHECK_EQ(cot_timer_init(loop, NULL, &t), 0);
    CHECK_EQ(cot_timer_start(loop, t, on_nested, 0, 1 * MS), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 1); /* stopped, the timer still repeating */
    CHECK_EQ(nested_result, COT_EBUSY);
    CHECK_EQ(cot_close(loop, t, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);

    CHECK(cot_loop_close(NULL) == 0);
    CHECK_EQ(cot_loop_run(NULL, COT_RUN_DEFAULT), COT_EINVAL);
    CHECK_EQ(cot_loop_run(loop, 7), COT_EINVAL);
    CHECK_EQ(cot_loop_stop(NULL), COT_EINVAL);
    CHECK_EQ(cot_loop_backend_fd(NULL), COT_EINVAL);
    CHECK_EQ(cot_timer_init(NULL, NULL, &t), COT_EINVAL);
    CHECK_EQ(cot_timer_init(loop, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_timer_start(loop, 0, on_tick, 0, 0), COT_EINVAL);
    CHECK_EQ(cot_timer_start(loop, 12345, on_tick, 0, 0), COT_EINVAL);
    CHECK_EQ(cot_async_init(loop, NULL, NULL, &a), COT_EINVAL);
    CHECK_EQ(cot_async_send(NULL, 1), COT_EINVAL);
    CHECK_EQ(cot_async_send(loop, 12345), COT_EINVAL);
    CHECK_EQ(cot_async_init(loop, on_async, NULL, &a), 0);
    CHECK_EQ(cot_timer_stop(loop, a), COT_EINVAL);   /* an async is not a timer */
    CHECK_EQ(cot_poll_stop(loop, a), COT_EINVAL);    /* nor a poll */
    CHECK_EQ(cot_close(loop, a, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

static int embedded;
static void on_embedded(cot_loop *loop, cot_handle h, void *data) {
    (void)data;
    embedded++;
    CHECK_EQ(cot_close(loop, h, NULL), 0);
}

static void test_embedding(void) {
    /* A host loop (poll(2) here) waits on the backend fd, then runs ours once. */
    cot_loop *loop = cot_loop_new();
    cot_handle t;
    CHECK_EQ(cot_timer_init(loop, NULL, &t), 0);
    CHECK_EQ(cot_timer_start(loop, t, on_embedded, 20 * MS, 0), 0);
    int timeout = cot_loop_backend_timeout(loop);
    CHECK(timeout >= 1 && timeout <= 20); /* at most the 20 ms left, rounded up */
    while (cot_loop_alive(loop) == 1) {
        struct pollfd pfd = {cot_loop_backend_fd(loop), POLLIN, 0};
        CHECK(poll(&pfd, 1, cot_loop_backend_timeout(loop)) >= 0);
        CHECK(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0);
    }
    CHECK_EQ(embedded, 1);
    CHECK_EQ(cot_loop_backend_timeout(loop), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* cot_loop_current: the loop a run is in, restored after a nested run of
 * another loop, NULL outside any run. */
static cot_loop *seen[3];
static cot_loop *inner_loop;

static void on_inner(cot_loop *loop, cot_handle t, void *data) {
    (void)loop;
    (void)t;
    (void)data;
    seen[1] = cot_loop_current();
}

static void on_outer(cot_loop *loop, cot_handle t, void *data) {
    (void)loop;
    (void)t;
    (void)data;
    seen[0] = cot_loop_current();
    CHECK_EQ(cot_loop_run(inner_loop, COT_RUN_DEFAULT), 0);
    seen[2] = cot_loop_current();
}

static void test_current(void) {
    CHECK(cot_loop_current() == NULL);
    cot_loop *outer = cot_loop_new();
    inner_loop = cot_loop_new();
    CHECK(outer != NULL && inner_loop != NULL);
    cot_handle a, b;
    CHECK_EQ(cot_timer_init(outer, NULL, &a), 0);
    CHECK_EQ(cot_timer_start(outer, a, on_outer, 0, 0), 0);
    CHECK_EQ(cot_timer_init(inner_loop, NULL, &b), 0);
    CHECK_EQ(cot_timer_start(inner_loop, b, on_inner, 0, 0), 0);
    CHECK_EQ(cot_loop_run(outer, COT_RUN_DEFAULT), 0);
    CHECK(seen[0] == outer);
    CHECK(seen[1] == inner_loop);
    CHECK(seen[2] == outer);
    CHECK(cot_loop_current() == NULL);
    CHECK_EQ(cot_close(outer, a, NULL), 0);
    CHECK_EQ(cot_close(inner_loop, b, NULL), 0);
    CHECK_EQ(cot_loop_close(outer), 0);
    CHECK_EQ(cot_loop_close(inner_loop), 0);
}

int main(void) {
    test_current();
    test_timers();
    test_repeat_and_close();
    test_poll_socketpair();
    test_async_from_threads();
    test_reentry_and_bad_input();
    test_embedding();
    puts("test_loop ok");
    return 0;
}
