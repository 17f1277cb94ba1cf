/*
 * Channels (cot_chan): the cost of a try_send + try_recv pair on one
 * loop, from the loop's thread outside cot_loop_run and from a coroutine
 * inside it; a ping-pong between two coroutines of one loop through two
 * channels of capacity 1 (every item parks its receiver); and items
 * streamed from a coroutine of one loop to a coroutine of another, each
 * loop on its thread. Run it against two builds of the library to compare
 * them (LD_LIBRARY_PATH=<dir of the other libcothread.so>): a build whose
 * channels serve one loop only prints "n/a" for the last line.
 *     make -C bench/c run-chan
 *
 * Settings: COT_BENCH_PAIRS (try pairs per round, default 2000000),
 * COT_BENCH_ROUNDS (best of, default 5).
 */
#include <cothread.h>
#include <pthread.h>

#include "common.h"

static long pairs;

/* ns per try_send + try_recv pair on `ch`. */
static double try_pairs(cot_chan *ch) {
    uint64_t t0 = wall_ns();
    for (long i = 0; i < pairs; i++) {
        int v = (int)i, w;
        if (cot_chan_try_send(ch, &v) != 1 || cot_chan_try_recv(ch, &w) != 1 || w != v) abort();
    }
    return (double)(wall_ns() - t0) / (double)pairs;
}

struct in_coro {
    cot_chan *ch;
    double ns;
};

static void *try_in_coro(void *arg) {
    struct in_coro *c = arg;
    c->ns = try_pairs(c->ch);
    return NULL;
}

/* ===== ping-pong: every item wakes a parked coroutine ===== */

struct pong {
    cot_chan *ping, *pong;
    long rounds;
};

static void *pinger(void *arg) {
    struct pong *p = arg;
    for (long i = 0; i < p->rounds; i++) {
        int v = (int)i;
        CHECK(cot_coro_chan_send(p->ping, &v, COT_CORO_FOREVER));
        CHECK(cot_coro_chan_recv(p->pong, &v, COT_CORO_FOREVER));
    }
    return NULL;
}

static void *ponger(void *arg) {
    struct pong *p = arg;
    for (long i = 0; i < p->rounds; i++) {
        int v;
        CHECK(cot_coro_chan_recv(p->ping, &v, COT_CORO_FOREVER));
        CHECK(cot_coro_chan_send(p->pong, &v, COT_CORO_FOREVER));
    }
    return NULL;
}

static cot_coro *spawn(cot_loop *loop, cot_coro_fn fn, void *arg) {
    cot_coro *co;
    CHECK(cot_coro_new(loop, fn, arg, 0, &co));
    CHECK(cot_coro_start(co));
    return co;
}

/* ns per round trip (two items, two parks). */
static double ping_pong(cot_loop *loop) {
    struct pong p = {.rounds = pairs / 10};
    CHECK(cot_chan_new(loop, sizeof(int), 1, &p.ping));
    CHECK(cot_chan_new(loop, sizeof(int), 1, &p.pong));
    cot_coro *a = spawn(loop, ponger, &p), *b = spawn(loop, pinger, &p);
    uint64_t t0 = wall_ns();
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    double ns = (double)(wall_ns() - t0) / (double)p.rounds;
    CHECK(cot_coro_free(a));
    CHECK(cot_coro_free(b));
    CHECK(cot_chan_free(p.ping));
    CHECK(cot_chan_free(p.pong));
    return ns;
}

/* ===== a stream between two loops on two threads ===== */

struct stream {
    cot_chan *ch;
    long items;
};

static void *stream_send(void *arg) {
    struct stream *s = arg;
    for (long i = 0; i < s->items; i++) {
        int v = (int)i;
        CHECK(cot_coro_chan_send(s->ch, &v, COT_CORO_FOREVER));
    }
    CHECK(cot_chan_close(s->ch));
    return NULL;
}

static void *stream_recv(void *arg) {
    struct stream *s = arg;
    int v;
    while (cot_coro_chan_recv(s->ch, &v, COT_CORO_FOREVER) == 0) {
    }
    return NULL;
}

static void *sender_thread(void *arg) {
    cot_loop *loop = cot_loop_new();
    cot_coro *co = spawn(loop, stream_send, arg);
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    CHECK(cot_coro_free(co));
    CHECK(cot_loop_close(loop));
    return NULL;
}

struct probe {
    cot_chan *ch;
    int ok;
};

static void *probe(void *arg) {
    struct probe *p = arg;
    int v;
    p->ok = cot_coro_chan_recv(p->ch, &v, 0) != COT_EINVAL;
    return NULL;
}

/* Does this build let a coroutine use a channel made on another loop? */
static int between_loops_supported(void) {
    cot_loop *a = cot_loop_new(), *b = cot_loop_new();
    cot_chan *ch;
    CHECK(cot_chan_new(a, sizeof(int), 1, &ch));
    struct probe arg = {ch, 0};
    cot_coro *co = spawn(b, probe, &arg);
    CHECK(cot_loop_run(b, COT_RUN_DEFAULT));
    CHECK(cot_coro_free(co));
    CHECK(cot_chan_free(ch));
    CHECK(cot_loop_close(a));
    CHECK(cot_loop_close(b));
    return arg.ok;
}

/* ns per item. */
static double between_loops(void) {
    cot_loop *loop = cot_loop_new();
    struct stream s = {.items = pairs / 4};
    CHECK(cot_chan_new(loop, sizeof(int), 64, &s.ch));
    cot_coro *co = spawn(loop, stream_recv, &s);
    pthread_t t;
    uint64_t t0 = wall_ns();
    CHECK(-pthread_create(&t, NULL, sender_thread, &s));
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    CHECK(-pthread_join(t, NULL));
    double ns = (double)(wall_ns() - t0) / (double)s.items;
    CHECK(cot_coro_free(co));
    CHECK(cot_chan_free(s.ch));
    CHECK(cot_loop_close(loop));
    return ns;
}

static double min(double a, double b) {
    return a < b ? a : b;
}

int main(void) {
    pairs = (long)env_num("COT_BENCH_PAIRS", 2000000);
    int rounds = (int)env_num("COT_BENCH_ROUNDS", 5);
    cot_loop *loop = cot_loop_new();
    cot_chan *ch;
    CHECK(cot_chan_new(loop, sizeof(int), 16, &ch));
    double outside = 1e9, inside = 1e9, pp = 1e9, cross = -1;
    int supported = between_loops_supported();
    for (int r = 0; r < rounds; r++) {
        outside = min(outside, try_pairs(ch));
        struct in_coro c = {ch, 0};
        cot_coro *co = spawn(loop, try_in_coro, &c);
        CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
        CHECK(cot_coro_free(co));
        inside = min(inside, c.ns);
        pp = min(pp, ping_pong(loop));
        if (supported) cross = r ? min(cross, between_loops()) : between_loops();
    }
    printf("try_send+try_recv, outside the run:   %7.1f ns per pair\n", outside);
    printf("try_send+try_recv, in a coroutine:    %7.1f ns per pair\n", inside);
    printf("ping-pong, 2 coroutines of one loop:  %7.1f ns per round trip\n", pp);
    if (cross < 0)
        printf("stream between two loops (cap 64):       n/a\n");
    else
        printf("stream between two loops (cap 64):    %7.1f ns per item\n", cross);
    CHECK(cot_chan_free(ch));
    CHECK(cot_loop_close(loop));
    return 0;
}
