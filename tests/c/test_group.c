/* Loop groups through the C ABI: loops on their own threads, start/stop/end
 * callbacks, posts between loops, a coroutine's call on another loop, the
 * graceful shutdown (drain, grace, cancel), pinning, and bad input. */
#define _GNU_SOURCE
#include <cothread.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "socket_check.h"
#include "now.h"

#define LOOPS 4

/* ---- what each loop saw (each slot written on its own loop's thread) ---- */

struct seen {
    cot_group *group; /* set by main after cot_group_new; read by posts */
    cot_loop *loop[LOOPS];
    int index_ok[LOOPS];
    int pinned[LOOPS];
    long hops[LOOPS];
    atomic_int started, stopped, ended;
};

static void on_start(cot_loop *loop, size_t index, void *data) {
    struct seen *s = data;
    s->loop[index] = loop;
    s->index_ok[index] = cot_loop_current() == loop;
    cpu_set_t set;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    s->pinned[index] = CPU_COUNT(&set) == 1;
    atomic_fetch_add(&s->started, 1);
}

static void on_stop(cot_loop *loop, size_t index, void *data) {
    struct seen *s = data;
    CHECK(s->loop[index] == loop);
    atomic_fetch_add(&s->stopped, 1);
}

static void on_end(cot_loop *loop, size_t index, void *data) {
    struct seen *s = data;
    CHECK(s->loop[index] == loop);
    atomic_fetch_add(&s->ended, 1);
}

static cot_group *new_group(struct seen *s, size_t loops, int flags) {
    memset(s, 0, sizeof *s);
    cot_group_options o = {.loops = loops, .flags = flags, .start = on_start, .stop = on_stop, .end = on_end, .data = s};
    cot_group *g = NULL;
    CHECK_EQ(cot_group_new(&o, &g), 0);
    CHECK(g != NULL);
    s->group = g;
    return g;
}

static void test_bad_input(void) {
    cot_group *g = (cot_group *)1;
    cot_group_options o = {.loops = 0};
    CHECK_EQ(cot_group_new(NULL, &g), COT_EINVAL);
    CHECK_EQ(cot_group_new(&o, &g), COT_EINVAL); /* a group of 0 loops */
    o.loops = 1;
    CHECK_EQ(cot_group_new(&o, NULL), COT_EINVAL);
    o.flags = 8;
    CHECK_EQ(cot_group_new(&o, &g), COT_EINVAL);
    CHECK(g == (cot_group *)1); /* untouched */
    CHECK_EQ(cot_group_size(NULL), 0);
    CHECK_EQ(cot_group_index(NULL), COT_EINVAL);
    CHECK_EQ(cot_group_post(NULL, 0, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_group_least_loaded(NULL), COT_EINVAL);
    CHECK_EQ(cot_group_load(NULL, 0), 0);
    CHECK_EQ(cot_group_shutdown(NULL, 0), COT_EINVAL);
    CHECK_EQ(cot_group_free(NULL), 0);
    CHECK(cot_cpu_count() >= 1);

    struct seen s;
    g = new_group(&s, 1, 0);
    CHECK_EQ(cot_group_post(g, 1, (cot_post_cb)1, NULL), COT_EINVAL); /* out of range */
    CHECK_EQ(cot_group_post(g, 0, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_group_index(g), COT_ESRCH); /* main runs none of its loops */
    CHECK_EQ(cot_coro_invoke(g, 0, (cot_invoke_cb)1, NULL, NULL), COT_EPERM);
    CHECK_EQ(cot_group_shutdown(g, COT_FOREVER - 1), COT_EINVAL);
    CHECK_EQ(cot_group_free(g), 0);
    CHECK_EQ(atomic_load(&s.ended), 1);
}

/* ---- start, posts around a ring ---- */

struct hop {
    struct seen *s;
    atomic_long left; /* read by main while the loops pass it on */
};

static void on_hop(cot_loop *loop, void *data) {
    struct hop *h = data;
    int i = cot_group_index(h->s->group);
    CHECK(i >= 0 && i < LOOPS);
    CHECK(cot_loop_current() == loop && h->s->loop[i] == loop);
    h->s->hops[i]++; /* only loop i's thread writes it */
    if (atomic_fetch_sub(&h->left, 1) > 1) CHECK_EQ(cot_group_post(h->s->group, (size_t)(i + 1) % LOOPS, on_hop, h), 0);
}

static void test_start_and_posts(void) {
    struct seen s;
    cot_group *g = new_group(&s, LOOPS, 0);
    CHECK_EQ(cot_group_size(g), LOOPS);
    CHECK_EQ(atomic_load(&s.started), LOOPS); /* before cot_group_new returned */
    for (int i = 0; i < LOOPS; i++) {
        CHECK(s.loop[i] != NULL);
        CHECK(s.index_ok[i]);
        for (int j = 0; j < i; j++) CHECK(s.loop[i] != s.loop[j]);
    }
    /* 8 messages, each passed around the ring 10 000 times. */
    static struct hop hops[8];
    for (int k = 0; k < 8; k++) {
        hops[k].s = &s;
        atomic_store(&hops[k].left, 10000);
        CHECK_EQ(cot_group_post(g, (size_t)k % LOOPS, on_hop, &hops[k]), 0);
    }
    for (int k = 0; k < 8; k++)
        while (atomic_load(&hops[k].left) > 0) sched_yield();
    CHECK_EQ(cot_group_shutdown(g, COT_FOREVER), 0);
    long total = 0;
    for (int i = 0; i < LOOPS; i++) {
        CHECK_EQ(s.hops[i], 20000); /* each message visits each loop 2 500 times */
        total += s.hops[i];
    }
    CHECK_EQ(total, 80000);
    CHECK_EQ(atomic_load(&s.stopped), LOOPS);
    CHECK_EQ(atomic_load(&s.ended), LOOPS);
    CHECK_EQ(cot_group_post(g, 0, on_hop, &hops[0]), COT_EPIPE); /* gone */
    CHECK_EQ(cot_group_least_loaded(g), COT_EPIPE);
    CHECK_EQ(cot_group_shutdown(g, 0), 0); /* again: nothing to do */
    CHECK_EQ(cot_group_free(g), 0);
}

/* ---- a coroutine's call on another loop ---- */

static void *whoami(cot_loop *loop, void *data) {
    struct seen *s = data;
    CHECK(cot_loop_current() == loop);
    return (void *)(intptr_t)(cot_group_index(s->group) + 100);
}

struct asker {
    struct seen *s;
    intptr_t got[LOOPS];
    int done;
    cot_coro *co;
};

static void *ask_each(void *arg) {
    struct asker *a = arg;
    for (int i = 0; i < LOOPS; i++) { /* loop 0 is the asker's own */
        void *r = NULL;
        CHECK_EQ(cot_coro_invoke(a->s->group, (size_t)i, whoami, a->s, &r), 0);
        a->got[i] = (intptr_t)r;
    }
    CHECK_EQ(cot_coro_invoke(a->s->group, LOOPS, whoami, a->s, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_invoke(a->s->group, 1, NULL, a->s, NULL), COT_EINVAL);
    __atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void start_asker(cot_loop *loop, void *data) {
    struct asker *a = data;
    CHECK_EQ(cot_coro_new(loop, ask_each, a, 0, &a->co), 0);
    CHECK_EQ(cot_coro_start(a->co), 0);
}

static void free_asker(cot_loop *loop, void *data) {
    (void)loop;
    struct asker *a = data;
    CHECK_EQ(cot_coro_free(a->co), 0);
}

static void test_invoke(void) {
    struct seen s;
    cot_group *g = new_group(&s, LOOPS, 0);
    struct asker a = {.s = &s};
    CHECK_EQ(cot_group_post(g, 0, start_asker, &a), 0);
    while (!__atomic_load_n(&a.done, __ATOMIC_ACQUIRE)) sched_yield();
    for (int i = 0; i < LOOPS; i++) CHECK_EQ(a.got[i], 100 + i);
    CHECK_EQ(cot_group_post(g, 0, free_asker, &a), 0);
    CHECK_EQ(cot_group_free(g), 0);
}

/* A coroutine on a plain loop asks a group that has ended: COT_EPIPE. */
static void *ask_gone(void *arg) {
    struct seen *s = arg;
    CHECK_EQ(cot_coro_invoke(s->group, 0, whoami, s, NULL), COT_EPIPE);
    return NULL;
}

static void test_invoke_gone(void) {
    struct seen s;
    cot_group *g = new_group(&s, 1, 0);
    CHECK_EQ(cot_group_shutdown(g, 0), 0);
    cot_loop *loop = cot_loop_new();
    cot_coro *co;
    CHECK_EQ(cot_coro_new(loop, ask_gone, &s, 0, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_coro_status(co), COT_CORO_FINISHED);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
    CHECK_EQ(cot_group_free(g), 0);
}

/* ---- shutdown: drain, grace, cancel ---- */

/* Loop 0 accepts until its listener closes (the stop callback closes it);
 * loop 1 sleeps forever and reads a socket no one writes: the grace ends,
 * the cancel closes its socket, the end callback frees the sleeper. */
struct server {
    cot_tcp listener, idle;
    cot_coro *acceptor, *reader, *sleeper;
    int accept_result, read_result, peer;
};

static struct server srv;

static void *accept_loop(void *arg) {
    (void)arg;
    cot_tcp c;
    srv.accept_result = cot_coro_accept(srv.listener, &c, COT_FOREVER);
    return NULL;
}

static void *read_forever(void *arg) {
    (void)arg;
    char b[8];
    srv.read_result = (int)cot_coro_read(srv.idle, b, sizeof b, COT_FOREVER);
    return NULL;
}

static void *sleep_forever(void *arg) {
    (void)arg;
    cot_coro_sleep(COT_FOREVER);
    return NULL;
}

static void srv_start(cot_loop *loop, size_t index, void *data) {
    (void)data;
    struct sockaddr_in a;
    if (index == 0) {
        srv.listener = listen_loopback(loop, 8, &a);
        CHECK_EQ(cot_coro_new(loop, accept_loop, NULL, 0, &srv.acceptor), 0);
        CHECK_EQ(cot_coro_start(srv.acceptor), 0);
    } else {
        /* A connected socket that never gets a byte. */
        int fds[2];
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
        srv.peer = fds[1];
        CHECK_EQ(cot_tcp_open(loop, fds[0], &srv.idle), 0);
        CHECK_EQ(cot_coro_new(loop, read_forever, NULL, 0, &srv.reader), 0);
        CHECK_EQ(cot_coro_start(srv.reader), 0);
        CHECK_EQ(cot_coro_new(loop, sleep_forever, NULL, 0, &srv.sleeper), 0);
        CHECK_EQ(cot_coro_start(srv.sleeper), 0);
    }
}

static atomic_int srv_stops, srv_ends;

static void srv_stop(cot_loop *loop, size_t index, void *data) {
    (void)data;
    if (index == 0) CHECK_EQ(cot_tcp_close(loop, srv.listener), 0);
    atomic_fetch_add(&srv_stops, 1);
}

static void srv_end(cot_loop *loop, size_t index, void *data) {
    (void)loop;
    (void)data;
    if (index == 0) {
        CHECK_EQ(cot_coro_status(srv.acceptor), COT_CORO_FINISHED);
        CHECK_EQ(cot_coro_free(srv.acceptor), 0);
    } else {
        CHECK_EQ(cot_coro_status(srv.reader), COT_CORO_FINISHED); /* the cancel ended its read */
        CHECK_EQ(cot_coro_free(srv.reader), 0);
        CHECK_EQ(cot_coro_free(srv.sleeper), 0); /* still asleep: freed unfinished */
    }
    atomic_fetch_add(&srv_ends, 1);
}

static void test_shutdown_grace(void) {
    cot_group_options o = {.loops = 2, .start = srv_start, .stop = srv_stop, .end = srv_end};
    cot_group *g;
    CHECK_EQ(cot_group_new(&o, &g), 0);
    uint64_t t0 = now_ns();
    CHECK_EQ(cot_group_shutdown(g, 100 * MS), 0);
    uint64_t took = now_ns() - t0;
    CHECK(took >= 100 * MS); /* loop 1 had open work: it got its grace */
    CHECK(took < 5000 * MS);
    CHECK_EQ(atomic_load(&srv_stops), 2);
    CHECK_EQ(atomic_load(&srv_ends), 2);
    CHECK(srv.accept_result < 0);            /* its listener was closed by the stop callback */
    CHECK_EQ(srv.read_result, COT_ECANCELED); /* the cancel closed its socket */
    CHECK_EQ(cot_group_free(g), 0);
    close(srv.peer);
}

/* ---- shutdown from one of the group's own threads ---- */

static atomic_int inner_result = 1;

static void shut_from_inside(cot_loop *loop, void *data) {
    (void)loop;
    atomic_store(&inner_result, cot_group_shutdown(data, 0));
    CHECK_EQ(cot_group_free(data), COT_EBUSY);
}

static void test_shutdown_inside(void) {
    struct seen s;
    cot_group *g = new_group(&s, 2, 0);
    CHECK_EQ(cot_group_post(g, 1, shut_from_inside, g), 0);
    while (atomic_load(&inner_result) == 1) sched_yield();
    CHECK_EQ(atomic_load(&inner_result), COT_EBUSY);
    CHECK_EQ(cot_group_free(g), 0);
}

/* ---- load: a loop's open connections ---- */

static cot_tcp pair_tcp[2];
static atomic_int pair_step;

static void open_pair(cot_loop *loop, void *data) {
    (void)data;
    int fds[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    for (int i = 0; i < 2; i++) CHECK_EQ(cot_tcp_open(loop, fds[i], &pair_tcp[i]), 0);
    atomic_store(&pair_step, 1);
}

static void close_pair(cot_loop *loop, void *data) {
    (void)data;
    for (int i = 0; i < 2; i++) CHECK_EQ(cot_tcp_close(loop, pair_tcp[i]), 0);
    atomic_store(&pair_step, 2);
}

static void test_load(void) {
    struct seen s;
    cot_group *g = new_group(&s, 3, 0);
    CHECK_EQ(cot_group_least_loaded(g), 0); /* all equal: the first */
    CHECK_EQ(cot_group_post(g, 0, open_pair, NULL), 0);
    while (atomic_load(&pair_step) != 1) sched_yield();
    CHECK_EQ(cot_group_load(g, 0), 2);
    CHECK_EQ(cot_group_load(g, 1), 0);
    CHECK_EQ(cot_group_load(g, 3), 0); /* out of range */
    CHECK_EQ(cot_group_least_loaded(g), 1);
    CHECK_EQ(cot_group_post(g, 0, close_pair, NULL), 0);
    while (atomic_load(&pair_step) != 2) sched_yield();
    CHECK_EQ(cot_group_load(g, 0), 0);
    CHECK_EQ(cot_group_least_loaded(g), 0);
    CHECK_EQ(cot_group_free(g), 0);
}

/* ---- handoff: a connection moves to the least loaded loop ---- */

static struct {
    cot_group *g;
    int peer;
    cot_tcp conn;
    char first, second;
    atomic_int busy_result, read_done, arrived, index, status;
    char rest[8];
} ho;

static void on_read(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    (void)loop;
    (void)sock;
    (void)data;
    CHECK_EQ(result, 1); /* the waiting read, left unharmed by the refusal */
    atomic_store(&ho.read_done, 1);
}

static void on_arrived(cot_loop *loop, int status, cot_tcp tcp, void *data) {
    CHECK(data == &ho);
    atomic_store(&ho.status, status);
    atomic_store(&ho.index, cot_group_index(ho.g));
    CHECK_EQ(cot_tcp_try_read(loop, tcp, ho.rest, sizeof ho.rest), 3);
    CHECK_EQ(cot_tcp_close(loop, tcp), 0);
    atomic_store(&ho.arrived, 1);
}

static void hand_off(cot_loop *loop, void *data) {
    (void)data;
    int fds[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    ho.peer = fds[1];
    CHECK_EQ(cot_tcp_open(loop, fds[0], &ho.conn), 0);
    /* A waiting read: the handoff is refused, nothing changes. */
    CHECK_EQ(cot_tcp_read(loop, ho.conn, &ho.first, 1, COT_FOREVER, on_read, NULL), 0);
    atomic_store(&ho.busy_result, cot_group_handoff(ho.g, loop, ho.conn, COT_LEAST_LOADED, on_arrived, &ho));
}

static void hand_off_now(cot_loop *loop, void *data) {
    (void)data;
    CHECK_EQ(cot_tcp_try_read(loop, ho.conn, &ho.second, 1), 1); /* 2 of 5 bytes here */
    CHECK_EQ(cot_group_handoff(ho.g, loop, ho.conn, 3, on_arrived, &ho), COT_EINVAL);
    CHECK_EQ(cot_group_handoff(ho.g, loop, ho.conn, 1, NULL, &ho), COT_EINVAL);
    CHECK_EQ(cot_group_handoff(ho.g, loop, ho.conn, COT_LEAST_LOADED, on_arrived, &ho), 0);
    CHECK_EQ(cot_tcp_close(loop, ho.conn), COT_EBADF); /* the key left with it */
    CHECK_EQ(cot_group_handoff(ho.g, loop, ho.conn, 1, on_arrived, &ho), COT_EBADF);
}

static void test_handoff(void) {
    struct seen s;
    ho.g = new_group(&s, 3, 0);
    CHECK_EQ(cot_group_post(ho.g, 0, hand_off, NULL), 0);
    while (atomic_load(&ho.busy_result) == 0) sched_yield();
    CHECK_EQ(atomic_load(&ho.busy_result), COT_EBUSY);
    CHECK_EQ(write(ho.peer, "hello", 5), 5);
    while (!atomic_load(&ho.read_done)) sched_yield();
    CHECK_EQ(cot_group_load(ho.g, 0), 1);
    CHECK_EQ(cot_group_post(ho.g, 0, hand_off_now, NULL), 0);
    while (!atomic_load(&ho.arrived)) sched_yield();
    CHECK_EQ(atomic_load(&ho.status), 0);
    CHECK_EQ(atomic_load(&ho.index), 1); /* loop 0 held it: loop 1 had fewest */
    CHECK_EQ(ho.first, 'h');
    CHECK_EQ(ho.second, 'e');
    CHECK(memcmp(ho.rest, "llo", 3) == 0); /* every byte once, in order */
    CHECK_EQ(cot_group_shutdown(ho.g, 0), 0);
    CHECK_EQ(cot_group_handoff(ho.g, NULL, 0, 0, on_arrived, &ho), COT_EPIPE);
    CHECK_EQ(cot_group_free(ho.g), 0);
    close(ho.peer);
}

/* ---- a socket used from a loop that does not own it ---- */

static struct {
    cot_tcp key;
    int fds[2];
    atomic_int step, other_read, other_handoff, other_close, own_read;
} foreign;

static void make_socket(cot_loop *loop, void *data) {
    (void)data;
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, foreign.fds), 0);
    CHECK_EQ(cot_tcp_open(loop, foreign.fds[0], &foreign.key), 0);
    atomic_store(&foreign.step, 1);
}

static void use_elsewhere(cot_loop *loop, void *data) {
    char b[4];
    atomic_store(&foreign.other_read, (int)cot_tcp_try_read(loop, foreign.key, b, sizeof b));
    atomic_store(&foreign.other_handoff, cot_group_handoff(data, loop, foreign.key, 0, on_arrived, NULL));
    atomic_store(&foreign.other_close, cot_tcp_close(loop, foreign.key));
    atomic_store(&foreign.step, 2);
}

static void use_at_home(cot_loop *loop, void *data) {
    (void)data;
    char b[4];
    atomic_store(&foreign.own_read, (int)cot_tcp_try_read(loop, foreign.key, b, sizeof b));
    CHECK_EQ(cot_tcp_close(loop, foreign.key), 0);
    atomic_store(&foreign.step, 3);
}

static void test_foreign_socket(void) {
    struct seen s;
    cot_group *g = new_group(&s, 2, 0);
    CHECK_EQ(cot_group_post(g, 0, make_socket, NULL), 0);
    while (atomic_load(&foreign.step) != 1) sched_yield();
    CHECK_EQ(write(foreign.fds[1], "ok", 2), 2);
    CHECK_EQ(cot_group_post(g, 1, use_elsewhere, g), 0);
    while (atomic_load(&foreign.step) != 2) sched_yield();
    /* Loop 1's table has no such socket: refused, nothing touched. */
    CHECK_EQ(atomic_load(&foreign.other_read), COT_EBADF);
    CHECK_EQ(atomic_load(&foreign.other_handoff), COT_EBADF);
    CHECK_EQ(atomic_load(&foreign.other_close), COT_EBADF);
    CHECK_EQ(cot_group_post(g, 0, use_at_home, NULL), 0);
    while (atomic_load(&foreign.step) != 3) sched_yield();
    CHECK_EQ(atomic_load(&foreign.own_read), 2); /* its own loop still reads it */
    CHECK_EQ(cot_group_free(g), 0);
    close(foreign.fds[1]);
}

static void test_pin(void) {
    struct seen s;
    cot_group *g = new_group(&s, 2, COT_GROUP_PIN);
    for (int i = 0; i < 2; i++) CHECK(s.pinned[i]);
    CHECK_EQ(cot_group_free(g), 0);
    g = new_group(&s, 1, 0);
    CHECK(!s.pinned[0] || cot_cpu_count() == 1);
    CHECK_EQ(cot_group_free(g), 0);
}

int main(void) {
    test_bad_input();
    test_start_and_posts();
    test_invoke();
    test_invoke_gone();
    test_shutdown_grace();
    test_shutdown_inside();
    test_load();
    test_handoff();
    test_foreign_socket();
    test_pin();
    puts("test_group ok");
    return 0;
}
