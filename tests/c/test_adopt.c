/* Sockets made by hand and adopted by a loop (cot_tcp_open, cot_udp_open),
 * and given back (cot_tcp_release, cot_udp_release): a SO_REUSEPORT
 * listener that accepts and echoes, a connected socket, a released
 * descriptor used with plain read/write, descriptors refused (a pipe, a
 * file, the other socket type, -1, a closed one) and left as they were,
 * and a release refused while an operation waits. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* SO_REUSEPORT */
#include <cothread.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "socket_check.h"

/* How many descriptors the process has open. */
static int open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

static int nonblocking(int fd) { return (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0; }

/* Is `fd` open? */
static int is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

/* A plain TCP listener on 127.0.0.1, bound with SO_REUSEPORT; its address
 * in `*a`. Blocking, as socket() makes it. */
static int plain_listener(struct sockaddr_in *a) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    socklen_t len = sizeof *a;
    *a = loopback();
    CHECK(fd >= 0);
    CHECK_EQ(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one), 0);
    CHECK_EQ(bind(fd, (struct sockaddr *)a, sizeof *a), 0);
    CHECK_EQ(listen(fd, 8), 0);
    CHECK_EQ(getsockname(fd, (struct sockaddr *)a, &len), 0);
    return fd;
}

/* A plain client connected to `a` (the kernel completes it from the
 * listener's queue, before any accept). */
/* ---- an adopted listener accepts, and the connection echoes ---- */

struct echo {
    char buf[16];
    int got, echoed;
};

static void echo_wrote(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct echo *e = data;
    CHECK_EQ(result, 5);
    CHECK_EQ(cot_tcp_close(loop, sock), 0);
    e->echoed = 1;
}

/* Reads until the 5 bytes of "hello" are in, then writes them back. */
static void echo_read(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct echo *e = data;
    CHECK(result > 0);
    e->got += (int)result;
    if (e->got < 5)
        CHECK_EQ(cot_tcp_read(loop, sock, e->buf + e->got, (size_t)(5 - e->got), 5000 * MS, echo_read, e), 0);
    else
        CHECK_EQ(cot_tcp_write(loop, sock, e->buf, 5, COT_FOREVER, echo_wrote, e), 0);
}

static void echo_accepted(cot_loop *loop, cot_tcp server, int status, cot_tcp client, void *data) {
    struct echo *e = data;
    (void)server;
    CHECK_EQ(status, 0);
    CHECK_EQ(cot_tcp_read(loop, client, e->buf, 5, 5000 * MS, echo_read, e), 0);
}

static void test_adopted_listener_accepts_and_echoes(void) {
    cot_loop *loop = cot_loop_new();
    struct sockaddr_in a;
    int lfd = plain_listener(&a);
    CHECK(!nonblocking(lfd));
    cot_tcp listener;
    CHECK_EQ(cot_tcp_open(loop, lfd, &listener), 0);
    CHECK(nonblocking(lfd)); /* made non-blocking by the adoption */
    int reuse = 0;
    uint32_t len = sizeof reuse;
    CHECK_EQ(cot_tcp_getopt(loop, listener, SOL_SOCKET, SO_REUSEPORT, &reuse, &len), 0);
    CHECK(reuse); /* the caller's options stay */

    struct echo e;
    memset(&e, 0, sizeof e);
    CHECK_EQ(cot_tcp_accept(loop, listener, 5000 * MS, echo_accepted, &e), 0);
    int c = plain_client(&a);
    CHECK_EQ(write(c, "hello", 5), 5);
    run_until(loop, &e.echoed);
    char back[5];
    read_all(c, back, sizeof back);
    CHECK(memcmp(back, "hello", 5) == 0);
    close(c);

    CHECK_EQ(cot_tcp_close(loop, listener), 0);
    CHECK(!is_open(lfd)); /* adopted: the close was the loop's */
    finish(loop);
}

/* ---- an adopted connected socket reads and writes; released, it is the
 * caller's again ---- */

static void test_adopted_connection_then_release(void) {
    int before = open_fds();
    cot_loop *loop = cot_loop_new();
    struct sockaddr_in a;
    int lfd = plain_listener(&a);
    int mine = plain_client(&a);
    int peer = accept(lfd, NULL, NULL);
    CHECK(peer >= 0);
    close(lfd);

    cot_tcp t;
    CHECK_EQ(cot_tcp_open(loop, mine, &t), 0);
    struct got w = {0, 1}, r = {0, 1};
    CHECK_EQ(cot_tcp_write(loop, t, "ping", 4, 5000 * MS, on_io, &w), 0);
    run_until(loop, &w.done);
    CHECK_EQ(w.result, 4);
    char buf[8];
    read_all(peer, buf, 4);
    CHECK(memcmp(buf, "ping", 4) == 0);
    CHECK_EQ(cot_tcp_read(loop, t, buf, sizeof buf, 5000 * MS, on_io, &r), 0);
    CHECK_EQ(write(peer, "pong", 4), 4);
    run_until(loop, &r.done);
    CHECK_EQ(r.result, 4);
    CHECK(memcmp(buf, "pong", 4) == 0);

    /* It waited, so the loop watched it; released, it leaves the loop. */
    int fd = -1;
    CHECK_EQ(cot_tcp_release(loop, t, &fd), 0);
    CHECK_EQ(fd, mine);
    CHECK(nonblocking(fd)); /* as the loop left it */
    CHECK_EQ(cot_tcp_release(loop, t, &fd), COT_EBADF); /* the key is gone */
    CHECK_EQ(cot_tcp_close(loop, t), COT_EBADF);
    CHECK_EQ(write(fd, "plain", 5), 5);
    read_all(peer, buf, 5);
    CHECK(memcmp(buf, "plain", 5) == 0);
    CHECK_EQ(write(peer, "back", 4), 4);
    read_all(fd, buf, 4);
    CHECK(memcmp(buf, "back", 4) == 0);

    /* Out of the loop's epoll at once: the same loop adopts it again. */
    cot_tcp again;
    CHECK_EQ(cot_tcp_open(loop, fd, &again), 0);
    r.done = 0;
    CHECK_EQ(cot_tcp_read(loop, again, buf, sizeof buf, 5000 * MS, on_io, &r), 0);
    CHECK_EQ(write(peer, "more", 4), 4);
    run_until(loop, &r.done);
    CHECK_EQ(r.result, 4);
    CHECK_EQ(cot_tcp_release(loop, again, &fd), 0);

    /* The loop closes without it, and leaves it open. */
    finish(loop);
    CHECK(is_open(fd));
    CHECK_EQ(close(fd), 0); /* the caller's to close */
    close(peer);
    CHECK_EQ(open_fds(), before);
}

/* ---- UDP: a socket bound by hand, adopted, then released ---- */

struct recv {
    int done;
    int64_t n;
    char buf[16];
    struct sockaddr_storage from;
    uint32_t fromlen;
};

static void on_recv(cot_loop *loop, cot_udp udp, int64_t n, const struct sockaddr *from, uint32_t len, void *data) {
    struct recv *r = data;
    (void)loop;
    (void)udp;
    r->done = 1;
    r->n = n;
    if (from) memcpy(&r->from, from, len);
    r->fromlen = len;
}

static void test_adopted_udp_then_release(void) {
    int before = open_fds();
    cot_loop *loop = cot_loop_new();
    struct sockaddr_in a = loopback();
    socklen_t alen = sizeof a;
    int mine = socket(AF_INET, SOCK_DGRAM, 0);
    int peer = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(mine >= 0 && peer >= 0);
    CHECK_EQ(bind(mine, (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(getsockname(mine, (struct sockaddr *)&a, &alen), 0);

    cot_udp u;
    CHECK_EQ(cot_udp_open(loop, mine, &u), 0);
    CHECK(nonblocking(mine));
    struct recv r;
    memset(&r, 0, sizeof r);
    CHECK_EQ(cot_udp_recv(loop, u, r.buf, sizeof r.buf, 5000 * MS, on_recv, &r), 0);
    CHECK_EQ(sendto(peer, "dgram", 5, 0, (struct sockaddr *)&a, sizeof a), 5);
    run_until(loop, &r.done);
    CHECK_EQ(r.n, 5);
    CHECK(memcmp(r.buf, "dgram", 5) == 0);
    struct got s = {0, 1};
    CHECK_EQ(cot_udp_send(loop, u, "reply", 5, (struct sockaddr *)&r.from, r.fromlen, 5000 * MS, on_io, &s), 0);
    run_until(loop, &s.done);
    CHECK_EQ(s.result, 5);
    char buf[8];
    read_all(peer, buf, 5);
    CHECK(memcmp(buf, "reply", 5) == 0);

    int fd = -1;
    CHECK_EQ(cot_tcp_release(loop, u, &fd), COT_EINVAL); /* the other kind */
    CHECK_EQ(cot_udp_release(loop, u, &fd), 0);
    CHECK_EQ(fd, mine);
    CHECK_EQ(cot_udp_close(loop, u), COT_EBADF);
    CHECK_EQ(sendto(peer, "plain", 5, 0, (struct sockaddr *)&a, sizeof a), 5);
    read_all(fd, buf, 5);
    CHECK(memcmp(buf, "plain", 5) == 0);

    finish(loop);
    CHECK_EQ(close(fd), 0);
    close(peer);
    CHECK_EQ(open_fds(), before);
}

/* A Unix datagram pair is SOCK_DGRAM too: cot_udp_open takes it. */
static void test_unix_datagrams(void) {
    cot_loop *loop = cot_loop_new();
    int fds[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_DGRAM, 0, fds), 0);
    cot_udp a, b;
    CHECK_EQ(cot_udp_open(loop, fds[0], &a), 0);
    CHECK_EQ(cot_udp_open(loop, fds[1], &b), 0);
    struct recv r;
    memset(&r, 0, sizeof r);
    CHECK_EQ(cot_udp_recv(loop, b, r.buf, sizeof r.buf, 5000 * MS, on_recv, &r), 0);
    CHECK_EQ(cot_udp_try_send(loop, a, "unix", 4, NULL, 0), 4);
    run_until(loop, &r.done);
    CHECK_EQ(r.n, 4);
    CHECK(memcmp(r.buf, "unix", 4) == 0);
    CHECK_EQ(cot_udp_close(loop, a), 0);
    CHECK_EQ(cot_udp_close(loop, b), 0);
    finish(loop);
}

/* ---- refused descriptors stay the caller's, as they were ---- */

/* `fd` was refused: it is open, still blocking, and the caller closes it. */
static void still_mine(int fd) {
    CHECK(is_open(fd));
    CHECK(!nonblocking(fd));
    CHECK_EQ(close(fd), 0);
}

static void test_refused_descriptors(void) {
    int before = open_fds();
    cot_loop *loop = cot_loop_new();
    cot_tcp t = 0;
    cot_udp u = 0;

    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(cot_tcp_open(loop, p[0], &t), COT_ENOTSOCK);
    CHECK_EQ(cot_udp_open(loop, p[1], &u), COT_ENOTSOCK);
    still_mine(p[0]);
    still_mine(p[1]);

    FILE *f = tmpfile();
    CHECK(f != NULL);
    CHECK_EQ(cot_tcp_open(loop, fileno(f), &t), COT_ENOTSOCK);
    CHECK_EQ(cot_udp_open(loop, fileno(f), &u), COT_ENOTSOCK);
    CHECK(is_open(fileno(f)) && !nonblocking(fileno(f)));
    CHECK_EQ(fclose(f), 0);

    int dgram = socket(AF_INET, SOCK_DGRAM, 0);
    int stream = socket(AF_INET, SOCK_STREAM, 0);
    int seqpacket = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    CHECK(dgram >= 0 && stream >= 0 && seqpacket >= 0);
    CHECK_EQ(cot_tcp_open(loop, dgram, &t), COT_EINVAL);
    CHECK_EQ(cot_udp_open(loop, stream, &u), COT_EINVAL);
    CHECK_EQ(cot_tcp_open(loop, seqpacket, &t), COT_EINVAL);
    CHECK_EQ(cot_udp_open(loop, seqpacket, &u), COT_EINVAL);
    CHECK_EQ(cot_tcp_open(loop, stream, NULL), COT_EINVAL);
    CHECK_EQ(cot_udp_open(loop, dgram, NULL), COT_EINVAL);
    CHECK_EQ(cot_tcp_open(NULL, stream, &t), COT_EINVAL);
    CHECK_EQ(cot_udp_open(NULL, dgram, &u), COT_EINVAL);
    still_mine(dgram);
    still_mine(stream);
    still_mine(seqpacket);

    CHECK_EQ(cot_tcp_open(loop, -1, &t), COT_EBADF);
    CHECK_EQ(cot_udp_open(loop, -1, &u), COT_EBADF);
    int closed = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(closed >= 0);
    CHECK_EQ(close(closed), 0);
    CHECK_EQ(cot_tcp_open(loop, closed, &t), COT_EBADF);
    CHECK_EQ(cot_udp_open(loop, closed, &u), COT_EBADF);
    CHECK_EQ(t, 0); /* no key was ever written */
    CHECK_EQ(u, 0);

    CHECK_EQ(cot_loop_close(loop), 0); /* nothing was adopted */
    CHECK_EQ(open_fds(), before);
}

/* ---- a release refused while an operation waits ---- */

static void test_release_while_waiting(void) {
    cot_loop *loop = cot_loop_new();
    int fds[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    cot_tcp t;
    CHECK_EQ(cot_tcp_open(loop, fds[0], &t), 0);
    char buf[8];
    struct got r = {0, 1};
    int fd = -1;

    /* A read waits: refused, and the read goes on. */
    CHECK_EQ(cot_tcp_read(loop, t, buf, sizeof buf, 5000 * MS, on_io, &r), 0);
    CHECK_EQ(cot_tcp_release(loop, t, &fd), COT_EBUSY);
    CHECK_EQ(fd, -1);
    CHECK_EQ(write(fds[1], "x", 1), 1);
    run_until(loop, &r.done);
    CHECK_EQ(r.result, 1);

    /* Cancelled, it still waits until the loop ran its callback. */
    r.done = 0;
    CHECK_EQ(cot_tcp_read(loop, t, buf, sizeof buf, COT_FOREVER, on_io, &r), 0);
    CHECK_EQ(cot_tcp_cancel(loop, t, COT_READABLE), 1);
    CHECK_EQ(cot_tcp_release(loop, t, &fd), COT_EBUSY);
    run_until(loop, &r.done);
    CHECK_EQ(r.result, COT_ECANCELED);

    /* Bad input changes nothing either. */
    CHECK_EQ(cot_tcp_release(loop, t, NULL), COT_EINVAL);
    CHECK_EQ(cot_tcp_release(NULL, t, &fd), COT_EINVAL);
    CHECK_EQ(cot_udp_release(loop, t, &fd), COT_EINVAL);
    CHECK_EQ(cot_tcp_release(loop, 12345, &fd), COT_EBADF);
    CHECK_EQ(fd, -1);

    CHECK_EQ(cot_tcp_release(loop, t, &fd), 0);
    CHECK_EQ(fd, fds[0]);
    CHECK_EQ(close(fd), 0);

    /* UDP: a receive waits. */
    cot_udp u;
    CHECK_EQ(cot_udp_init(loop, AF_INET, &u), 0);
    struct recv rr;
    memset(&rr, 0, sizeof rr);
    CHECK_EQ(cot_udp_recv(loop, u, rr.buf, sizeof rr.buf, COT_FOREVER, on_recv, &rr), 0);
    CHECK_EQ(cot_udp_release(loop, u, &fd), COT_EBUSY);
    CHECK_EQ(cot_udp_cancel(loop, u, COT_READABLE), 1);
    run_until(loop, &rr.done);
    CHECK_EQ(rr.n, COT_ECANCELED);
    CHECK_EQ(cot_udp_release(loop, u, &fd), 0);
    CHECK_EQ(close(fd), 0);

    close(fds[1]);
    finish(loop);
}

int main(void) {
    test_adopted_listener_accepts_and_echoes();
    test_adopted_connection_then_release();
    test_adopted_udp_then_release();
    test_unix_datagrams();
    test_refused_descriptors();
    test_release_while_waiting();
    puts("test_adopt: ok");
    return 0;
}
