/* One rule for every duration in nanoseconds (doc/c.md, Conventions):
 * 0..INT64_MAX is a time, COT_FOREVER is no limit, any other value above
 * INT64_MAX (a negative number converted) is COT_EINVAL, before any wait and
 * with nothing changed. A test per function that takes a duration, and one
 * that a wait counts from its call, not from the start of the loop's turn. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "socket_check.h"
#include "now.h"

static const uint64_t bad[] = {(uint64_t)-5, (uint64_t)INT64_MAX + 1, (uint64_t)-2};

static void never(cot_loop *loop, cot_handle h, void *data) {
    (void)loop, (void)h, (void)data;
    CHECK(0);
}
static void never_task(cot_loop *loop, cot_handle task, int wake, int events, void *data) {
    (void)loop, (void)task, (void)wake, (void)events, (void)data;
    CHECK(0);
}
static void never_io(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    (void)loop, (void)sock, (void)result, (void)data;
    CHECK(0);
}
static void never_accept(cot_loop *loop, cot_tcp server, int status, cot_tcp client, void *data) {
    (void)loop, (void)server, (void)status, (void)client, (void)data;
    CHECK(0);
}
static void never_recv(cot_loop *loop, cot_udp udp, int64_t n, const struct sockaddr *from, uint32_t len, void *data) {
    (void)loop, (void)udp, (void)n, (void)from, (void)len, (void)data;
    CHECK(0);
}

/* The loop's calls, the scheduler's and the blocking ones. */
static void loop_calls(void) {
    cot_loop *loop = cot_loop_new();
    cot_handle timer, task;
    CHECK_EQ(cot_timer_init(loop, NULL, &timer), 0);
    CHECK_EQ(cot_loop_task_init(loop, never_task, NULL, &task), 0);
    struct sockaddr_in a;
    cot_tcp server = listen_loopback(loop, 4, &a), client;
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &client), 0);
    cot_udp udp;
    struct sockaddr_in any = loopback();
    CHECK_EQ(cot_udp_init(loop, AF_INET, &udp), 0);
    CHECK_EQ(cot_udp_bind(loop, udp, (struct sockaddr *)&any, sizeof any), 0);
    char buf[4];
    cot_sched *s = cot_sched_new();
    cot_task t;
    CHECK_EQ(cot_task_new(s, NULL, &t), 0);
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    static int key;
    atomic_uint word = 0;

    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint64_t ns = bad[i];
        CHECK_EQ(cot_timer_start(loop, timer, never, ns, 0), COT_EINVAL);
        CHECK_EQ(cot_timer_start(loop, timer, never, 0, ns), COT_EINVAL);
        CHECK_EQ(cot_timer_set_repeat(loop, timer, ns), COT_EINVAL);
        CHECK_EQ(cot_loop_task_delay(loop, task, ns), COT_EINVAL);
        CHECK_EQ(cot_loop_task_sleep(loop, task, ns), COT_EINVAL);
        CHECK_EQ(cot_sched_delay(s, t, ns), COT_EINVAL);
        CHECK_EQ(cot_sched_notify_delay(s, &key, ns), COT_EINVAL);
        CHECK_EQ(cot_future_wait(f, ns), COT_EINVAL);
        CHECK_EQ(cot_park((const uint32_t *)&word, 0, ns), COT_EINVAL);
        CHECK_EQ(cot_tcp_accept(loop, server, ns, never_accept, NULL), COT_EINVAL);
        CHECK_EQ(cot_tcp_connect(loop, client, (struct sockaddr *)&a, sizeof a, ns, never_io, NULL), COT_EINVAL);
        CHECK_EQ(cot_tcp_read(loop, client, buf, sizeof buf, ns, never_io, NULL), COT_EINVAL);
        CHECK_EQ(cot_tcp_write(loop, client, "x", 1, ns, never_io, NULL), COT_EINVAL);
        CHECK_EQ(cot_udp_recv(loop, udp, buf, sizeof buf, ns, never_recv, NULL), COT_EINVAL);
        CHECK_EQ(cot_udp_send(loop, udp, "x", 1, (struct sockaddr *)&any, sizeof any, ns, never_io, NULL),
                 COT_EINVAL);
    }
    /* Nothing changed: nothing is active, queued or postponed. */
    CHECK_EQ(cot_handle_is_active(loop, timer), 0);
    CHECK_EQ(cot_sched_is_scheduled(s, t), 0);
    uint64_t wake;
    CHECK_EQ(cot_sched_next_wake(s, &wake), 0);
    /* The edges: INT64_MAX is a time, COT_FOREVER no limit. */
    CHECK_EQ(cot_timer_start(loop, timer, never, (uint64_t)INT64_MAX, 0), 0);
    CHECK_EQ(cot_timer_stop(loop, timer), 0);
    CHECK_EQ(cot_sched_delay(s, t, COT_FOREVER), 1);
    CHECK_EQ(cot_sched_unschedule(s, t), 1);
    CHECK_EQ(cot_future_wait(f, 0), COT_ETIMEDOUT);
    CHECK_EQ(cot_park((const uint32_t *)&word, 1, COT_FOREVER), 0); /* the word differs */
    CHECK_EQ(cot_promise_set(p, NULL, NULL), 0);
    CHECK_EQ(cot_future_wait(f, COT_FOREVER), 0);

    cot_promise_free(p);
    cot_future_free(f);
    CHECK_EQ(cot_sched_free(s), 0);
    CHECK_EQ(cot_close(loop, timer, NULL), 0);
    CHECK_EQ(cot_close(loop, task, NULL), 0);
    CHECK_EQ(cot_tcp_close(loop, server), 0);
    CHECK_EQ(cot_tcp_close(loop, client), 0);
    CHECK_EQ(cot_udp_close(loop, udp), 0);
    finish(loop);
}

struct coro_case {
    cot_loop *loop;
    cot_coro *other;
    cot_handle poll;
    cot_future *future;
    cot_chan *chan;
    cot_tcp server, client;
    cot_udp udp;
    struct sockaddr_in addr;
    int done;
};

/* Every waiting cot_coro_* call, from inside a coroutine: COT_EINVAL at
 * once, even where the call could finish without waiting. */
static void *coro_calls(void *arg) {
    struct coro_case *c = arg;
    static int key;
    char buf[4];
    int item = 1;
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint64_t ns = bad[i];
        uint64_t t0 = now_ns();
        CHECK_EQ(cot_coro_sleep(ns), COT_EINVAL);
        CHECK_EQ(cot_coro_wait(&key, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_poll(c->poll, COT_READABLE, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_await(c->future, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_join(c->other, ns, NULL), COT_EINVAL);
        cot_coro_source src = {.type = COT_SOURCE_SIGNAL, .signal = &key};
        CHECK_EQ(cot_coro_wait_any(&src, 1, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_wait_any(NULL, 0, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_accept(c->server, &(cot_tcp){0}, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_connect(c->client, (struct sockaddr *)&c->addr, sizeof c->addr, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_read(c->client, buf, sizeof buf, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_write(c->client, "x", 1, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_recvfrom(c->udp, buf, sizeof buf, NULL, NULL, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_sendto(c->udp, "x", 1, (struct sockaddr *)&c->addr, sizeof c->addr, ns), COT_EINVAL);
        /* The channel has room and an item: each could finish at once. */
        CHECK_EQ(cot_coro_chan_send(c->chan, &item, ns), COT_EINVAL);
        CHECK_EQ(cot_coro_chan_recv(c->chan, &item, ns), COT_EINVAL);
        cot_chan_case cs = {c->chan, COT_CHAN_RECV, &item, 0};
        CHECK_EQ(cot_coro_select(&cs, 1, ns), COT_EINVAL);
        CHECK(now_ns() - t0 < 1000 * MS); /* none waited */
    }
    CHECK_EQ(cot_chan_len(c->chan), 1); /* nothing sent or taken */
    CHECK_EQ(cot_coro_chan_recv(c->chan, &item, (uint64_t)INT64_MAX), 0);
    CHECK_EQ(item, 7);
    c->done = 1;
    return NULL;
}

static void *idle_coro(void *arg) {
    (void)arg;
    return NULL;
}

static void coro_input(void) {
    struct coro_case c = {0};
    c.loop = cot_loop_new();
    int fds[2];
    CHECK_EQ(pipe(fds), 0);
    CHECK_EQ(cot_poll_init(c.loop, fds[0], NULL, &c.poll), 0);
    cot_promise *p;
    CHECK_EQ(cot_promise_new(&p, &c.future), 0);
    CHECK_EQ(cot_chan_new(c.loop, sizeof(int), 2, &c.chan), 0);
    CHECK_EQ(cot_chan_try_send(c.chan, &(int){7}), 1);
    c.server = listen_loopback(c.loop, 4, &c.addr);
    CHECK_EQ(cot_tcp_init(c.loop, AF_INET, &c.client), 0);
    CHECK_EQ(cot_udp_init(c.loop, AF_INET, &c.udp), 0);
    c.other = spawn_on(c.loop, idle_coro, NULL);
    cot_coro *co = spawn_on(c.loop, coro_calls, &c);
    CHECK_EQ(cot_loop_run(c.loop, COT_RUN_DEFAULT), 0);
    CHECK(c.done);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_coro_free(c.other), 0);
    CHECK_EQ(cot_close(c.loop, c.poll, NULL), 0);
    CHECK_EQ(cot_tcp_close(c.loop, c.server), 0);
    CHECK_EQ(cot_tcp_close(c.loop, c.client), 0);
    CHECK_EQ(cot_udp_close(c.loop, c.udp), 0);
    CHECK_EQ(cot_chan_free(c.chan), 0);
    cot_promise_free(p);
    cot_future_free(c.future);
    close(fds[0]);
    close(fds[1]);
    finish(c.loop);
}

/* A wait counts from its call. The coroutine is woken by a callback that
 * took 30 ms of the loop's turn, and runs in that turn; its 10 ms sleep and
 * its 10 ms timed wait each still last at least 10 ms. */
static int go, nothing;

static uint64_t time_of(int (*wait)(void)) {
    CHECK_EQ(cot_coro_wait(&go, COT_FOREVER), 0);
    uint64_t t0 = now_ns();
    wait();
    return now_ns() - t0;
}
static int sleep_10ms(void) {
    return cot_coro_sleep(10 * MS);
}
static int wait_10ms(void) {
    return cot_coro_wait(&nothing, 10 * MS);
}

static void *waits_late(void *arg) {
    uint64_t *took = arg;
    took[0] = time_of(sleep_10ms);
    took[1] = time_of(wait_10ms);
    return NULL;
}

static void busy_then_wake(cot_loop *loop, cot_handle h, void *data) {
    (void)h, (void)data;
    uint64_t t0 = now_ns();
    while (now_ns() - t0 < 30 * MS) {
    }
    CHECK(cot_loop_notify(loop, &go, COT_NEXT) >= 0);
}

static void counts_from_call(void) {
    cot_loop *loop = cot_loop_new();
    cot_handle timer;
    CHECK_EQ(cot_timer_init(loop, NULL, &timer), 0);
    CHECK_EQ(cot_timer_start(loop, timer, busy_then_wake, 1 * MS, 20 * MS), 0);
    uint64_t took[2] = {0, 0};
    cot_coro *co = spawn_on(loop, waits_late, took);
    while (cot_coro_status(co) != COT_CORO_FINISHED) CHECK(cot_loop_run(loop, COT_RUN_ONCE) >= 0);
    CHECK(took[0] >= 10 * MS);
    CHECK(took[1] >= 10 * MS);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_close(loop, timer, NULL), 0);
    finish(loop);
}

int main(void) {
    loop_calls();
    coro_input();
    counts_from_call();
    puts("test_durations ok");
    return 0;
}
