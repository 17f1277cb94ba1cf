/* TCP sockets through the C ABI: echo over IPv4, IPv6 and Unix, cancel
 * during connect, a peer reset mid-write, a deadline in the same loop turn
 * as readiness, full duplex, and bad input. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "socket_check.h"

#define BIG (16u << 20) /* more than a socket's buffers hold */

/* ---- echo: a server that writes back what it reads, one client ---- */

struct echo {
    cot_tcp server, conn, client;
    char sbuf[64], cbuf[64];
    int served, replied, closed, peer_family;
};

static void echo_read(cot_loop *loop, uint64_t sock, int64_t result, void *data);

static void echo_wrote(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct echo *e = data;
    CHECK(result > 0);
    CHECK_EQ(cot_tcp_read(loop, sock, e->sbuf, sizeof e->sbuf, COT_FOREVER, echo_read, e), 0);
}

static void echo_read(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct echo *e = data;
    if (result == 0) { /* the client shut its side: done */
        CHECK_EQ(cot_tcp_close(loop, sock), 0);
        e->closed = 1;
        return;
    }
    CHECK(result > 0);
    e->served += (int)result;
    CHECK_EQ(cot_tcp_write(loop, sock, e->sbuf, (size_t)result, COT_FOREVER, echo_wrote, e), 0);
}

static void echo_accepted(cot_loop *loop, cot_tcp server, int status, cot_tcp client, void *data) {
    struct echo *e = data;
    CHECK_EQ(status, 0);
    CHECK(client != 0);
    CHECK_EQ(server, e->server);
    e->conn = client;
    CHECK_EQ(cot_tcp_read(loop, client, e->sbuf, sizeof e->sbuf, 5000 * MS, echo_read, e), 0);
}

static void echo_reply(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct echo *e = data;
    CHECK_EQ(result, 5);
    CHECK(memcmp(e->cbuf, "hello", 5) == 0);
    e->replied = 1;
    CHECK_EQ(cot_tcp_shutdown(loop, sock), 0);
}

static void echo_sent(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct echo *e = data;
    CHECK_EQ(result, 5);
    CHECK_EQ(cot_tcp_read(loop, sock, e->cbuf, 5, 5000 * MS, echo_reply, e), 0);
}

static void echo_connected(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct echo *e = data;
    CHECK_EQ(result, 0);
    struct sockaddr_storage peer;
    uint32_t plen = sizeof peer;
    CHECK_EQ(cot_tcp_getpeername(loop, sock, (struct sockaddr *)&peer, &plen), 0);
    e->peer_family = peer.ss_family;
    /* writev of two pieces: the server sees them as one stream */
    struct iovec iov[2] = {{(void *)"hel", 3}, {(void *)"lo", 2}};
    CHECK_EQ(cot_tcp_writev(loop, sock, iov, 2, COT_FOREVER, echo_sent, data), 0);
}

/* Echo over `family`, the server bound to `addr`. */
static void echo_over(int family, const struct sockaddr *addr, uint32_t len) {
    cot_loop *loop = cot_loop_new();
    struct echo e;
    memset(&e, 0, sizeof e);
    CHECK_EQ(cot_tcp_init(loop, family, &e.server), 0);
    if (family != AF_UNIX) {
        int one = 1;
        CHECK_EQ(cot_tcp_setopt(loop, e.server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
    }
    CHECK_EQ(cot_tcp_bind(loop, e.server, addr, len), 0);
    CHECK_EQ(cot_tcp_listen(loop, e.server, 8), 0);
    struct sockaddr_storage bound;
    uint32_t blen = sizeof bound;
    CHECK_EQ(cot_tcp_getsockname(loop, e.server, (struct sockaddr *)&bound, &blen), 0);
    CHECK_EQ(bound.ss_family, family);
    CHECK_EQ(cot_tcp_accept(loop, e.server, 5000 * MS, echo_accepted, &e), 0);

    CHECK_EQ(cot_tcp_init(loop, family, &e.client), 0);
    if (family != AF_UNIX) CHECK_EQ(cot_tcp_nodelay(loop, e.client, 1), 0);
    CHECK_EQ(cot_tcp_connect(loop, e.client, (struct sockaddr *)&bound, blen, 5000 * MS, echo_connected, &e), 0);
    run_until(loop, &e.closed);
    CHECK_EQ(e.served, 5);
    CHECK(e.replied);

    CHECK_EQ(e.peer_family, family);
    CHECK_EQ(cot_tcp_close(loop, e.client), 0);
    CHECK_EQ(cot_tcp_close(loop, e.server), 0);
    finish(loop);
}

static void test_echo(void) {
    struct sockaddr_in v4;
    memset(&v4, 0, sizeof v4);
    v4.sin_family = AF_INET;
    v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    echo_over(AF_INET, (struct sockaddr *)&v4, sizeof v4);

    struct sockaddr_in6 v6;
    memset(&v6, 0, sizeof v6);
    v6.sin6_family = AF_INET6;
    v6.sin6_addr = in6addr_loopback;
    echo_over(AF_INET6, (struct sockaddr *)&v6, sizeof v6);

    struct sockaddr_un un;
    memset(&un, 0, sizeof un);
    un.sun_family = AF_UNIX;
    snprintf(un.sun_path, sizeof un.sun_path, "/tmp/cot_test_tcp_%d", (int)getpid());
    unlink(un.sun_path);
    echo_over(AF_UNIX, (struct sockaddr *)&un, sizeof un);
    unlink(un.sun_path);
}

/* A connected pair of stream sockets, adopted by the loop. */
static void pair(cot_loop *loop, cot_tcp *a, cot_tcp *b) {
    int fds[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    CHECK_EQ(cot_tcp_open(loop, fds[0], a), 0);
    CHECK_EQ(cot_tcp_open(loop, fds[1], b), 0);
}

/* A cancelled connect ends with COT_ECANCELED, at the next turn, even if
 * the kernel made the connection meanwhile. */
static void test_cancel_during_connect(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp c;
    struct sockaddr_in a;
    cot_tcp srv = listen_loopback(loop, 1, &a);

    struct got g = {0, 1};
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &c), 0);
    CHECK_EQ(cot_tcp_connect(loop, c, (struct sockaddr *)&a, sizeof a, COT_FOREVER, on_io, &g), 0);
    CHECK_EQ(cot_tcp_cancel(loop, c, COT_WRITABLE), 1);
    CHECK(!g.done); /* never inside the cancel */
    CHECK_EQ(cot_tcp_cancel(loop, c, COT_WRITABLE), 0); /* cancelled already */
    run_until(loop, &g.done);
    CHECK_EQ(g.result, COT_ECANCELED);
    CHECK_EQ(cot_tcp_cancel(loop, c, COT_READABLE | COT_WRITABLE), 0); /* nothing waits */

    /* A connect that waits when its socket closes is cancelled too. */
    cot_tcp c2;
    struct got g2 = {0, 1};
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &c2), 0);
    CHECK_EQ(cot_tcp_connect(loop, c2, (struct sockaddr *)&a, sizeof a, COT_FOREVER, on_io, &g2), 0);
    CHECK_EQ(cot_tcp_close(loop, c2), 0);
    run_until(loop, &g2.done);
    CHECK_EQ(g2.result, COT_ECANCELED);

    CHECK_EQ(cot_tcp_close(loop, c), 0);
    CHECK_EQ(cot_tcp_close(loop, srv), 0);
    finish(loop);
}

/* The peer resets the connection while a write waits: the write's callback
 * gets COT_ECONNRESET or COT_EPIPE, and the process lives (no SIGPIPE). */
static void test_peer_reset_mid_write(void) {
    CHECK(signal(SIGPIPE, SIG_DFL) != SIG_ERR); /* a SIGPIPE would kill us */
    cot_loop *loop = cot_loop_new();
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(lfd >= 0);
    CHECK_EQ(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(listen(lfd, 1), 0);
    socklen_t len = sizeof a;
    CHECK_EQ(getsockname(lfd, (struct sockaddr *)&a, &len), 0);

    cot_tcp c;
    struct got conn = {0, 1};
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &c), 0);
    CHECK_EQ(cot_tcp_connect(loop, c, (struct sockaddr *)&a, len, 5000 * MS, on_io, &conn), 0);
    run_until(loop, &conn.done);
    CHECK_EQ(conn.result, 0);
    int peer = accept(lfd, NULL, NULL);
    CHECK(peer >= 0);

    char *big = calloc(1, BIG);
    CHECK(big != NULL);
    struct got w = {0, 1};
    CHECK_EQ(cot_tcp_write(loop, c, big, BIG, 5000 * MS, on_io, &w), 0);
    free(big); /* copied: the buffer is free at once */
    for (int i = 0; i < 3; i++) CHECK(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0);
    CHECK(!w.done); /* the peer reads nothing: the write waits */

    struct linger lg = {1, 0};
    CHECK_EQ(setsockopt(peer, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    close(peer); /* with unread bytes and linger 0: a reset */
    run_until(loop, &w.done);
    CHECK(w.result == COT_ECONNRESET || w.result == COT_EPIPE);

    /* Writing again fails the same way, at once or at the next turn. */
    struct got w2 = {0, 1};
    CHECK_EQ(cot_tcp_write(loop, c, "x", 1, 5000 * MS, on_io, &w2), 0);
    run_until(loop, &w2.done);
    CHECK(w2.result == COT_ECONNRESET || w2.result == COT_EPIPE);

    close(lfd);
    CHECK_EQ(cot_tcp_close(loop, c), 0);
    finish(loop);
}

/* A deadline due in the same loop turn as the data: the data wins (the
 * operation tries once more when its deadline fires). With no data, the
 * read times out. */
static void test_deadline_same_turn_as_readiness(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp a, b;
    pair(loop, &a, &b);
    char buf[8];

    struct got late = {0, 1};
    CHECK_EQ(cot_tcp_read(loop, a, buf, sizeof buf, 0, on_io, &late), 0);
    run_until(loop, &late.done);
    CHECK_EQ(late.result, COT_ETIMEDOUT);

    struct got w = {0, 1};
    CHECK_EQ(cot_tcp_write(loop, b, "ping", 4, COT_FOREVER, on_io, &w), 0);
    run_until(loop, &w.done);
    CHECK_EQ(w.result, 4); /* the bytes wait in a's queue, unread */
    struct got on_time = {0, 1};
    CHECK_EQ(cot_tcp_read(loop, a, buf, sizeof buf, 0, on_io, &on_time), 0);
    run_until(loop, &on_time.done);
    CHECK_EQ(on_time.result, 4);
    CHECK(memcmp(buf, "ping", 4) == 0);

    CHECK_EQ(cot_tcp_close(loop, a), 0);
    CHECK_EQ(cot_tcp_close(loop, b), 0);
    finish(loop);
}

/* readv fills its buffers in order (empty ones skipped) straight from the
 * socket; what does not fit stays for the next read; 0 at the end. */
static void test_readv_fills_in_order(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp a, b;
    pair(loop, &a, &b);
    char one[3], two[8], rest[8];
    struct iovec iov[3] = {{one, sizeof one}, {rest, 0}, {two, sizeof two}};

    struct got w = {0, 1};
    CHECK_EQ(cot_tcp_write(loop, b, "abcdefghijklmno", 15, COT_FOREVER, on_io, &w), 0);
    run_until(loop, &w.done);
    struct got r = {0, 1};
    CHECK_EQ(cot_tcp_readv(loop, a, iov, 3, COT_FOREVER, on_io, &r), 0);
    CHECK(!r.done); /* never inside the call */
    run_until(loop, &r.done);
    CHECK_EQ(r.result, 11);
    CHECK(memcmp(one, "abc", 3) == 0 && memcmp(two, "defghijk", 8) == 0);
    r.done = 0;
    CHECK_EQ(cot_tcp_read(loop, a, rest, sizeof rest, COT_FOREVER, on_io, &r), 0);
    run_until(loop, &r.done);
    CHECK_EQ(r.result, 4);
    CHECK(memcmp(rest, "lmno", 4) == 0);

    /* Waiting first: a short arrival fills only the first buffer. */
    r.done = 0;
    CHECK_EQ(cot_tcp_readv(loop, a, iov, 3, 5000 * MS, on_io, &r), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0, 1);
    CHECK(!r.done);
    w.done = 0;
    CHECK_EQ(cot_tcp_write(loop, b, "xy", 2, COT_FOREVER, on_io, &w), 0);
    run_until(loop, &r.done);
    CHECK_EQ(r.result, 2);
    CHECK(memcmp(one, "xy", 2) == 0);

    /* The end of the stream. */
    CHECK_EQ(cot_tcp_close(loop, b), 0);
    r.done = 0;
    CHECK_EQ(cot_tcp_readv(loop, a, iov, 3, 5000 * MS, on_io, &r), 0);
    run_until(loop, &r.done);
    CHECK_EQ(r.result, 0);
    CHECK_EQ(cot_tcp_close(loop, a), 0);
    finish(loop);
}

/* Another reader of the descriptor (a poll handle on a dup) may take the
 * bytes whose readiness a waiting read saw: the read waits on, and gets
 * the next bytes, never a spurious error. */
static int thief_fd;
static size_t stolen;
static void on_thief(cot_loop *loop, cot_handle h, int events, void *data) {
    (void)events;
    (void)data;
    char b[64];
    ssize_t n = recv(thief_fd, b, sizeof b, MSG_DONTWAIT);
    if (n > 0) stolen += (size_t)n;
    CHECK_EQ(cot_poll_stop(loop, h), 0);
}

static void test_read_whose_bytes_were_taken(void) {
    cot_loop *loop = cot_loop_new();
    int fds[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    cot_tcp a;
    CHECK_EQ(cot_tcp_open(loop, fds[0], &a), 0);
    char buf[8];
    struct got r = {0, 1};
    CHECK_EQ(cot_tcp_read(loop, a, buf, sizeof buf, 5000 * MS, on_io, &r), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0, 1); /* the read now waits in epoll */
    thief_fd = dup(fds[0]);
    CHECK(thief_fd >= 0);
    cot_handle thief;
    CHECK_EQ(cot_poll_init(loop, thief_fd, NULL, &thief), 0);
    CHECK_EQ(cot_poll_start(loop, thief, COT_READABLE, on_thief), 0);
    CHECK_EQ(send(fds[1], "zz", 2, 0), 2);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_ONCE) >= 0, 1);
    if (!r.done) CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0, 1);
    /* Whoever came first has the bytes; the read is not ended by nothing. */
    if (r.done) {
        CHECK_EQ(r.result, 2);
        CHECK_EQ(stolen, 0);
    } else {
        CHECK_EQ(stolen, 2);
        CHECK_EQ(send(fds[1], "q", 1, 0), 1);
        run_until(loop, &r.done);
        CHECK_EQ(r.result, 1);
        CHECK_EQ(buf[0], 'q');
    }
    CHECK_EQ(cot_close(loop, thief, NULL), 0);
    CHECK_EQ(cot_tcp_close(loop, a), 0);
    close(thief_fd);
    close(fds[1]);
    finish(loop);
}

/* One read and one write at once on one socket: full duplex. A second
 * reader or writer gets COT_EBUSY and leaves the first alone. */
static void test_full_duplex_and_busy(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp a, b;
    pair(loop, &a, &b);
    char in[8], peer_in[8];
    struct got r = {0, 1}, w = {0, 1}, pr = {0, 1}, pw = {0, 1};
    CHECK_EQ(cot_tcp_read(loop, a, in, sizeof in, COT_FOREVER, on_io, &r), 0);
    CHECK_EQ(cot_tcp_read(loop, a, in, sizeof in, COT_FOREVER, on_io, &r), COT_EBUSY);
    CHECK_EQ(cot_tcp_write(loop, a, "to b", 4, COT_FOREVER, on_io, &w), 0);
    CHECK_EQ(cot_tcp_write(loop, a, "again", 5, COT_FOREVER, on_io, &w), COT_EBUSY);
    CHECK_EQ(cot_tcp_shutdown(loop, a), COT_EBUSY); /* a write waits */
    CHECK_EQ(cot_tcp_read(loop, b, peer_in, sizeof peer_in, COT_FOREVER, on_io, &pr), 0);
    CHECK_EQ(cot_tcp_write(loop, b, "to a", 4, COT_FOREVER, on_io, &pw), 0);
    run_until(loop, &r.done);
    run_until(loop, &w.done);
    run_until(loop, &pr.done);
    run_until(loop, &pw.done);
    CHECK_EQ(r.result, 4);
    CHECK_EQ(w.result, 4);
    CHECK_EQ(pr.result, 4);
    CHECK(memcmp(in, "to a", 4) == 0);
    CHECK(memcmp(peer_in, "to b", 4) == 0);

    /* Two writers while the first waits on a full buffer. */
    char *big = calloc(1, BIG);
    CHECK(big != NULL);
    struct got w1 = {0, 1};
    CHECK_EQ(cot_tcp_write(loop, a, big, BIG, COT_FOREVER, on_io, &w1), 0);
    for (int i = 0; i < 3; i++) CHECK(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0);
    CHECK(!w1.done);
    CHECK_EQ(cot_tcp_write(loop, a, big, 1, COT_FOREVER, on_io, &w), COT_EBUSY);
    free(big);
    CHECK_EQ(cot_tcp_cancel(loop, a, COT_WRITABLE), 1);
    run_until(loop, &w1.done);
    CHECK_EQ(w1.result, COT_ECANCELED);

    /* The read side reads what its peer sends, then the end of the stream. */
    CHECK_EQ(cot_tcp_shutdown(loop, b), 0);
    struct got eof = {0, 1};
    CHECK_EQ(cot_tcp_read(loop, a, in, sizeof in, COT_FOREVER, on_io, &eof), 0);
    run_until(loop, &eof.done);
    CHECK_EQ(eof.result, 0);

    CHECK_EQ(cot_tcp_close(loop, a), 0);
    CHECK_EQ(cot_tcp_close(loop, b), 0);
    finish(loop);
}

/* Bad input gets an error code, never a crash, and never a callback. */
/* Reads what `b` has now into nothing; checks the bytes follow `pattern`. */
static size_t drain_checked(cot_loop *loop, cot_tcp b, size_t at) {
    static char sink[64 * 1024];
    int64_t n;
    while ((n = cot_tcp_try_read(loop, b, sink, sizeof sink)) > 0) {
        for (int64_t i = 0; i < n; i++) CHECK_EQ(sink[i], (char)((at + (size_t)i) % 251));
        at += (size_t)n;
    }
    return at;
}

/* cot_tcp_write_nocopy sends from the caller's buffer: all of it arrives;
 * a write cancelled or closed while it waits never reads the buffer again
 * once its callback ran (freed there: ASan would see a later read). */
static void test_write_nocopy(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp a, b;
    pair(loop, &a, &b);
    char *buf = malloc(BIG);
    for (size_t i = 0; i < BIG; i++) buf[i] = (char)(i % 251);
    struct got w = {0};
    CHECK_EQ(cot_tcp_write_nocopy(loop, a, buf, BIG, COT_FOREVER, on_io, &w), 0);
    size_t got = 0;
    while (!w.done) {
        got = drain_checked(loop, b, got);
        CHECK(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0);
    }
    CHECK_EQ(w.result, BIG);
    CHECK_EQ(drain_checked(loop, b, got), BIG);

    /* Cancelled, then closed, while waiting: the buffer goes in the callback. */
    for (int how = 0; how < 2; how++) {
        char *lent = malloc(BIG);
        memset(lent, 1, BIG);
        struct got c = {0};
        CHECK_EQ(cot_tcp_write_nocopy(loop, a, lent, BIG, COT_FOREVER, on_io, &c), 0);
        for (int i = 0; i < 3; i++) CHECK(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0);
        CHECK(!c.done); /* nobody reads b: it waits */
        if (how == 0) {
            CHECK_EQ(cot_tcp_cancel(loop, a, COT_WRITABLE), 1);
        } else {
            CHECK_EQ(cot_tcp_close(loop, a), 0);
        }
        run_until(loop, &c.done);
        CHECK_EQ(c.result, COT_ECANCELED);
        free(lent);
        char sink[64 * 1024];
        while (cot_tcp_try_read(loop, b, sink, sizeof sink) > 0) {
        }
        for (int i = 0; i < 3; i++) CHECK(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0);
    }

    /* Bad input, as cot_tcp_write. */
    struct got g = {0};
    CHECK_EQ(cot_tcp_write_nocopy(loop, b, NULL, 1, COT_FOREVER, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_write_nocopy(loop, b, buf, 0, COT_FOREVER, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_write_nocopy(loop, b, buf, 1, COT_FOREVER, NULL, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_write_nocopy(loop, b, buf, 1, (uint64_t)-5, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_write_nocopy(loop, a, buf, 1, COT_FOREVER, on_io, &g), COT_EBADF); /* closed */
    CHECK(!g.done);
    free(buf);
    CHECK_EQ(cot_tcp_close(loop, b), 0);
    finish(loop);
}

static void test_bad_input(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp a, b, gone;
    pair(loop, &a, &b);
    char buf[4];
    struct got g = {0, 1};

    /* A closed socket. */
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &gone), 0);
    CHECK_EQ(cot_tcp_close(loop, gone), 0);
    CHECK_EQ(cot_tcp_close(loop, gone), COT_EBADF);
    CHECK_EQ(cot_tcp_read(loop, gone, buf, sizeof buf, COT_FOREVER, on_io, &g), COT_EBADF);
    CHECK_EQ(cot_tcp_write(loop, gone, "x", 1, COT_FOREVER, on_io, &g), COT_EBADF);
    CHECK_EQ(cot_tcp_accept(loop, gone, COT_FOREVER, NULL, NULL), COT_EINVAL); /* NULL cb first */
    CHECK_EQ(cot_tcp_listen(loop, gone, 1), COT_EBADF);
    CHECK_EQ(cot_tcp_shutdown(loop, gone), COT_EBADF);
    CHECK_EQ(cot_tcp_cancel(loop, gone, COT_READABLE), COT_EBADF);
    CHECK_EQ(cot_tcp_read(loop, 0, buf, sizeof buf, COT_FOREVER, on_io, &g), COT_EBADF);
    CHECK_EQ(cot_tcp_read(loop, 12345678901ull, buf, sizeof buf, COT_FOREVER, on_io, &g), COT_EBADF);
    CHECK_EQ(cot_tcp_read(NULL, a, buf, sizeof buf, COT_FOREVER, on_io, &g), COT_EINVAL);

    /* A negative timeout (converted) is refused; a huge one is a long wait. */
    CHECK_EQ(cot_tcp_read(loop, a, buf, sizeof buf, (uint64_t)-5, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_read(loop, a, buf, sizeof buf, (uint64_t)INT64_MIN, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_write(loop, a, "x", 1, (uint64_t)-1000, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_read(loop, a, buf, sizeof buf, (uint64_t)INT64_MAX, on_io, &g), 0);
    for (int i = 0; i < 3; i++) CHECK(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0);
    CHECK(!g.done); /* no overflow into the past: it waits */
    CHECK_EQ(cot_tcp_cancel(loop, a, COT_READABLE), 1);
    run_until(loop, &g.done);
    CHECK_EQ(g.result, COT_ECANCELED);

    /* Buffers of length 0, NULL buffers and callbacks. */
    g.done = 0;
    CHECK_EQ(cot_tcp_read(loop, a, buf, 0, COT_FOREVER, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_write(loop, a, buf, 0, COT_FOREVER, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_read(loop, a, NULL, 4, COT_FOREVER, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_write(loop, a, "x", 1, COT_FOREVER, NULL, &g), COT_EINVAL);
    struct iovec empty[2] = {{buf, 0}, {NULL, 0}};
    CHECK_EQ(cot_tcp_readv(loop, a, empty, 2, COT_FOREVER, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_writev(loop, a, empty, 2, COT_FOREVER, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_readv(loop, a, empty, -1, COT_FOREVER, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_writev(loop, a, NULL, 1, COT_FOREVER, on_io, &g), COT_EINVAL);

    /* Bad addresses, events, and a socket of the other kind. */
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    CHECK_EQ(cot_tcp_bind(loop, a, NULL, 0), COT_EINVAL);
    CHECK_EQ(cot_tcp_bind(loop, a, (struct sockaddr *)&sin, 1), COT_EINVAL);
    CHECK_EQ(cot_tcp_bind(loop, a, (struct sockaddr *)&sin, 100000), COT_EINVAL);
    CHECK_EQ(cot_tcp_cancel(loop, a, 0), COT_EINVAL);
    CHECK_EQ(cot_tcp_cancel(loop, a, 64), COT_EINVAL);
    CHECK_EQ(cot_tcp_init(loop, 12345, &gone), COT_EAFNOSUPPORT);
    CHECK_EQ(cot_tcp_open(loop, -1, &gone), COT_EBADF);
    cot_udp u;
    CHECK_EQ(cot_udp_init(loop, AF_INET, &u), 0);
    CHECK_EQ(cot_tcp_read(loop, u, buf, sizeof buf, COT_FOREVER, on_io, &g), COT_EINVAL);
    CHECK_EQ(cot_tcp_close(loop, u), COT_EINVAL);
    CHECK_EQ(cot_udp_close(loop, a), COT_EINVAL);
    CHECK_EQ(cot_udp_close(loop, u), 0);
    CHECK(!g.done);

    /* A socket that waited holds a handle: the loop closes after it. */
    CHECK_EQ(cot_loop_close(loop), COT_EBUSY);

    CHECK_EQ(cot_tcp_close(loop, a), 0);
    CHECK_EQ(cot_tcp_close(loop, b), 0);
    finish(loop);
}

/* A lookup's result. */
struct found {
    int done, status;
    struct addrinfo *res;
};

static void on_found(cot_loop *loop, cot_req id, int status, struct addrinfo *res, void *data) {
    struct found *f = data;
    (void)loop;
    (void)id;
    CHECK(!f->done);
    f->done = 1;
    f->status = status;
    f->res = res;
    CHECK(status == 0 ? res != NULL : res == NULL);
}

/* Names resolved with a deadline and a cancel, then a connect to one. */
static void test_resolve_then_connect(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp c;
    struct sockaddr_in a;
    cot_tcp srv = listen_loopback(loop, 1, &a);
    char port[8];
    snprintf(port, sizeof port, "%u", (unsigned)ntohs(a.sin_port));

    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    struct found f = {0, 1, NULL};
    cot_resolve id;
    CHECK_EQ(cot_resolve_start(loop, "localhost", port, &hints, 5000 * MS, on_found, &f, &id), 0);
    run_until(loop, &f.done);
    CHECK_EQ(f.status, 0);
    CHECK_EQ(cot_resolve_cancel(loop, id), COT_EINVAL); /* ended */
    struct got conn = {0, 1};
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &c), 0);
    CHECK_EQ(cot_tcp_connect(loop, c, f.res->ai_addr, f.res->ai_addrlen, 5000 * MS, on_io, &conn), 0);
    freeaddrinfo(f.res);
    run_until(loop, &conn.done);
    CHECK_EQ(conn.result, 0);

    /* A cancel wins, at the next turn, whatever the pool finds meanwhile. */
    struct found k = {0, 1, NULL};
    CHECK_EQ(cot_resolve_start(loop, "localhost", NULL, NULL, COT_FOREVER, on_found, &k, &id), 0);
    CHECK_EQ(cot_resolve_cancel(loop, id), 0);
    CHECK_EQ(cot_resolve_cancel(loop, id), COT_EBUSY);
    CHECK(!k.done);
    run_until(loop, &k.done);
    CHECK_EQ(k.status, COT_ECANCELED);

    /* A deadline of 0: the first of the lookup and its deadline ends it; a
     * list that comes late is freed (LeakSanitizer checks). */
    struct found z = {0, 1, NULL};
    CHECK_EQ(cot_resolve_start(loop, "localhost", NULL, NULL, 0, on_found, &z, &id), 0);
    run_until(loop, &z.done);
    CHECK(z.status == COT_ETIMEDOUT || z.status == 0);
    if (z.res) freeaddrinfo(z.res);

    CHECK_EQ(cot_resolve_start(loop, "localhost", NULL, NULL, (uint64_t)-2, on_found, &z, &id), COT_EINVAL);
    CHECK_EQ(cot_resolve_start(loop, NULL, NULL, NULL, COT_FOREVER, on_found, &z, &id), COT_EINVAL);
    CHECK_EQ(cot_resolve_start(loop, "localhost", NULL, NULL, COT_FOREVER, NULL, &z, &id), COT_EINVAL);
    CHECK_EQ(cot_resolve_start(loop, "localhost", NULL, NULL, COT_FOREVER, on_found, &z, NULL), COT_EINVAL);
    CHECK_EQ(cot_resolve_cancel(loop, 0), COT_EINVAL);

    CHECK_EQ(cot_tcp_close(loop, c), 0);
    CHECK_EQ(cot_tcp_close(loop, srv), 0);
    finish(loop); /* waits for the lookups still on the pool */
}

int main(void) {
    test_echo();
    test_cancel_during_connect();
    test_peer_reset_mid_write();
    test_deadline_same_turn_as_readiness();
    test_readv_fills_in_order();
    test_read_whose_bytes_were_taken();
    test_full_duplex_and_busy();
    test_write_nocopy();
    test_bad_input();
    test_resolve_then_connect();
    puts("test_tcp: ok");
    return 0;
}
