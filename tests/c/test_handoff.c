/* Connections across loops: listeners of two loops on two threads sharing
 * one port (cot_tcp_reuseport, cot_udp_reuseport), a connection moved from
 * one loop to another thread's loop (cot_tcp_export, cot_tcp_import) with
 * every byte arriving once and in order, the refusals of export and import,
 * and each loop's count of connections (cot_loop_connections), read from
 * another thread while the loop runs. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* SO_REUSEPORT */
#include <cothread.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "socket_check.h"

static void sleep_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* A TCP socket of `loop` bound to 127.0.0.1:`port` (0: any), with
 * SO_REUSEPORT if `reuse`: 0 and the socket in `*t`, or the bind's error
 * (the socket closed then). */
static int bind_tcp(cot_loop *loop, uint16_t port, int reuse, cot_tcp *t) {
    struct sockaddr_in a = loopback();
    a.sin_port = htons(port);
    CHECK_EQ(cot_tcp_init(loop, AF_INET, t), 0);
    if (reuse) CHECK_EQ(cot_tcp_reuseport(loop, *t, 1), 0);
    int r = cot_tcp_bind(loop, *t, (struct sockaddr *)&a, sizeof a);
    if (r != 0) CHECK_EQ(cot_tcp_close(loop, *t), 0);
    return r;
}

static uint16_t port_of(cot_loop *loop, cot_tcp t) {
    struct sockaddr_in a;
    uint32_t len = sizeof a;
    CHECK_EQ(cot_tcp_getsockname(loop, t, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

/* ---- SO_REUSEPORT: two loops on two threads accept on one port ---- */

struct server {
    cot_loop *loop;
    cot_tcp listener;
    atomic_int accepted;
    atomic_int *stop;
};

/* Accepts again and again, a short timeout at a time, until told to stop. */
static void on_accept(cot_loop *loop, cot_tcp listener, int status, cot_tcp client, void *data) {
    struct server *s = data;
    if (status == 0) {
        atomic_fetch_add(&s->accepted, 1);
        CHECK_EQ(cot_tcp_close(loop, client), 0);
    } else {
        CHECK_EQ(status, COT_ETIMEDOUT);
    }
    if (!atomic_load(s->stop)) CHECK_EQ(cot_tcp_accept(loop, listener, 20 * MS, on_accept, s), 0);
}

static void *serve(void *arg) {
    struct server *s = arg;
    CHECK_EQ(cot_tcp_accept(s->loop, s->listener, 20 * MS, on_accept, s), 0);
    CHECK_EQ(cot_loop_run(s->loop, COT_RUN_DEFAULT), 0);
    return NULL;
}

static void test_reuseport_listeners_of_two_loops_share_a_port(void) {
    enum { CLIENTS = 64 };
    atomic_int stop = 0;
    struct server s[2];
    for (int i = 0; i < 2; i++) {
        s[i].loop = cot_loop_new();
        atomic_init(&s[i].accepted, 0);
        s[i].stop = &stop;
    }
    CHECK_EQ(bind_tcp(s[0].loop, 0, 1, &s[0].listener), 0);
    uint16_t port = port_of(s[0].loop, s[0].listener);
    CHECK_EQ(bind_tcp(s[1].loop, port, 1, &s[1].listener), 0);
    /* Without the option, the port is taken. */
    cot_tcp other;
    CHECK_EQ(bind_tcp(s[1].loop, port, 0, &other), COT_EADDRINUSE);
    for (int i = 0; i < 2; i++) CHECK_EQ(cot_tcp_listen(s[i].loop, s[i].listener, CLIENTS), 0);

    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK_EQ(pthread_create(&th[i], NULL, serve, &s[i]), 0);
    struct sockaddr_in a = loopback();
    a.sin_port = htons(port);
    /* The kernel picks a listener by a hash of the client's port: with 64
     * clients, one listener gets none with odds of 2^-63. */
    for (int i = 0; i < CLIENTS; i++) close(plain_client(&a));
    for (int i = 0; i < 5000; i++) {
        if (atomic_load(&s[0].accepted) + atomic_load(&s[1].accepted) == CLIENTS) break;
        sleep_ms(1);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) CHECK_EQ(pthread_join(th[i], NULL), 0);
    int a0 = atomic_load(&s[0].accepted), a1 = atomic_load(&s[1].accepted);
    CHECK_EQ(a0 + a1, CLIENTS);
    CHECK(a0 > 0 && a1 > 0);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(cot_tcp_close(s[i].loop, s[i].listener), 0);
        finish(s[i].loop);
    }
}

static void test_bind_without_reuseport_is_refused(void) {
    cot_loop *loop = cot_loop_new();
    cot_tcp t1, t2, t3;
    CHECK_EQ(bind_tcp(loop, 0, 0, &t1), 0);
    uint16_t port = port_of(loop, t1);
    CHECK_EQ(cot_tcp_listen(loop, t1, 4), 0);
    CHECK_EQ(bind_tcp(loop, port, 0, &t2), COT_EADDRINUSE);
    CHECK_EQ(bind_tcp(loop, port, 1, &t3), COT_EADDRINUSE); /* both must set it */
    CHECK_EQ(cot_tcp_close(loop, t1), 0);

    /* UDP: the same, with cot_udp_reuseport. */
    cot_udp u[3];
    struct sockaddr_in a = loopback();
    uint32_t len = sizeof a;
    for (int i = 0; i < 3; i++) CHECK_EQ(cot_udp_init(loop, AF_INET, &u[i]), 0);
    CHECK_EQ(cot_udp_reuseport(loop, u[0], 1), 0);
    CHECK_EQ(cot_udp_reuseport(loop, u[1], 1), 0);
    CHECK_EQ(cot_udp_bind(loop, u[0], (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(cot_udp_getsockname(loop, u[0], (struct sockaddr *)&a, &len), 0);
    CHECK_EQ(cot_udp_bind(loop, u[1], (struct sockaddr *)&a, sizeof a), 0);
    CHECK_EQ(cot_udp_bind(loop, u[2], (struct sockaddr *)&a, sizeof a), COT_EADDRINUSE);
    int on = 0;
    len = sizeof on;
    CHECK_EQ(cot_udp_getopt(loop, u[1], SOL_SOCKET, SO_REUSEPORT, &on, &len), 0);
    CHECK(on);
    /* Bad input. */
    CHECK_EQ(cot_tcp_reuseport(NULL, u[0], 1), COT_EINVAL);
    CHECK_EQ(cot_tcp_reuseport(loop, u[0], 1), COT_EINVAL); /* a UDP key */
    CHECK_EQ(cot_udp_reuseport(loop, 12345, 1), COT_EBADF);
    for (int i = 0; i < 3; i++) CHECK_EQ(cot_udp_close(loop, u[i]), 0);
    finish(loop);
}

/* ---- a connection moved to another thread's loop ---- */

static const char PART1[] = "0123456789";  /* sent before the export */
static const char PART2[] = "abcdefghij";  /* sent after the import */
#define FIRST_READ 4                       /* read by loop A */
#define REST (sizeof PART1 - 1 - FIRST_READ + sizeof PART2 - 1)

struct importer {
    cot_loop *loop;
    cot_tcp_exported *ex;
    cot_tcp tcp;
    char buf[REST];
    size_t got;
    int done;
};

static void on_reply(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct importer *im = data;
    CHECK_EQ(result, 4);
    CHECK_EQ(cot_tcp_close(loop, sock), 0);
    im->done = 1;
}

/* Reads until the rest is in, then answers "done". */
static void on_rest(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct importer *im = data;
    CHECK(result > 0);
    im->got += (size_t)result;
    if (im->got < REST)
        CHECK_EQ(cot_tcp_read(loop, sock, im->buf + im->got, REST - im->got, 5000 * MS, on_rest, im), 0);
    else
        CHECK_EQ(cot_tcp_write(loop, sock, "done", 4, 5000 * MS, on_reply, im), 0);
}

static void *import_and_read(void *arg) {
    struct importer *im = arg;
    CHECK_EQ(cot_tcp_import(im->loop, im->ex, &im->tcp), 0);
    CHECK_EQ(cot_tcp_read(im->loop, im->tcp, im->buf, REST, 5000 * MS, on_rest, im), 0);
    run_until(im->loop, &im->done);
    CHECK_EQ(cot_loop_run(im->loop, COT_RUN_DEFAULT), 0);
    return NULL;
}

static void on_accepted(cot_loop *loop, cot_tcp server, int status, cot_tcp client, void *data) {
    cot_tcp *out = data;
    (void)loop;
    (void)server;
    CHECK_EQ(status, 0);
    *out = client;
}

static void test_a_connection_moves_to_another_threads_loop(void) {
    cot_loop *a = cot_loop_new(), *b = cot_loop_new();
    struct sockaddr_in addr;
    cot_tcp listener = listen_loopback(a, 4, &addr), conn = 0;
    CHECK_EQ(cot_tcp_accept(a, listener, 5000 * MS, on_accepted, &conn), 0);
    int c = plain_client(&addr);
    CHECK_EQ(write(c, PART1, sizeof PART1 - 1), (ssize_t)(sizeof PART1 - 1));
    for (int i = 0; i < 5000 && !conn; i++) CHECK(cot_loop_run(a, COT_RUN_ONCE) >= 0);
    CHECK(conn != 0);
    CHECK_EQ(cot_loop_connections(a), 1);

    /* Loop A reads the first bytes, then lets the connection go. */
    char first[FIRST_READ];
    struct got r = {0, 0};
    CHECK_EQ(cot_tcp_read(a, conn, first, sizeof first, 5000 * MS, on_io, &r), 0);
    run_until(a, &r.done);
    CHECK_EQ(r.result, FIRST_READ);
    CHECK(memcmp(first, PART1, FIRST_READ) == 0);
    cot_tcp_exported *ex = NULL;
    CHECK_EQ(cot_tcp_export(a, conn, &ex), 0);
    CHECK(ex != NULL);
    CHECK_EQ(cot_loop_connections(a), 0);
    CHECK_EQ(cot_tcp_try_read(a, conn, first, 1), COT_EBADF); /* the key is gone */

    /* Thread B imports it on its loop and reads the rest; this thread reads
     * B's count while B runs, then sends the second part. */
    struct importer im;
    memset(&im, 0, sizeof im);
    im.loop = b;
    im.ex = ex;
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, import_and_read, &im), 0);
    int seen = 0;
    for (int i = 0; i < 5000 && !seen; i++) {
        seen = cot_loop_connections(b) == 1;
        if (!seen) sleep_ms(1);
    }
    CHECK(seen);
    CHECK_EQ(write(c, PART2, sizeof PART2 - 1), (ssize_t)(sizeof PART2 - 1));
    char reply[4];
    read_all(c, reply, sizeof reply);
    CHECK(memcmp(reply, "done", 4) == 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(cot_loop_connections(b), 0);

    /* Every byte once, in order: A's 4, then B's 16. */
    char want[REST + 1];
    snprintf(want, sizeof want, "%s%s", PART1 + FIRST_READ, PART2);
    CHECK_EQ(im.got, REST);
    CHECK(memcmp(im.buf, want, REST) == 0);
    close(c);
    CHECK_EQ(cot_tcp_close(a, listener), 0);
    finish(a);
    CHECK_EQ(cot_loop_close(b), 0);
}

/* ---- refusals: bad input, a pending read; a listener moves too ---- */

static void test_export_and_import_refusals(void) {
    cot_loop *a = cot_loop_new(), *b = cot_loop_new();
    struct sockaddr_in addr;
    cot_tcp listener = listen_loopback(a, 4, &addr), conn = 0;
    int c = plain_client(&addr);
    CHECK_EQ(cot_tcp_try_accept(a, listener, &conn), 0);
    cot_tcp_exported *ex = NULL;

    CHECK_EQ(cot_tcp_export(NULL, conn, &ex), COT_EINVAL);
    CHECK_EQ(cot_tcp_export(a, conn, NULL), COT_EINVAL);
    cot_udp u;
    CHECK_EQ(cot_udp_init(a, AF_INET, &u), 0);
    CHECK_EQ(cot_tcp_export(a, u, &ex), COT_EINVAL); /* a UDP key */
    CHECK_EQ(cot_udp_close(a, u), 0);
    CHECK_EQ(cot_tcp_export(a, u, &ex), COT_EBADF);  /* closed */
    CHECK_EQ(cot_tcp_export(a, 0, &ex), COT_EBADF);
    CHECK(ex == NULL);

    /* A read waits: refused, and the read goes on. */
    char buf[8];
    struct got r = {0, 0};
    CHECK_EQ(cot_tcp_read(a, conn, buf, sizeof buf, 5000 * MS, on_io, &r), 0);
    CHECK_EQ(cot_tcp_export(a, conn, &ex), COT_EBUSY);
    CHECK(ex == NULL);
    CHECK_EQ(cot_loop_connections(a), 1);
    CHECK_EQ(write(c, "hey", 3), 3);
    run_until(a, &r.done);
    CHECK_EQ(r.result, 3);
    CHECK(memcmp(buf, "hey", 3) == 0);

    /* Import: bad input leaves `ex` the caller's. */
    CHECK_EQ(cot_tcp_export(a, conn, &ex), 0);
    cot_tcp t = 0;
    CHECK_EQ(cot_tcp_import(NULL, ex, &t), COT_EINVAL);
    CHECK_EQ(cot_tcp_import(b, NULL, &t), COT_EINVAL);
    CHECK_EQ(cot_tcp_import(b, ex, NULL), COT_EINVAL);
    CHECK_EQ(t, 0);
    CHECK_EQ(cot_loop_connections(b), 0);
    CHECK_EQ(cot_tcp_import(b, ex, &t), 0);
    CHECK_EQ(cot_loop_connections(b), 1);
    CHECK_EQ(cot_tcp_try_write(b, t, "ok", 2), 2);
    read_all(c, buf, 2);
    CHECK(memcmp(buf, "ok", 2) == 0);

    /* Freed instead of imported: the descriptor closes (the peer reads the
     * end of the stream). NULL is fine. */
    CHECK_EQ(cot_tcp_export(b, t, &ex), 0);
    CHECK_EQ(cot_loop_connections(b), 0);
    cot_tcp_exported_free(ex);
    cot_tcp_exported_free(NULL);
    struct pollfd p = {.fd = c, .events = POLLIN};
    CHECK_EQ(poll(&p, 1, 5000), 1);
    CHECK_EQ(read(c, buf, sizeof buf), 0);
    close(c);

    /* A listener moves too, and is no connection. */
    CHECK_EQ(cot_tcp_export(a, listener, &ex), 0);
    CHECK_EQ(cot_tcp_import(b, ex, &listener), 0);
    CHECK_EQ(cot_loop_connections(b), 0);
    c = plain_client(&addr);
    CHECK_EQ(cot_tcp_try_accept(b, listener, &conn), 0);
    CHECK_EQ(cot_loop_connections(b), 1);
    CHECK_EQ(cot_tcp_close(b, conn), 0);
    CHECK_EQ(cot_tcp_close(b, listener), 0);
    close(c);
    finish(a);
    finish(b);
}

/* ---- the count of connections, up and down ---- */

static void test_connection_counts(void) {
    cot_loop *loop = cot_loop_new();
    CHECK_EQ(cot_loop_connections(NULL), COT_EINVAL);
    CHECK_EQ(cot_loop_connections(loop), 0);
    struct sockaddr_in addr;
    cot_tcp listener = listen_loopback(loop, 8, &addr);
    cot_udp u;
    CHECK_EQ(cot_udp_init(loop, AF_INET, &u), 0);
    CHECK_EQ(cot_loop_connections(loop), 0); /* a listener, a UDP socket */

    /* Connected: counted when the connect succeeded; accepted: at once. */
    cot_tcp client, server = 0;
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &client), 0);
    CHECK_EQ(cot_loop_connections(loop), 0);
    struct got g = {0, 0};
    CHECK_EQ(cot_tcp_connect(loop, client, (struct sockaddr *)&addr, sizeof addr, 5000 * MS, on_io, &g), 0);
    CHECK_EQ(cot_tcp_accept(loop, listener, 5000 * MS, on_accepted, &server), 0);
    run_until(loop, &g.done);
    CHECK_EQ(g.result, 0);
    for (int i = 0; i < 5000 && !server; i++) CHECK(cot_loop_run(loop, COT_RUN_ONCE) >= 0);
    CHECK_EQ(cot_loop_connections(loop), 2);

    /* A refused connect is not counted. */
    cot_tcp refused;
    struct sockaddr_in nobody = addr;
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &refused), 0);
    CHECK_EQ(cot_tcp_close(loop, listener), 0); /* nobody listens there now */
    struct got g2 = {0, 0};
    int r = cot_tcp_connect(loop, refused, (struct sockaddr *)&nobody, sizeof nobody, 5000 * MS, on_io, &g2);
    if (r == 0) {
        run_until(loop, &g2.done);
        CHECK_EQ(g2.result, COT_ECONNREFUSED);
    } else {
        CHECK_EQ(r, COT_ECONNREFUSED);
    }
    CHECK_EQ(cot_loop_connections(loop), 2);
    CHECK_EQ(cot_tcp_close(loop, refused), 0);

    /* Adopted: a connected descriptor counts, a listening one does not. */
    struct sockaddr_in a2;
    cot_tcp l2 = listen_loopback(loop, 4, &a2), adopted, adopted_listener;
    int plain = plain_client(&a2);
    CHECK_EQ(cot_tcp_open(loop, plain, &adopted), 0);
    CHECK_EQ(cot_loop_connections(loop), 3);
    int lfd = -1;
    CHECK_EQ(cot_tcp_release(loop, l2, &lfd), 0);
    CHECK_EQ(cot_tcp_open(loop, lfd, &adopted_listener), 0);
    CHECK_EQ(cot_loop_connections(loop), 3);
    cot_tcp accepted2;
    CHECK_EQ(cot_tcp_try_accept(loop, adopted_listener, &accepted2), 0);
    CHECK_EQ(cot_loop_connections(loop), 4);

    /* Down: close, release, export; up again: import. */
    CHECK_EQ(cot_tcp_close(loop, accepted2), 0);
    CHECK_EQ(cot_loop_connections(loop), 3);
    int fd = -1;
    CHECK_EQ(cot_tcp_release(loop, adopted, &fd), 0);
    CHECK_EQ(cot_loop_connections(loop), 2);
    close(fd);
    cot_tcp_exported *ex;
    CHECK_EQ(cot_tcp_export(loop, server, &ex), 0);
    CHECK_EQ(cot_loop_connections(loop), 1);
    CHECK_EQ(cot_tcp_import(loop, ex, &server), 0);
    CHECK_EQ(cot_loop_connections(loop), 2);
    CHECK_EQ(cot_tcp_close(loop, server), 0);
    CHECK_EQ(cot_tcp_close(loop, client), 0);
    CHECK_EQ(cot_loop_connections(loop), 0);
    CHECK_EQ(cot_tcp_close(loop, adopted_listener), 0);
    CHECK_EQ(cot_udp_close(loop, u), 0);
    finish(loop);
}

int main(void) {
    test_reuseport_listeners_of_two_loops_share_a_port();
    test_bind_without_reuseport_is_refused();
    test_a_connection_moves_to_another_threads_loop();
    test_export_and_import_refusals();
    test_connection_counts();
    puts("test_handoff: ok");
    return 0;
}
