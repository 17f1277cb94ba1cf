/* A loop group under load: 4 loops exchange 1 000 000 messages all to all,
 * half as posts and half through channels between loops (bounded: senders
 * wait for room on other loops), while one connection is handed from loop
 * to loop around the ring, a thread writing to it all along. Every message
 * and every byte must arrive once, in order per sender, and the group must
 * shut down cleanly. Also under ThreadSanitizer (scripts/tsan-c). */
#define _GNU_SOURCE
#include <cothread.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

#define LOOPS 4
#define PER_PAIR 41667 /* per kind: 4 x 3 pairs x 2 kinds x 41 667 >= 1 000 000 */
#define BYTES (1 << 20) /* through the connection that moves */

static cot_group *g;

/* What each loop received, written on its own thread only. */
static struct loop_state {
    uint32_t next_post[LOOPS], next_chan[LOOPS]; /* next seq expected per sender */
    long bad;
    cot_coro *coros[3];
} st[LOOPS];

static cot_chan *inbox[LOOPS]; /* loop i receives (from, seq) pairs on inbox[i] */
static atomic_int receivers_done, senders_done;

struct item {
    uint32_t from, seq;
};

/* ---- posts ---- */

static void on_post(cot_loop *loop, void *data) {
    (void)loop;
    uintptr_t v = (uintptr_t)data;
    uint32_t from = (uint32_t)(v >> 32), seq = (uint32_t)v;
    struct loop_state *me = &st[cot_group_index(g)];
    if (from >= LOOPS || me->next_post[from] != seq) me->bad++;
    else me->next_post[from]++;
}

/* Posts PER_PAIR messages to each other loop, yielding now and then so
 * that its own loop takes what others post to it. */
static void *post_all(void *arg) {
    uint32_t me = (uint32_t)(uintptr_t)arg;
    for (uint32_t seq = 0; seq < PER_PAIR; seq++) {
        for (uint32_t to = 0; to < LOOPS; to++)
            if (to != me) CHECK_EQ(cot_group_post(g, to, on_post, (void *)(((uintptr_t)me << 32) | seq)), 0);
        if (seq % 256 == 255) CHECK_EQ(cot_coro_yield(), 0);
    }
    atomic_fetch_add(&senders_done, 1);
    return NULL;
}

/* ---- channels ---- */

static void *send_all(void *arg) {
    uint32_t me = (uint32_t)(uintptr_t)arg;
    for (uint32_t seq = 0; seq < PER_PAIR; seq++)
        for (uint32_t to = 0; to < LOOPS; to++)
            if (to != me) {
                struct item it = {me, seq};
                CHECK_EQ(cot_coro_chan_send(inbox[to], &it, COT_FOREVER), 0);
            }
    atomic_fetch_add(&senders_done, 1);
    return NULL;
}

static void *receive_all(void *arg) {
    uint32_t me = (uint32_t)(uintptr_t)arg;
    struct loop_state *s = &st[me];
    for (long n = 0; n < (long)PER_PAIR * (LOOPS - 1); n++) {
        struct item it;
        CHECK_EQ(cot_coro_chan_recv(inbox[me], &it, COT_FOREVER), 0);
        if (it.from >= LOOPS || s->next_chan[it.from] != it.seq) s->bad++;
        else s->next_chan[it.from]++;
    }
    atomic_fetch_add(&receivers_done, 1);
    return NULL;
}

/* ---- the connection that moves ---- */

static struct {
    int writer_fd;
    long got; /* bytes read so far, each checked: byte k is k % 251 */
    long bad;
    atomic_int hops, done;
} conn;

static void arrived(cot_loop *loop, int status, cot_tcp tcp, void *data);

/* Reads at most 8 KiB of what is there, checks it, and passes the
 * connection on: at least 128 handoffs for the 1 MiB, the rest of what came
 * moving with it. */
static void take_and_pass(cot_loop *loop, cot_tcp tcp) {
    unsigned char buf[4096];
    int64_t n = 0;
    for (int k = 0; k < 2 && (n = cot_tcp_try_read(loop, tcp, buf, sizeof buf)) > 0; k++)
        for (int64_t i = 0; i < n; i++, conn.got++)
            if (buf[i] != conn.got % 251) conn.bad++;
    CHECK(n > 0 || n == COT_EAGAIN || n == 0);
    if (conn.got == BYTES) {
        CHECK_EQ(cot_tcp_close(loop, tcp), 0);
        atomic_store(&conn.done, 1);
        return;
    }
    int next = (cot_group_index(g) + 1) % LOOPS;
    atomic_fetch_add(&conn.hops, 1);
    CHECK_EQ(cot_group_handoff(g, loop, tcp, (size_t)next, arrived, &conn), 0);
}

static void arrived(cot_loop *loop, int status, cot_tcp tcp, void *data) {
    CHECK(data == &conn);
    CHECK_EQ(status, 0);
    take_and_pass(loop, tcp);
}

static void start_conn(cot_loop *loop, void *data) {
    int fd = (int)(intptr_t)data;
    cot_tcp tcp;
    CHECK_EQ(cot_tcp_open(loop, fd, &tcp), 0);
    take_and_pass(loop, tcp);
}

static void *writer(void *arg) {
    (void)arg;
    unsigned char buf[1024];
    for (long k = 0; k < BYTES;) {
        size_t n = 0;
        for (; n < sizeof buf && k + (long)n < BYTES; n++) buf[n] = (unsigned char)((k + (long)n) % 251);
        ssize_t w = write(conn.writer_fd, buf, n);
        CHECK(w > 0);
        k += w;
        if (k % 16384 == 0) usleep(50); /* let it move between writes */
    }
    return NULL;
}

/* ---- the group ---- */

static void start(cot_loop *loop, size_t index, void *data) {
    (void)data;
    cot_coro_fn fns[3] = {post_all, send_all, receive_all};
    for (int k = 0; k < 3; k++) {
        CHECK_EQ(cot_coro_new(loop, fns[k], (void *)(uintptr_t)index, 0, &st[index].coros[k]), 0);
        CHECK_EQ(cot_coro_start(st[index].coros[k]), 0);
    }
}

static void end(cot_loop *loop, size_t index, void *data) {
    (void)loop;
    (void)data;
    for (int k = 0; k < 3; k++) {
        CHECK_EQ(cot_coro_status(st[index].coros[k]), COT_CORO_FINISHED);
        CHECK_EQ(cot_coro_free(st[index].coros[k]), 0);
    }
}

int main(void) {
    for (int i = 0; i < LOOPS; i++) CHECK_EQ(cot_chan_new(NULL, sizeof(struct item), 64, &inbox[i]), 0);
    int fds[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    conn.writer_fd = fds[1];

    cot_group_options o = {.loops = LOOPS, .start = start, .end = end};
    CHECK_EQ(cot_group_new(&o, &g), 0);
    pthread_t w;
    CHECK_EQ(pthread_create(&w, NULL, writer, NULL), 0);
    CHECK_EQ(cot_group_post(g, 0, start_conn, (void *)(intptr_t)fds[0]), 0);

    while (atomic_load(&receivers_done) < LOOPS || atomic_load(&senders_done) < 2 * LOOPS ||
           !atomic_load(&conn.done))
        usleep(1000);
    CHECK_EQ(pthread_join(w, NULL), 0);
    /* The posts of the last sender may still be on their way: the shutdown
     * runs every post the loops accepted before they end. */
    CHECK_EQ(cot_group_shutdown(g, COT_FOREVER), 0);

    long posts = 0, items = 0;
    for (int i = 0; i < LOOPS; i++) {
        CHECK_EQ(st[i].bad, 0);
        for (int j = 0; j < LOOPS; j++) {
            CHECK_EQ(st[i].next_post[j], i == j ? 0 : PER_PAIR); /* none lost, none twice */
            CHECK_EQ(st[i].next_chan[j], i == j ? 0 : PER_PAIR);
            posts += st[i].next_post[j];
            items += st[i].next_chan[j];
        }
    }
    CHECK(posts + items >= 1000000);
    CHECK_EQ(conn.got, BYTES);
    CHECK_EQ(conn.bad, 0);
    CHECK(atomic_load(&conn.hops) >= BYTES / 8192 - 1); /* around the ring, again and again */
    CHECK_EQ(cot_group_free(g), 0);
    for (int i = 0; i < LOOPS; i++) CHECK_EQ(cot_chan_free(inbox[i]), 0);
    close(conn.writer_fd);
    printf("test_group_stress ok: %ld posts, %ld channel items, %ld bytes over %d handoffs\n", posts, items,
           conn.got, atomic_load(&conn.hops));
    return 0;
}
