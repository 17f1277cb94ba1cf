/* Channels between stackful coroutines (cot_chan_*, cot_coro_chan_*,
 * cot_coro_select): a bounded channel that makes its sender wait, an
 * unbounded one, close with items left, select over several, timeouts and
 * wakes, and every bad input. */
#define _GNU_SOURCE
#include <cothread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "check.h"
#include "now.h"

#define MS 1000000ull

static cot_coro *spawn(cot_loop *loop, cot_coro_fn fn, void *arg) {
    cot_coro *co;
    CHECK_EQ(cot_coro_new(loop, fn, arg, 0, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    return co;
}

/* ===== bounded: the sender waits for room ===== */

#define ITEMS 200

struct pipe {
    cot_chan *chan;
    int got[ITEMS];
    int count, end_rc;
    size_t most; /* the most items seen in the channel */
};

static void *producer(void *arg) {
    struct pipe *p = arg;
    for (int i = 0; i < ITEMS; i++) {
        CHECK_EQ(cot_coro_chan_send(p->chan, &i, COT_CORO_FOREVER), 0);
        size_t n = cot_chan_len(p->chan);
        if (n > p->most) p->most = n;
    }
    CHECK_EQ(cot_chan_close(p->chan), 1);
    return NULL;
}

static void *consumer(void *arg) {
    struct pipe *p = arg;
    int v, rc;
    while ((rc = cot_coro_chan_recv(p->chan, &v, COT_CORO_FOREVER)) == 0) {
        p->got[p->count++] = v;
        if (v % 7 == 0) CHECK_EQ(cot_coro_yield(), 0); /* let the channel fill */
    }
    p->end_rc = rc;
    return NULL;
}

static void test_bounded(void) {
    cot_loop *loop = cot_loop_new();
    struct pipe p = {0};
    CHECK_EQ(cot_chan_new(loop, sizeof(int), 3, &p.chan), 0);
    cot_coro *c = spawn(loop, consumer, &p), *s = spawn(loop, producer, &p);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(p.count, ITEMS);
    for (int i = 0; i < ITEMS; i++) CHECK_EQ(p.got[i], i);
    CHECK_EQ(p.end_rc, COT_EPIPE);
    CHECK_EQ(p.most, 3); /* full at times, never past its capacity */
    CHECK_EQ(cot_coro_free(c), 0);
    CHECK_EQ(cot_coro_free(s), 0);
    CHECK_EQ(cot_chan_free(p.chan), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== unbounded: sends from outside coroutines never wait ===== */

struct sum {
    cot_chan *chan;
    long long sum;
    int count, end_rc;
};

static void *summer(void *arg) {
    struct sum *s = arg;
    long long v;
    int rc;
    while ((rc = cot_coro_chan_recv(s->chan, &v, COT_CORO_FOREVER)) == 0) s->sum += v, s->count++;
    s->end_rc = rc;
    return NULL;
}

static void test_unbounded(void) {
    cot_loop *loop = cot_loop_new();
    struct sum s = {0};
    CHECK_EQ(cot_chan_new(loop, sizeof(long long), 0, &s.chan), 0);
    for (long long i = 1; i <= 100000; i++) CHECK_EQ(cot_chan_try_send(s.chan, &i), 1);
    CHECK_EQ(cot_chan_len(s.chan), 100000);
    CHECK_EQ(cot_chan_close(s.chan), 1);
    CHECK_EQ(cot_chan_close(s.chan), 0); /* once */
    cot_coro *co = spawn(loop, summer, &s);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(s.count, 100000);
    CHECK_EQ(s.sum, 100000LL * 100001 / 2);
    CHECK_EQ(s.end_rc, COT_EPIPE);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_chan_free(s.chan), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== close: receivers drain, waiting senders and receivers see it ===== */

struct closing {
    cot_chan *full, *empty;
    int send_rc, recv_rc;
};

static void *blocked_sender(void *arg) {
    struct closing *c = arg;
    char x = 'z';
    c->send_rc = cot_coro_chan_send(c->full, &x, COT_CORO_FOREVER);
    return NULL;
}

static void *blocked_receiver(void *arg) {
    struct closing *c = arg;
    char x;
    c->recv_rc = cot_coro_chan_recv(c->empty, &x, COT_CORO_FOREVER);
    return NULL;
}

static void test_close(void) {
    cot_loop *loop = cot_loop_new();
    struct closing c = {NULL, NULL, 1, 1};
    CHECK_EQ(cot_chan_new(loop, 1, 2, &c.full), 0);
    CHECK_EQ(cot_chan_new(loop, 1, 2, &c.empty), 0);
    CHECK_EQ(cot_chan_try_send(c.full, "a"), 1);
    CHECK_EQ(cot_chan_try_send(c.full, "b"), 1);
    CHECK_EQ(cot_chan_try_send(c.full, "c"), 0); /* full */
    cot_coro *s = spawn(loop, blocked_sender, &c), *r = spawn(loop, blocked_receiver, &c);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1); /* parked on channels: alive (other threads may send) */
    CHECK_EQ(cot_coro_status(s), COT_CORO_WAITING);
    CHECK_EQ(cot_coro_status(r), COT_CORO_WAITING);
    CHECK_EQ(cot_chan_free(c.full), COT_EBUSY); /* waited on */
    CHECK_EQ(cot_chan_close(c.full), 1);
    CHECK_EQ(cot_chan_close(c.empty), 1);
    CHECK_EQ(cot_chan_free(c.empty), COT_EBUSY); /* woken, has not run yet */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(c.send_rc, COT_EPIPE);
    CHECK_EQ(c.recv_rc, COT_EPIPE);
    /* The items stay for receivers; senders fail at once. */
    char x = 0;
    CHECK_EQ(cot_chan_try_send(c.full, "d"), COT_EPIPE);
    CHECK_EQ(cot_chan_try_recv(c.full, &x), 1);
    CHECK_EQ(x, 'a');
    CHECK_EQ(cot_chan_try_recv(c.full, &x), 1);
    CHECK_EQ(x, 'b');
    CHECK_EQ(cot_chan_try_recv(c.full, &x), COT_EPIPE);
    CHECK_EQ(cot_chan_try_recv(c.empty, &x), COT_EPIPE);
    CHECK_EQ(cot_coro_free(s), 0);
    CHECK_EQ(cot_coro_free(r), 0);
    CHECK_EQ(cot_chan_free(c.full), 0);
    CHECK_EQ(cot_chan_free(c.empty), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== a coroutine freed while it waits stops counting ===== */

static void *park_forever(void *arg) {
    char x;
    (void)cot_coro_chan_recv(arg, &x, COT_CORO_FOREVER);
    CHECK(0); /* freed before anything comes */
    return NULL;
}

static void test_free_parked(void) {
    cot_loop *loop = cot_loop_new();
    cot_chan *ch;
    CHECK_EQ(cot_chan_new(loop, 1, 0, &ch), 0);
    cot_coro *co = spawn(loop, park_forever, ch);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1);
    CHECK_EQ(cot_chan_free(ch), COT_EBUSY);
    CHECK_EQ(cot_coro_free(co), 0); /* its wait is undone */
    CHECK_EQ(cot_chan_free(ch), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 0); /* nothing keeps it alive */
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== select ===== */

struct sel {
    cot_chan *a, *b, *out;
    int rc[5], result[5], value[5];
    uint64_t waited_ns;
};

static void *selector(void *arg) {
    struct sel *s = arg;
    int va = 0, vb = 0, vo = 99;
    cot_chan_case cases[3] = {
        {s->a, COT_CHAN_RECV, &va, 1},
        {s->b, COT_CHAN_RECV, &vb, 1},
        {s->out, COT_CHAN_SEND, &vo, 1},
    };
    /* 0: out is full and a, b are empty: nothing at once. */
    CHECK_EQ(cot_coro_select(cases, 3, 0), COT_ETIMEDOUT);
    /* 1: the timer sends 5 on b. */
    s->rc[0] = cot_coro_select(cases, 3, COT_CORO_FOREVER);
    s->result[0] = cases[1].result, s->value[0] = vb;
    /* 2: nothing comes for 10 ms. */
    uint64_t t0 = now_ns();
    s->rc[1] = cot_coro_select(cases, 3, 10 * MS);
    s->waited_ns = now_ns() - t0;
    /* 3: room in out (the main code took an item from it meanwhile). */
    CHECK_EQ(cot_coro_sleep(20 * MS), 0);
    s->rc[2] = cot_coro_select(cases, 3, COT_CORO_FOREVER);
    s->result[2] = cases[2].result;
    /* 4: a and b both have items: the first case wins. */
    CHECK_EQ(cot_chan_try_send(s->a, &(int){1}), 1);
    CHECK_EQ(cot_chan_try_send(s->b, &(int){2}), 1);
    s->rc[3] = cot_coro_select(cases, 3, COT_CORO_FOREVER);
    s->value[3] = va;
    /* 5: a closed and drained channel is a case that ends, with COT_EPIPE. */
    CHECK_EQ(cot_chan_try_recv(s->b, &vb), 1);
    CHECK_EQ(cot_chan_close(s->b), 1);
    cases[0].op = COT_CHAN_SEND; /* a has room: but b comes first */
    cot_chan_case order[2] = {cases[1], cases[0]};
    s->rc[4] = cot_coro_select(order, 2, COT_CORO_FOREVER);
    s->result[4] = order[0].result;
    return NULL;
}

static void send_b(cot_loop *loop, cot_handle timer, void *data) {
    struct sel *s = data;
    CHECK_EQ(cot_chan_try_send(s->b, &(int){5}), 1);
    CHECK_EQ(cot_close(loop, timer, NULL), 0);
}

static void drain_out(cot_loop *loop, cot_handle timer, void *data) {
    struct sel *s = data;
    int v;
    CHECK_EQ(cot_chan_try_recv(s->out, &v), 1);
    CHECK_EQ(v, 7);
    CHECK_EQ(cot_close(loop, timer, NULL), 0);
}

static void test_select(void) {
    cot_loop *loop = cot_loop_new();
    struct sel s = {0};
    CHECK_EQ(cot_chan_new(loop, sizeof(int), 0, &s.a), 0);
    CHECK_EQ(cot_chan_new(loop, sizeof(int), 0, &s.b), 0);
    CHECK_EQ(cot_chan_new(loop, sizeof(int), 1, &s.out), 0);
    CHECK_EQ(cot_chan_try_send(s.out, &(int){7}), 1);
    cot_handle t1, t2;
    CHECK_EQ(cot_timer_init(loop, &s, &t1), 0);
    CHECK_EQ(cot_timer_start(loop, t1, send_b, 5 * MS, 0), 0);
    CHECK_EQ(cot_timer_init(loop, &s, &t2), 0);
    CHECK_EQ(cot_timer_start(loop, t2, drain_out, 25 * MS, 0), 0);
    cot_coro *co = spawn(loop, selector, &s);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(s.rc[0], 1);
    CHECK_EQ(s.result[0], 0);
    CHECK_EQ(s.value[0], 5);
    CHECK_EQ(s.rc[1], COT_ETIMEDOUT);
    CHECK(s.waited_ns >= 10 * MS);
    CHECK_EQ(s.rc[2], 2);
    CHECK_EQ(s.result[2], 0);
    CHECK_EQ(s.rc[3], 0);
    CHECK_EQ(s.value[3], 1);
    CHECK_EQ(s.rc[4], 0);
    CHECK_EQ(s.result[4], COT_EPIPE);
    int v;
    CHECK_EQ(cot_chan_try_recv(s.out, &v), 1);
    CHECK_EQ(v, 99);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_chan_free(s.a), 0);
    CHECK_EQ(cot_chan_free(s.b), 0);
    CHECK_EQ(cot_chan_free(s.out), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== timeouts and wakes ===== */

struct timed {
    cot_chan *chan;
    int recv_rc, send_rc, zero_rc, woken_rc;
    uint64_t recv_ns;
};

static void *timed_waits(void *arg) {
    struct timed *t = arg;
    char x = 'x';
    uint64_t t0 = now_ns();
    t->recv_rc = cot_coro_chan_recv(t->chan, &x, 10 * MS);
    t->recv_ns = now_ns() - t0;
    CHECK_EQ(cot_coro_chan_send(t->chan, &x, 0), 0); /* room: no wait */
    t->send_rc = cot_coro_chan_send(t->chan, &x, 5 * MS); /* full */
    t->zero_rc = cot_coro_chan_send(t->chan, &x, 0);
    t->woken_rc = cot_coro_chan_send(t->chan, &x, COT_CORO_FOREVER); /* until woken */
    return NULL;
}

static void test_timeouts(void) {
    cot_loop *loop = cot_loop_new();
    struct timed t = {NULL, 1, 1, 1, 1, 0};
    CHECK_EQ(cot_chan_new(loop, 1, 1, &t.chan), 0);
    cot_coro *co = spawn(loop, timed_waits, &t);
    while (cot_coro_status(co) != COT_CORO_WAITING || t.zero_rc == 1) CHECK(cot_loop_run(loop, COT_RUN_ONCE) >= 0);
    CHECK_EQ(cot_coro_wake(co), 1);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(t.recv_rc, COT_ETIMEDOUT);
    CHECK(t.recv_ns >= 10 * MS);
    CHECK_EQ(t.send_rc, COT_ETIMEDOUT);
    CHECK_EQ(t.zero_rc, COT_ETIMEDOUT);
    CHECK_EQ(t.woken_rc, COT_ECANCELED);
    CHECK_EQ(cot_chan_len(t.chan), 1); /* the woken send put nothing */
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_chan_free(t.chan), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== bad input ===== */

struct bad {
    cot_chan *mine, *other;
};

static void *bad_calls(void *arg) {
    struct bad *b = arg;
    int v = 0;
    CHECK_EQ(cot_coro_chan_send(NULL, &v, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_chan_send(b->mine, NULL, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_chan_recv(b->mine, NULL, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_chan_recv(b->other, &v, 0), COT_ETIMEDOUT); /* made on another loop: fine */
    CHECK_EQ(cot_coro_select(NULL, 1, 0), COT_EINVAL);
    cot_chan_case c[2] = {{b->mine, COT_CHAN_RECV, &v, 1}, {b->mine, 3, &v, 1}};
    CHECK_EQ(cot_coro_select(c, 0, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_select(c, 2, 0), COT_EINVAL); /* unknown op */
    c[1] = (cot_chan_case){NULL, COT_CHAN_SEND, &v, 1};
    CHECK_EQ(cot_coro_select(c, 2, 0), COT_EINVAL);
    c[1] = (cot_chan_case){b->mine, COT_CHAN_SEND, NULL, 1};
    CHECK_EQ(cot_coro_select(c, 2, 0), COT_EINVAL);
    CHECK_EQ(c[0].result, 1); /* untouched by a failed call */
    c[1] = (cot_chan_case){b->other, COT_CHAN_SEND, &v, 1};
    CHECK_EQ(cot_coro_select(c, 2, 0), 1); /* a channel made on another loop */
    CHECK_EQ(c[1].result, 0);
    CHECK_EQ(c[0].result, 1);
    /* The same channel twice, both sides: the send is done. */
    c[1] = (cot_chan_case){b->mine, COT_CHAN_SEND, &v, 1};
    CHECK_EQ(cot_coro_select(c, 2, 0), 1);
    CHECK_EQ(c[1].result, 0);
    CHECK_EQ(cot_coro_select(c, 2, 0), 0); /* and now the receive */
    return NULL;
}

static void test_bad_input(void) {
    cot_loop *loop = cot_loop_new(), *other = cot_loop_new();
    struct bad b;
    cot_chan *ch = NULL;
    int v = 0;
    CHECK_EQ(cot_chan_new(NULL, 4, 1, &ch), 0); /* the loop is not needed */
    CHECK_EQ(cot_chan_free(ch), 0);
    ch = NULL;
    CHECK_EQ(cot_chan_new(loop, 4, 1, NULL), COT_EINVAL);
    CHECK_EQ(cot_chan_new(loop, 0, 1, &ch), COT_EINVAL); /* items of no size */
    CHECK_EQ(cot_chan_new(loop, 16, SIZE_MAX / 8, &ch), COT_EINVAL); /* bytes overflow */
    CHECK(ch == NULL);
    CHECK_EQ(cot_chan_free(NULL), COT_EINVAL);
    CHECK_EQ(cot_chan_close(NULL), COT_EINVAL);
    CHECK_EQ(cot_chan_len(NULL), 0);
    CHECK_EQ(cot_chan_try_send(NULL, &v), COT_EINVAL);
    CHECK_EQ(cot_chan_try_recv(NULL, &v), COT_EINVAL);
    CHECK_EQ(cot_chan_new(loop, sizeof v, 1, &b.mine), 0);
    CHECK_EQ(cot_chan_new(other, sizeof v, 1, &b.other), 0);
    CHECK_EQ(cot_chan_try_send(b.mine, NULL), COT_EINVAL);
    CHECK_EQ(cot_chan_try_recv(b.mine, NULL), COT_EINVAL);
    /* Outside coroutines. */
    CHECK_EQ(cot_coro_chan_send(b.mine, &v, 0), COT_EPERM);
    CHECK_EQ(cot_coro_chan_recv(b.mine, &v, COT_CORO_FOREVER), COT_EPERM);
    cot_chan_case c = {b.mine, COT_CHAN_RECV, &v, 1};
    CHECK_EQ(cot_coro_select(&c, 1, 0), COT_EPERM);
    cot_coro *co = spawn(loop, bad_calls, &b);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_coro_status(co), COT_CORO_FINISHED);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_chan_free(b.mine), 0);
    CHECK_EQ(cot_chan_free(b.other), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
    CHECK_EQ(cot_loop_close(other), 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    test_bounded();
    test_unbounded();
    test_close();
    test_free_parked();
    test_select();
    test_timeouts();
    test_bad_input();
    puts("test_chan ok");
    return 0;
}
