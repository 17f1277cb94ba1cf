/* The "try now" socket calls: cot_tcp_try_read, _try_write, _try_accept,
 * cot_udp_try_recv, _try_send. Each answers inside the call, never calls
 * back, says COT_EAGAIN when it would wait, and COT_EBUSY while an
 * operation of its direction waits. And the hint cot_tcp_drained. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "socket_check.h"

static void pause_us(long us) {
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

static void on_recv(cot_loop *loop, cot_udp udp, int64_t n, const struct sockaddr *from, uint32_t fromlen,
                    void *data) {
    (void)from;
    (void)fromlen;
    on_io(loop, udp, n, data);
}

static void pair(cot_loop *loop, cot_tcp *a, cot_tcp *b) {
    int fds[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    CHECK_EQ(cot_tcp_open(loop, fds[0], a), 0);
    CHECK_EQ(cot_tcp_open(loop, fds[1], b), 0);
}

/* Data there: read at once; empty: COT_EAGAIN; the end: 0. */
static void test_read(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp a, b;
    pair(loop, &a, &b);
    char buf[16];
    CHECK_EQ(cot_tcp_try_read(loop, b, buf, sizeof buf), COT_EAGAIN);
    CHECK_EQ(cot_tcp_try_write(loop, a, "hello", 5), 5);
    CHECK_EQ(cot_tcp_try_read(loop, b, buf, 2), 2);
    CHECK(memcmp(buf, "he", 2) == 0);
    CHECK_EQ(cot_tcp_try_read(loop, b, buf, sizeof buf), 3);
    CHECK(memcmp(buf, "llo", 3) == 0);
    CHECK_EQ(cot_tcp_try_read(loop, b, buf, sizeof buf), COT_EAGAIN);

    /* A pending read goes first: the try refuses until it ended. */
    struct got r = {0, 1};
    char rbuf[16];
    CHECK_EQ(cot_tcp_read(loop, b, rbuf, sizeof rbuf, COT_FOREVER, on_io, &r), 0);
    CHECK_EQ(cot_tcp_try_write(loop, a, "xyz", 3), 3);
    CHECK_EQ(cot_tcp_try_read(loop, b, buf, sizeof buf), COT_EBUSY);
    CHECK_EQ(cot_tcp_try_accept(loop, b, &(cot_tcp){0}), COT_EBUSY);
    run_until(loop, &r.done);
    CHECK_EQ(r.result, 3);
    CHECK(memcmp(rbuf, "xyz", 3) == 0);

    CHECK_EQ(cot_tcp_shutdown(loop, a), 0);
    CHECK_EQ(cot_tcp_try_read(loop, b, buf, sizeof buf), 0);
    CHECK_EQ(cot_tcp_close(loop, a), 0);
    CHECK_EQ(cot_tcp_close(loop, b), 0);
    finish(loop);
}

/* cot_tcp_drained: 1 once a receive found the socket empty or came back
 * short, 0 after a full one; a hint only, the try still reads. */
static void test_drained(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp a, b;
    pair(loop, &a, &b);
    char buf[16];
    CHECK_EQ(cot_tcp_drained(loop, b), 0); /* nothing read yet */
    CHECK_EQ(cot_tcp_try_read(loop, b, buf, sizeof buf), COT_EAGAIN);
    CHECK_EQ(cot_tcp_drained(loop, b), 1);
    CHECK_EQ(cot_tcp_drained(loop, a), 0); /* per socket */

    /* Drained, yet a try sees what came since; a full read clears it. */
    CHECK_EQ(cot_tcp_try_write(loop, a, "hello", 5), 5);
    CHECK_EQ(cot_tcp_try_read(loop, b, buf, 2), 2);
    CHECK_EQ(cot_tcp_drained(loop, b), 0);
    CHECK_EQ(cot_tcp_try_read(loop, b, buf, sizeof buf), 3); /* short */
    CHECK(memcmp(buf, "llo", 3) == 0);
    CHECK_EQ(cot_tcp_drained(loop, b), 1);

    /* A read waits for readiness and takes what came; it fills buf: not
     * drained. */
    struct got r = {0, 1};
    char rbuf[3];
    CHECK_EQ(cot_tcp_read(loop, b, rbuf, sizeof rbuf, COT_FOREVER, on_io, &r), 0);
    CHECK_EQ(cot_tcp_try_write(loop, a, "xyzw", 4), 4);
    run_until(loop, &r.done);
    CHECK_EQ(r.result, 3);
    CHECK(memcmp(rbuf, "xyz", 3) == 0);
    CHECK_EQ(cot_tcp_drained(loop, b), 0);
    CHECK_EQ(cot_tcp_try_read(loop, b, buf, sizeof buf), 1);
    CHECK_EQ(cot_tcp_drained(loop, b), 1);

    /* Bad keys. */
    cot_udp u;
    CHECK_EQ(cot_udp_init(loop, AF_INET, &u), 0);
    CHECK_EQ(cot_tcp_drained(loop, u), COT_EINVAL); /* a UDP key */
    CHECK_EQ(cot_udp_close(loop, u), 0);
    CHECK_EQ(cot_tcp_drained(NULL, b), COT_EINVAL);
    CHECK_EQ(cot_tcp_drained(loop, 0), COT_EBADF);
    CHECK_EQ(cot_tcp_drained(loop, 987654321), COT_EBADF);
    CHECK_EQ(cot_tcp_close(loop, b), 0);
    CHECK_EQ(cot_tcp_drained(loop, b), COT_EBADF);
    CHECK_EQ(cot_tcp_close(loop, a), 0);
    finish(loop);
}

/* A try_write fills the send buffer: short or full counts, then
 * COT_EAGAIN; a pending write makes it COT_EBUSY. */
static void test_write_fills(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp a, b;
    pair(loop, &a, &b);
    enum { CHUNK = 100000 };
    char *big = calloc(1, CHUNK);
    CHECK(big != NULL);
    int64_t n, total = 0;
    int calls = 0;
    while ((n = cot_tcp_try_write(loop, a, big, CHUNK)) > 0) {
        total += n;
        calls++;
        CHECK(calls < 10000);
    }
    CHECK_EQ(n, COT_EAGAIN);
    CHECK(total > 0);
    CHECK(total % CHUNK != 0 || calls > 0); /* some went before it filled */

    struct got w = {0, 1};
    CHECK_EQ(cot_tcp_write(loop, a, "tail", 4, COT_FOREVER, on_io, &w), 0);
    CHECK_EQ(cot_tcp_try_write(loop, a, "x", 1), COT_EBUSY); /* never overtakes */
    /* Drain the peer by try_read: the bytes are all zero, then the tail. */
    int64_t got = 0;
    char last[4] = {0};
    for (int i = 0; i < 100000 && got < total + 4; i++) {
        int64_t r = cot_tcp_try_read(loop, b, big, CHUNK);
        if (r == COT_EAGAIN) {
            CHECK(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0);
            continue;
        }
        CHECK(r > 0);
        for (int64_t k = 0; k < r; k++) {
            int64_t at = got + k;
            if (at < total) CHECK_EQ(big[k], 0);
            else last[at - total] = big[k];
        }
        got += r;
    }
    CHECK_EQ(got, total + 4);
    CHECK(memcmp(last, "tail", 4) == 0);
    run_until(loop, &w.done);
    CHECK_EQ(w.result, 4);
    free(big);
    CHECK_EQ(cot_tcp_close(loop, a), 0);
    CHECK_EQ(cot_tcp_close(loop, b), 0);
    finish(loop);
}

/* The peer resets: an error, never a SIGPIPE. */
static void test_peer_reset(void) {
    CHECK(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
    cot_loop *loop = cot_loop_new();
    cot_tcp c, conn;
    struct sockaddr_in a;
    cot_tcp srv = listen_loopback(loop, 4, &a);
    CHECK_EQ(cot_tcp_try_accept(loop, srv, &conn), COT_EAGAIN);

    struct got g = {0, 1};
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &c), 0);
    CHECK_EQ(cot_tcp_connect(loop, c, (struct sockaddr *)&a, sizeof a, 5000 * MS, on_io, &g), 0);
    run_until(loop, &g.done);
    CHECK_EQ(g.result, 0);
    int rc;
    for (int i = 0; i < 1000 && (rc = cot_tcp_try_accept(loop, srv, &conn)) == COT_EAGAIN; i++) pause_us(1000);
    CHECK_EQ(rc, 0);
    CHECK(conn != 0);

    CHECK_EQ(cot_tcp_try_write(loop, c, "ab", 2), 2);
    int n = 0;
    for (int i = 0; i < 1000 && n == 0; i++) {
        char x[4];
        int64_t r = cot_tcp_try_read(loop, conn, x, sizeof x);
        if (r == COT_EAGAIN) { pause_us(1000); continue; }
        CHECK_EQ(r, 2);
        n = 1;
    }
    CHECK(n);
    /* Unread bytes and linger 0: the close resets. */
    CHECK_EQ(cot_tcp_try_write(loop, c, "unread", 6), 6);
    pause_us(10000);
    int off[2] = {1, 0};
    CHECK_EQ(cot_tcp_setopt(loop, conn, SOL_SOCKET, SO_LINGER, off, sizeof off), 0);
    CHECK_EQ(cot_tcp_close(loop, conn), 0);
    int64_t r = 0;
    for (int i = 0; i < 1000; i++) {
        r = cot_tcp_try_write(loop, c, "x", 1);
        if (r < 0 && r != COT_EAGAIN) break;
        pause_us(1000);
    }
    CHECK(r == COT_ECONNRESET || r == COT_EPIPE);
    CHECK_EQ(cot_tcp_try_write(loop, c, "x", 1), COT_EPIPE);
    CHECK_EQ(cot_tcp_close(loop, c), 0);
    CHECK_EQ(cot_tcp_close(loop, srv), 0);
    finish(loop);
}

/* UDP: empty: COT_EAGAIN; a datagram cut to the buffer, its sender. */
static void test_udp(void) {
    cot_loop *loop = cot_loop_new();
    cot_udp u1, u2;
    struct sockaddr_in a = loopback(), b = loopback();
    CHECK_EQ(cot_udp_init(loop, AF_INET, &u1), 0);
    CHECK_EQ(cot_udp_init(loop, AF_INET, &u2), 0);
    CHECK_EQ(cot_udp_bind(loop, u1, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(cot_udp_bind(loop, u2, (struct sockaddr *)&b, sizeof b), 0);
    uint32_t len = sizeof a;
    CHECK_EQ(cot_udp_getsockname(loop, u1, (struct sockaddr *)&a, &len), 0);
    len = sizeof b;
    CHECK_EQ(cot_udp_getsockname(loop, u2, (struct sockaddr *)&b, &len), 0);

    char buf[8];
    struct sockaddr_storage from;
    CHECK_EQ(cot_udp_try_recv(loop, u2, buf, sizeof buf, &from), COT_EAGAIN);
    CHECK_EQ(cot_udp_try_send(loop, u1, "hello", 5, (struct sockaddr *)&b, sizeof b), 5);
    CHECK_EQ(cot_udp_try_send(loop, u1, NULL, 0, (struct sockaddr *)&b, sizeof b), 0); /* empty */
    int64_t r = COT_EAGAIN;
    for (int i = 0; i < 1000 && (r = cot_udp_try_recv(loop, u2, buf, 3, &from)) == COT_EAGAIN; i++) pause_us(1000);
    CHECK_EQ(r, 3);
    CHECK(memcmp(buf, "hel", 3) == 0);
    CHECK_EQ(from.ss_family, AF_INET);
    CHECK_EQ(((struct sockaddr_in *)&from)->sin_port, a.sin_port);
    for (int i = 0; i < 1000 && (r = cot_udp_try_recv(loop, u2, buf, sizeof buf, NULL)) == COT_EAGAIN; i++) pause_us(1000);
    CHECK_EQ(r, 0); /* the empty datagram; the rest of "hello" was dropped */

    /* A pending receive goes first. */
    struct got g = {0, 1};
    CHECK_EQ(cot_udp_recv(loop, u2, buf, sizeof buf, COT_FOREVER, on_recv, &g), 0);
    CHECK_EQ(cot_udp_try_send(loop, u1, "z", 1, (struct sockaddr *)&b, sizeof b), 1);
    pause_us(10000);
    CHECK_EQ(cot_udp_try_recv(loop, u2, buf, sizeof buf, NULL), COT_EBUSY);
    run_until(loop, &g.done);
    CHECK_EQ(g.result, 1);
    CHECK_EQ(buf[0], 'z');

    /* Bad input. */
    CHECK_EQ(cot_udp_try_recv(loop, u2, NULL, 4, NULL), COT_EINVAL);
    CHECK_EQ(cot_udp_try_recv(loop, u2, buf, 0, NULL), COT_EINVAL);
    CHECK_EQ(cot_udp_try_send(loop, u1, NULL, 4, NULL, 0), COT_EINVAL);
    CHECK_EQ(cot_udp_try_send(loop, u1, "x", 1, (struct sockaddr *)&b, 1), COT_EINVAL);
    r = cot_udp_try_send(loop, u1, "x", 1, NULL, 0); /* no peer: the system's error */
    CHECK(r < 0 && r != COT_EAGAIN);
    CHECK_EQ(cot_udp_try_recv(loop, 12345, buf, sizeof buf, NULL), COT_EBADF);
    CHECK_EQ(cot_tcp_try_read(loop, u2, buf, sizeof buf), COT_EINVAL); /* a UDP key */
    CHECK_EQ(cot_udp_close(loop, u1), 0);
    CHECK_EQ(cot_udp_try_send(loop, u1, "x", 1, (struct sockaddr *)&b, sizeof b), COT_EBADF);
    CHECK_EQ(cot_udp_close(loop, u2), 0);
    finish(loop);
}

static void test_bad_input(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp a, b;
    pair(loop, &a, &b);
    char buf[4];
    CHECK_EQ(cot_tcp_try_read(loop, a, NULL, 4), COT_EINVAL);
    CHECK_EQ(cot_tcp_try_read(loop, a, buf, 0), COT_EINVAL);
    CHECK_EQ(cot_tcp_try_write(loop, a, NULL, 4), COT_EINVAL);
    CHECK_EQ(cot_tcp_try_write(loop, a, buf, 0), COT_EINVAL);
    CHECK_EQ(cot_tcp_try_accept(loop, a, NULL), COT_EINVAL);
    CHECK_EQ(cot_tcp_try_read(NULL, a, buf, 4), COT_EINVAL);
    CHECK_EQ(cot_tcp_try_read(loop, 0, buf, 4), COT_EBADF);
    CHECK_EQ(cot_tcp_try_read(loop, 987654321, buf, 4), COT_EBADF);
    CHECK(strcmp(cot_strerror(COT_EAGAIN), "resource temporarily unavailable") == 0);
    CHECK_EQ(cot_tcp_close(loop, a), 0);
    CHECK_EQ(cot_tcp_try_read(loop, a, buf, 4), COT_EBADF);
    CHECK_EQ(cot_tcp_try_write(loop, a, "x", 1), COT_EBADF);
    cot_tcp c;
    CHECK_EQ(cot_tcp_try_accept(loop, a, &c), COT_EBADF);
    CHECK_EQ(cot_tcp_close(loop, b), 0);
    finish(loop);
}

int main(void) {
    test_read();
    test_drained();
    test_write_fills();
    test_peer_reset();
    test_udp();
    test_bad_input();
    return 0;
}
