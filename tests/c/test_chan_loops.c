/* Channels between loops: each pthread runs a cot_loop of its own, and
 * coroutines of different loops send and receive on the same channels
 * (bounded and unbounded, many items, order per sender, nothing lost or
 * doubled); a close from another thread wakes receivers waiting on three
 * loops with COT_EPIPE; a select over channels fed from other loops;
 * timeouts; the try calls from threads that run no loop. */
#define _GNU_SOURCE
#include <cothread.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "now.h"

#define MS 1000000ull
#define MAX_COROS 8

/* ===== a thread running a loop of its own, with coroutines on it ===== */

struct runner {
    cot_coro_fn fn;
    void *args[MAX_COROS];
    int n;
    pthread_t thread;
};

static void *run_loop(void *arg) {
    struct runner *r = arg;
    cot_loop *loop = cot_loop_new();
    CHECK(loop != NULL);
    cot_coro *co[MAX_COROS];
    for (int i = 0; i < r->n; i++) {
        CHECK_EQ(cot_coro_new(loop, r->fn, r->args[i], 0, &co[i]), 0);
        CHECK_EQ(cot_coro_start(co[i]), 0);
    }
    /* Coroutines parked on channels keep the loop alive: it returns once
     * they all finished, whatever other loops do meanwhile. */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    for (int i = 0; i < r->n; i++) {
        CHECK_EQ(cot_coro_status(co[i]), COT_CORO_FINISHED);
        CHECK_EQ(cot_coro_free(co[i]), 0);
    }
    CHECK_EQ(cot_loop_close(loop), 0);
    return NULL;
}

static void start(struct runner *r) {
    CHECK_EQ(pthread_create(&r->thread, NULL, run_loop, r), 0);
}

static void join(struct runner *r) {
    CHECK_EQ(pthread_join(r->thread, NULL), 0);
}

/* ===== many items from the senders of one loop to the receivers of another ===== */

#define SENDERS 3
#define RECEIVERS 2
#define ITEMS 20000

struct flow {
    cot_chan *chan;
    atomic_int senders_left;
};

struct sender {
    struct flow *flow;
    uint32_t id;
};

struct receiver {
    struct flow *flow;
    uint32_t *got;
    int count, end_rc;
    cot_loop *loop;
};

static void *send_items(void *arg) {
    struct sender *s = arg;
    for (uint32_t i = 0; i < ITEMS; i++) {
        uint32_t v = s->id << 24 | i;
        CHECK_EQ(cot_coro_chan_send(s->flow->chan, &v, COT_CORO_FOREVER), 0);
    }
    if (atomic_fetch_sub(&s->flow->senders_left, 1) == 1) CHECK_EQ(cot_chan_close(s->flow->chan), 1);
    return NULL;
}

static void *recv_items(void *arg) {
    struct receiver *r = arg;
    r->loop = cot_loop_current();
    uint32_t v;
    int rc;
    while ((rc = cot_coro_chan_recv(r->flow->chan, &v, COT_CORO_FOREVER)) == 0) r->got[r->count++] = v;
    r->end_rc = rc;
    return NULL;
}

static void test_flow(size_t capacity) {
    struct flow flow = {.senders_left = SENDERS};
    cot_loop *maker = cot_loop_new();
    CHECK_EQ(cot_chan_new(maker, sizeof(uint32_t), capacity, &flow.chan), 0);
    CHECK_EQ(cot_loop_close(maker), 0); /* the channel belongs to no loop */
    struct sender s[SENDERS];
    struct receiver r[RECEIVERS];
    struct runner tx = {.fn = send_items, .n = SENDERS}, rx = {.fn = recv_items, .n = RECEIVERS};
    for (int i = 0; i < SENDERS; i++) s[i] = (struct sender){&flow, (uint32_t)i}, tx.args[i] = &s[i];
    for (int i = 0; i < RECEIVERS; i++) {
        r[i] = (struct receiver){.flow = &flow, .got = calloc(SENDERS * ITEMS, sizeof(uint32_t))};
        rx.args[i] = &r[i];
    }
    start(&rx);
    start(&tx);
    join(&tx);
    join(&rx);
    /* Each item once; each receiver sees each sender's items in order. */
    static unsigned char seen[SENDERS][ITEMS];
    memset(seen, 0, sizeof seen);
    int total = 0;
    for (int i = 0; i < RECEIVERS; i++) {
        CHECK_EQ(r[i].end_rc, COT_EPIPE);
        CHECK(r[i].loop != NULL);
        int64_t last[SENDERS] = {-1, -1, -1};
        for (int k = 0; k < r[i].count; k++) {
            uint32_t who = r[i].got[k] >> 24, seq = r[i].got[k] & 0xffffff;
            CHECK(who < SENDERS && seq < ITEMS);
            CHECK((int64_t)seq > last[who]);
            last[who] = seq;
            CHECK_EQ(seen[who][seq]++, 0);
        }
        total += r[i].count;
        free(r[i].got);
    }
    CHECK_EQ(total, SENDERS * ITEMS);
    CHECK_EQ(cot_chan_len(flow.chan), 0);
    CHECK_EQ(cot_chan_free(flow.chan), 0);
}

/* ===== receivers waiting on three loops, woken by a close from a fourth thread ===== */

struct closed_wait {
    cot_chan *chan;
    atomic_int about_to_wait;
    int rc[3];
};

struct closed_arg {
    struct closed_wait *w;
    int index;
};

static void *wait_for_close(void *arg) {
    struct closed_arg *a = arg;
    char x;
    atomic_fetch_add(&a->w->about_to_wait, 1);
    a->w->rc[a->index] = cot_coro_chan_recv(a->w->chan, &x, COT_CORO_FOREVER);
    return NULL;
}

static void test_close_wakes_three_loops(void) {
    struct closed_wait w = {.rc = {1, 1, 1}};
    CHECK_EQ(cot_chan_new(NULL, 1, 0, &w.chan), 0); /* no loop needed */
    struct runner loops[3];
    struct closed_arg args[3];
    for (int i = 0; i < 3; i++) {
        args[i] = (struct closed_arg){&w, i};
        loops[i] = (struct runner){.fn = wait_for_close, .n = 1, .args = {&args[i]}};
        start(&loops[i]);
    }
    while (atomic_load(&w.about_to_wait) < 3) sched_yield();
    /* Let them park (a close before a coroutine parks gives the same result). */
    struct timespec pause = {0, 20 * MS};
    nanosleep(&pause, NULL);
    CHECK_EQ(cot_chan_free(w.chan), COT_EBUSY); /* waited on */
    CHECK(cot_loop_current() == NULL);
    CHECK_EQ(cot_chan_close(w.chan), 1);
    for (int i = 0; i < 3; i++) join(&loops[i]);
    for (int i = 0; i < 3; i++) CHECK_EQ(w.rc[i], COT_EPIPE);
    CHECK_EQ(cot_chan_free(w.chan), 0);
}

/* ===== select over channels fed from two other loops ===== */

#define FEEDS 2
#define FEED_ITEMS 5000

struct feed {
    cot_chan *chan;
    int id;
};

static void *feed_items(void *arg) {
    struct feed *f = arg;
    for (int i = 0; i < FEED_ITEMS; i++) {
        int v = f->id * FEED_ITEMS + i;
        CHECK_EQ(cot_coro_chan_send(f->chan, &v, COT_CORO_FOREVER), 0);
    }
    CHECK_EQ(cot_chan_close(f->chan), 1);
    return NULL;
}

struct selecting {
    cot_chan *chans[FEEDS];
    int count[FEEDS];
};

static void *select_all(void *arg) {
    struct selecting *s = arg;
    int v[FEEDS];
    cot_chan_case cases[FEEDS];
    int ids[FEEDS], open = FEEDS;
    for (int i = 0; i < FEEDS; i++) cases[i] = (cot_chan_case){s->chans[i], COT_CHAN_RECV, &v[i], 1}, ids[i] = i;
    while (open > 0) {
        int i = cot_coro_select(cases, (size_t)open, 1000 * MS);
        CHECK(i >= 0 && i < open);
        int id = ids[i];
        if (cases[i].result == COT_EPIPE) { /* drained and closed: drop the case */
            cases[i] = cases[open - 1], ids[i] = ids[open - 1];
            open--;
            continue;
        }
        CHECK_EQ(cases[i].result, 0);
        CHECK_EQ(*(int *)cases[i].item, id * FEED_ITEMS + s->count[id]); /* in order */
        s->count[id]++;
        if (open > 1) { /* rotate, so that neither feed starves the other */
            cot_chan_case c = cases[0];
            int d = ids[0];
            memmove(cases, cases + 1, (size_t)(open - 1) * sizeof *cases);
            memmove(ids, ids + 1, (size_t)(open - 1) * sizeof *ids);
            cases[open - 1] = c, ids[open - 1] = d;
        }
    }
    return NULL;
}

static void test_select_across_loops(void) {
    struct selecting s = {0};
    struct feed f[FEEDS];
    struct runner feeders[FEEDS];
    for (int i = 0; i < FEEDS; i++) {
        CHECK_EQ(cot_chan_new(NULL, sizeof(int), i == 0 ? 2 : 0, &s.chans[i]), 0);
        f[i] = (struct feed){s.chans[i], i};
        feeders[i] = (struct runner){.fn = feed_items, .n = 1, .args = {&f[i]}};
    }
    struct runner sel = {.fn = select_all, .n = 1, .args = {&s}};
    start(&sel);
    for (int i = 0; i < FEEDS; i++) start(&feeders[i]);
    for (int i = 0; i < FEEDS; i++) join(&feeders[i]);
    join(&sel);
    for (int i = 0; i < FEEDS; i++) {
        CHECK_EQ(s.count[i], FEED_ITEMS);
        CHECK_EQ(cot_chan_free(s.chans[i]), 0);
    }
}

/* ===== timeouts: nobody sends, then another loop sends late ===== */

struct timing {
    cot_chan *chan;
    int first_rc, second_rc, value;
    uint64_t first_ns, second_ns;
};

static void *wait_twice(void *arg) {
    struct timing *t = arg;
    int v = 0;
    uint64_t t0 = now_ns();
    t->first_rc = cot_coro_chan_recv(t->chan, &v, 20 * MS);
    t->first_ns = now_ns() - t0;
    t0 = now_ns();
    t->second_rc = cot_coro_chan_recv(t->chan, &v, 5000 * MS);
    t->second_ns = now_ns() - t0;
    t->value = v;
    return NULL;
}

static void *send_late(void *arg) {
    struct timing *t = arg;
    CHECK_EQ(cot_coro_sleep(60 * MS), 0);
    CHECK_EQ(cot_coro_chan_send(t->chan, &(int){42}, 0), 0);
    return NULL;
}

static void test_timeouts(void) {
    struct timing t = {.first_rc = 1, .second_rc = 1};
    CHECK_EQ(cot_chan_new(NULL, sizeof(int), 1, &t.chan), 0);
    struct runner waiter = {.fn = wait_twice, .n = 1, .args = {&t}};
    struct runner sender = {.fn = send_late, .n = 1, .args = {&t}};
    start(&waiter);
    start(&sender);
    join(&sender);
    join(&waiter);
    CHECK_EQ(t.first_rc, COT_ETIMEDOUT);
    CHECK(t.first_ns >= 20 * MS);
    CHECK_EQ(t.second_rc, 0);
    CHECK_EQ(t.value, 42);
    CHECK(t.second_ns < 4000 * MS); /* woken by the send, not by the timeout */
    CHECK_EQ(cot_chan_free(t.chan), 0); /* the timed-out wait left no count */
}

/* ===== try calls from threads that run no loop ===== */

#define PLAIN_ITEMS 50000

struct plain {
    cot_chan *chan;
    long long sum;
    int count, end_rc;
};

static void *sum_items(void *arg) {
    struct plain *p = arg;
    int v, rc;
    while ((rc = cot_coro_chan_recv(p->chan, &v, COT_CORO_FOREVER)) == 0) p->sum += v, p->count++;
    p->end_rc = rc;
    return NULL;
}

static void *plain_sender(void *arg) {
    struct plain *p = arg;
    CHECK(cot_loop_current() == NULL);
    for (int i = 1; i <= PLAIN_ITEMS; i++) {
        int rc;
        while ((rc = cot_chan_try_send(p->chan, &i)) == 0) sched_yield(); /* full: no wait outside coroutines */
        CHECK_EQ(rc, 1);
    }
    return NULL;
}

static void test_threads_without_a_loop(void) {
    struct plain p = {0};
    CHECK_EQ(cot_chan_new(NULL, sizeof(int), 8, &p.chan), 0);
    int v;
    CHECK_EQ(cot_chan_try_recv(p.chan, &v), 0); /* empty */
    struct runner rx = {.fn = sum_items, .n = 1, .args = {&p}};
    start(&rx);
    pthread_t a, b;
    CHECK_EQ(pthread_create(&a, NULL, plain_sender, &p), 0);
    CHECK_EQ(pthread_create(&b, NULL, plain_sender, &p), 0);
    CHECK_EQ(pthread_join(a, NULL), 0);
    CHECK_EQ(pthread_join(b, NULL), 0);
    CHECK_EQ(cot_chan_close(p.chan), 1);
    CHECK_EQ(cot_chan_close(p.chan), 0);
    join(&rx);
    CHECK_EQ(p.count, 2 * PLAIN_ITEMS);
    CHECK_EQ(p.sum, 2 * ((long long)PLAIN_ITEMS * (PLAIN_ITEMS + 1) / 2));
    CHECK_EQ(p.end_rc, COT_EPIPE);
    CHECK_EQ(cot_chan_try_send(p.chan, &v), COT_EPIPE);
    CHECK_EQ(cot_chan_try_recv(p.chan, &v), COT_EPIPE);
    CHECK_EQ(cot_chan_free(p.chan), 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    test_flow(4);
    test_flow(1);
    test_flow(0);
    test_close_wakes_three_loops();
    test_select_across_loops();
    test_timeouts();
    test_threads_without_a_loop();
    puts("test_chan_loops ok");
    return 0;
}
