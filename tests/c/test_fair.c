/* Fairness of stackful coroutines (COT_BUDGET): a coroutine whose calls all
 * end at once yields before its call number COT_BUDGET + 1 of a turn, and
 * loses nothing by it.
 * - a channel drained by one coroutine while another counts its own turns:
 *   the other runs exactly once every COT_BUDGET receives, items in order;
 * - the same with reads of a socket whose bytes are all there;
 * - a reader flooded by a writer thread and a ticker on one loop: the
 *   ticker is never late by more than two ticks, the bytes come in order.
 * Without the budget the first two see no turn of the other coroutine and
 * the ticker waits for the whole flood. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "socket_check.h"
#include "now.h"

static cot_loop *loop;

/* ---- the other coroutine: counts its turns until told to stop ---- */

static int turns, stop_other;

static void *other(void *arg) {
    (void)arg;
    while (!stop_other) {
        turns++;
        CHECK_EQ(cot_coro_yield(), 0);
    }
    return NULL;
}

/* After call i (from 0) of the eater, the other has had i / COT_BUDGET
 * turns: calls COT_BUDGET, 2 * COT_BUDGET, ... yielded before trying. */
static void check_turn(int i) {
    if (turns != i / (int)COT_BUDGET) {
        fprintf(stderr, "after call %d: the other coroutine had %d turns, expected %d\n", i, turns, i / (int)COT_BUDGET);
        exit(1);
    }
}

/* ---- a channel whose items are all there ---- */

#define ITEMS (3 * (int)COT_BUDGET + 10)

static void *eat_chan(void *arg) {
    cot_chan *ch = arg;
    int v;
    for (int i = 0; i < ITEMS; i++) {
        CHECK_EQ(cot_coro_chan_recv(ch, &v, COT_CORO_FOREVER), 0);
        check_turn(i);
        CHECK_EQ(v, i); /* nothing lost, in order */
    }
    stop_other = 1;
    return NULL;
}

static void channel_drain_yields_every_budget(void) {
    cot_chan *ch;
    CHECK_EQ(cot_chan_new(loop, sizeof(int), 0, &ch), 0);
    for (int i = 0; i < ITEMS; i++) CHECK_EQ(cot_chan_try_send(ch, &i), 1);
    turns = stop_other = 0;
    cot_coro *cos[2] = {spawn_on(loop, eat_chan, ch), spawn_on(loop, other, NULL)};
    run_and_free_on(loop, cos, 2);
    CHECK_EQ(turns, (ITEMS - 1) / (int)COT_BUDGET); /* its last turn saw the stop */
    CHECK_EQ(cot_chan_free(ch), 0);
}

/* ---- sockets: a connected pair of plain descriptors ---- */

static void tcp_pair(int fds[2]) {
    struct sockaddr_in a = loopback();
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(l >= 0);
    CHECK_EQ(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(listen(l, 1), 0);
    CHECK_EQ(getsockname(l, (struct sockaddr *)&a, &len), 0);
    fds[1] = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fds[1] >= 0);
    CHECK_EQ(connect(fds[1], (struct sockaddr *)&a, sizeof a), 0);
    fds[0] = accept(l, NULL, NULL);
    CHECK(fds[0] >= 0);
    close(l);
}

static unsigned char pattern(uint64_t i) { return (unsigned char)(i % 251); }

/* Checks that `n` bytes at `buf` continue the pattern from `*at`. */
static void check_bytes(const unsigned char *buf, int64_t n, uint64_t *at) {
    for (int64_t k = 0; k < n; k++, (*at)++) {
        if (buf[k] != pattern(*at)) {
            fprintf(stderr, "byte %llu: %u, expected %u\n", (unsigned long long)*at, buf[k], pattern(*at));
            exit(1);
        }
    }
}

/* ---- a socket whose bytes are all there ---- */

#define CHUNK 16
#define PRELOADED (8 * (int)COT_BUDGET * CHUNK) /* 16 KiB: fits the socket's buffers */

static void *eat_socket(void *arg) {
    cot_tcp t = (cot_tcp)(uintptr_t)arg;
    unsigned char buf[CHUNK];
    uint64_t at = 0;
    for (int i = 0;; i++) {
        int64_t n = cot_coro_read(t, buf, sizeof buf, COT_CORO_FOREVER);
        check_turn(i);
        if (n == 0) break;
        CHECK_EQ(n, CHUNK); /* all there: never short */
        check_bytes(buf, n, &at);
    }
    CHECK_EQ(at, PRELOADED);
    CHECK_EQ(cot_tcp_close(loop, t), 0);
    stop_other = 1;
    return NULL;
}

static void socket_reads_yield_every_budget(void) {
    int fds[2];
    static unsigned char data[PRELOADED];
    tcp_pair(fds);
    for (int i = 0; i < PRELOADED; i++) data[i] = pattern((uint64_t)i);
    CHECK_EQ(write(fds[1], data, sizeof data), (ssize_t)sizeof data);
    close(fds[1]); /* the end of the stream after them */
    cot_tcp t;
    CHECK_EQ(cot_tcp_open(loop, fds[0], &t), 0);
    turns = stop_other = 0;
    cot_coro *cos[2] = {spawn_on(loop, eat_socket, (void *)(uintptr_t)t), spawn_on(loop, other, NULL)};
    run_and_free_on(loop, cos, 2);
}

/* ---- a flooded reader and a ticker ---- */

#define TICK (25 * MS)
#define FLOOD (600 * MS)

static int flood_done;
static uint64_t worst_late, ticks;

static void *ticker(void *arg) {
    (void)arg;
    while (!flood_done) {
        uint64_t t0 = now_ns();
        CHECK_EQ(cot_coro_sleep(TICK), 0);
        uint64_t late = now_ns() - t0 - TICK;
        if (late > worst_late) worst_late = late;
        ticks++;
    }
    return NULL;
}

static void *flooded(void *arg) {
    cot_tcp t = (cot_tcp)(uintptr_t)arg;
    unsigned char buf[64]; /* small reads: the writer stays ahead */
    uint64_t at = 0, end = now_ns() + FLOOD;
    while (now_ns() < end) {
        int64_t n = cot_coro_read(t, buf, sizeof buf, 1000 * MS);
        CHECK(n > 0);
        check_bytes(buf, n, &at);
    }
    flood_done = 1;
    CHECK_EQ(cot_tcp_close(loop, t), 0); /* the writer's next send fails */
    return NULL;
}

/* Writes the pattern as fast as the socket takes it, until the reader goes. */
static void *writer(void *arg) {
    int fd = *(int *)arg;
    static unsigned char buf[64 * 1024 + 251]; /* the pattern from any phase */
    for (size_t k = 0; k < sizeof buf; k++) buf[k] = pattern(k);
    uint64_t at = 0;
    for (;;) {
        ssize_t n = send(fd, buf + at % 251, 64 * 1024, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* the reader closed */
        at += (uint64_t)n;
    }
    return NULL;
}

static void flood_does_not_starve_a_ticker(void) {
    int fds[2];
    tcp_pair(fds);
    cot_tcp t;
    CHECK_EQ(cot_tcp_open(loop, fds[0], &t), 0);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, writer, &fds[1]), 0);
    flood_done = 0;
    worst_late = ticks = 0;
    cot_coro *cos[2] = {spawn_on(loop, ticker, NULL), spawn_on(loop, flooded, (void *)(uintptr_t)t)};
    run_and_free_on(loop, cos, 2);
    pthread_join(th, NULL);
    close(fds[1]);
    fprintf(stderr, "flood: %llu ticks, the latest %.1f ms late\n", (unsigned long long)ticks, worst_late / 1e6);
    CHECK(worst_late <= 2 * TICK);
    CHECK(ticks >= FLOOD / TICK / 2);
}

/* With arguments: only the tests whose names contain one of them. */
static int wanted(int argc, char **argv, const char *name) {
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i])) return 1;
    return argc < 2;
}

int main(int argc, char **argv) {
    loop = cot_loop_new();
    CHECK(loop != NULL);
    if (wanted(argc, argv, "channel_drain_yields_every_budget")) channel_drain_yields_every_budget();
    if (wanted(argc, argv, "socket_reads_yield_every_budget")) socket_reads_yield_every_budget();
    if (wanted(argc, argv, "flood_does_not_starve_a_ticker")) flood_does_not_starve_a_ticker();
    finish(loop);
    return 0;
}
