/* What the socket tests share: the loopback address, a listener on it,
 * running a loop until a callback has run, closing it, and the one callback
 * that keeps a socket operation's result. Inline: a test uses what it needs. */
#ifndef COT_TEST_SOCKET_CHECK_H
#define COT_TEST_SOCKET_CHECK_H

#include <cothread.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"

#define MS 1000000ull

/* 127.0.0.1, port 0 (any). */
static inline struct sockaddr_in loopback(void) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/* A TCP listener on 127.0.0.1 and a free port; its address in `*a`. */
static inline cot_tcp listen_loopback(cot_loop *loop, int backlog, struct sockaddr_in *a) {
    cot_tcp t;
    uint32_t len = sizeof *a;
    *a = loopback();
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &t), 0);
    CHECK_EQ(cot_tcp_bind(loop, t, (struct sockaddr *)a, sizeof *a), 0);
    CHECK_EQ(cot_tcp_listen(loop, t, backlog), 0);
    CHECK_EQ(cot_tcp_getsockname(loop, t, (struct sockaddr *)a, &len), 0);
    return t;
}

/* A blocking client of plain sockets, connected to `a`. */
static inline int plain_client(const struct sockaddr_in *a) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    CHECK_EQ(connect(fd, (const struct sockaddr *)a, sizeof *a), 0);
    return fd;
}

/* Reads exactly `n` bytes from `fd`, blocking or not: poll(2) waits at most
 * 5 s for each part. */
static inline void read_all(int fd, char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        CHECK_EQ(poll(&p, 1, 5000), 1);
        ssize_t r = read(fd, buf + got, n - got);
        CHECK(r > 0);
        got += (size_t)r;
    }
}

/* Runs the loop until `*flag` is set (at most a few thousand turns). */
static inline void run_until(cot_loop *loop, const int *flag) {
    for (int i = 0; i < 5000 && !*flag; i++) CHECK(cot_loop_run(loop, COT_RUN_ONCE) >= 0);
    CHECK(*flag);
}

/* Closes the loop once the sockets' handles are finished. */
static inline void finish(cot_loop *loop) {
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* Where a callback leaves its result. */
struct got {
    int done;
    int64_t result;
};

/* A cot_socket_cb keeping its result in the `struct got` of `data`. */
static inline void on_io(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct got *g = data;
    (void)loop;
    (void)sock;
    CHECK(!g->done); /* a completion runs once */
    g->done = 1;
    g->result = result;
}

/* A stackful coroutine of `loop` running fn(arg), started. */
static inline cot_coro *spawn_on(cot_loop *loop, cot_coro_fn fn, void *arg) {
    cot_coro *co;
    CHECK_EQ(cot_coro_new(loop, fn, arg, 64 * 1024, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    return co;
}

/* Runs `loop` until nothing is left, then checks and frees the coroutines. */
static inline void run_and_free_on(cot_loop *loop, cot_coro **cos, int n) {
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    for (int i = 0; i < n; i++) {
        CHECK_EQ(cot_coro_status(cos[i]), COT_CORO_FINISHED);
        CHECK_EQ(cot_coro_free(cos[i]), 0);
    }
}

#endif
