/*
 * TCP echo on loopback: two echo servers on cothread's event loop against a
 * plain libuv echo server, all driven by the same client in one run (the
 * load, its checks and the report are in echo_load.h).
 *
 * Servers (each in its own thread, on 127.0.0.1, an ephemeral port):
 *   - cothread: non-blocking sockets and cot_poll handles. The listening
 *     socket is polled READABLE and accepts until EAGAIN. Each connection is
 *     polled READABLE; its callback reads into a 64 KiB buffer and writes the
 *     bytes straight back; a short read means the socket is drained (libuv
 *     stops at a short read too). When a write would block, the rest is kept
 *     and the connection polls WRITABLE only, until it is flushed.
 *   - coro: stackful coroutines on the loop's own sockets (cot_tcp): an
 *     acceptor coroutine, and per connection a coroutine that loops on
 *     cot_coro_read into a 64 KiB buffer on its stack and cot_coro_write of
 *     what came, as blocking code would. Against `cothread`, its extra CPU
 *     per message is what the stackful path costs.
 *   - libuv: the usual echo server (as libuv's own test/echo-server.c):
 *     uv_tcp_t, uv_read_start with a 64 KiB buffer per read, uv_write of
 *     what was read, the buffer released in the write callback (to a free
 *     list rather than free(): see uv_alloc).
 *   All set TCP_NODELAY on accepted sockets, and stop when the main thread
 *   sends them an async wakeup (cot_async_send / uv_async_send).
 *
 * Then the ratios against libuv, and coro against cothread. The machine has
 * 2 cores: the client and the server thread use one each.
 *
 * Run (after building the library, see bench/c/Makefile):
 *     make -C bench/c run-tcp SECONDS=10
 *     bench/c/bench-tcp-echo [seconds]   # or COT_BENCH_SECONDS; default 10
 *     COT_BENCH_ROUNDS=3 bench/c/bench-tcp-echo 3   # best of 3, alternating
 */
#include <cothread.h>
#include <uv.h>

#include "echo_load.h"

/* ===== the cothread server ===== */

struct cot_conn {
    int fd;
    cot_handle poll;
    size_t pend_off, pend_len; /* bytes of buf still to write back */
    struct cot_conn *prev, *next; /* all open connections, to close at stop */
    unsigned char buf[SERVER_BUF];
};

static struct cot_conn *cot_conns; /* head of the list */
static int cot_listen_fd;
static cot_handle cot_listen_poll;
static cot_handle cot_stop;

static void cot_conn_closed(cot_loop *loop, cot_handle h, void *data) {
    (void)loop, (void)h;
    struct cot_conn *c = data;
    close(c->fd);
    free(c);
}

static void cot_conn_close(cot_loop *loop, struct cot_conn *c) {
    if (c->prev) c->prev->next = c->next; else cot_conns = c->next;
    if (c->next) c->next->prev = c->prev;
    CHECK(cot_close(loop, c->poll, cot_conn_closed));
}

static void cot_on_conn(cot_loop *loop, cot_handle h, int events, void *data);

/* Writes buf[off, off+len) back; keeps what would block and polls WRITABLE
 * for it. Returns 1 when all was written, 0 when some is pending, -1 when the
 * connection failed (and is closing). */
static int cot_write_back(cot_loop *loop, struct cot_conn *c, size_t off, size_t len) {
    while (len > 0) {
        ssize_t w = write(c->fd, c->buf + off, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) {
                cot_conn_close(loop, c);
                return -1;
            }
            c->pend_off = off, c->pend_len = len;
            CHECK(cot_poll_start(loop, c->poll, COT_WRITABLE, cot_on_conn));
            return 0;
        }
        off += (size_t)w, len -= (size_t)w;
    }
    return 1;
}

static void cot_on_conn(cot_loop *loop, cot_handle h, int events, void *data) {
    (void)h, (void)events;
    struct cot_conn *c = data;
    if (c->pend_len > 0) { /* polled WRITABLE: flush, then read again */
        size_t off = c->pend_off, len = c->pend_len;
        c->pend_len = 0;
        int r = cot_write_back(loop, c, off, len);
        if (r <= 0) return;
        CHECK(cot_poll_start(loop, c->poll, COT_READABLE, cot_on_conn));
    }
    for (;;) {
        ssize_t n = read(c->fd, c->buf, SERVER_BUF);
        if (n > 0) {
            if (cot_write_back(loop, c, 0, (size_t)n) <= 0) return;
            if (n < SERVER_BUF) return; /* drained */
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            cot_conn_close(loop, c); /* EOF or error */
            return;
        } else if (errno == EAGAIN) {
            return;
        }
    }
}

static void cot_on_accept(cot_loop *loop, cot_handle h, int events, void *data) {
    (void)h, (void)events, (void)data;
    for (;;) {
        int fd = accept4(cot_listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            CHECK(fd);
        }
        set_nodelay(fd);
        struct cot_conn *c = malloc(sizeof *c);
        CHECK_PTR(c);
        c->fd = fd, c->pend_off = c->pend_len = 0;
        c->prev = NULL, c->next = cot_conns;
        if (cot_conns) cot_conns->prev = c;
        cot_conns = c;
        CHECK(cot_poll_init(loop, fd, c, &c->poll));
        CHECK(cot_poll_start(loop, c->poll, COT_READABLE, cot_on_conn));
    }
}

static void cot_listen_closed(cot_loop *loop, cot_handle h, void *data) {
    (void)loop, (void)h, (void)data;
    close(cot_listen_fd);
}

/* stop: close every handle; cot_loop_run then returns. */
static void cot_on_stop(cot_loop *loop, cot_handle h, void *data) {
    (void)data;
    while (cot_conns) cot_conn_close(loop, cot_conns);
    CHECK(cot_close(loop, cot_listen_poll, cot_listen_closed));
    CHECK(cot_close(loop, h, NULL));
}

static void *cot_server_main(void *arg) {
    struct server *s = arg;
    cot_loop *loop = cot_loop_new();
    CHECK_PTR(loop);
    cot_listen_fd = listen_loopback(&s->port);
    CHECK(cot_poll_init(loop, cot_listen_fd, NULL, &cot_listen_poll));
    CHECK(cot_poll_start(loop, cot_listen_poll, COT_READABLE, cot_on_accept));
    CHECK(cot_async_init(loop, cot_on_stop, NULL, &cot_stop));
    s->loop = loop;
    sem_post(&s->ready);
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    CHECK(cot_loop_close(loop));
    return NULL;
}

static void cot_server_stop(struct server *s) { CHECK(cot_async_send(s->loop, cot_stop)); }

/* ===== the stackful server ===== */

/* A connection's coroutine and socket, kept until the loop has ended: a
 * coroutine cannot free itself. */
struct coro_conn {
    cot_coro *co;
    cot_tcp tcp;
    int open;                /* tcp not closed yet */
    struct coro_conn *next;  /* all connections of the run */
};

static struct coro_conn *coro_conns;
static cot_coro *coro_acceptor;
static cot_tcp coro_listener;
static cot_handle coro_stop;

/* Closes c's socket once, whoever comes first: its coroutine or stop. */
static void coro_conn_close(cot_loop *loop, struct coro_conn *c) {
    if (c->open) {
        c->open = 0;
        CHECK(cot_tcp_close(loop, c->tcp));
    }
}

/* One connection: echo until EOF, an error, or stop closing the socket. */
static void *coro_echo(void *arg) {
    struct coro_conn *c = arg;
    unsigned char buf[SERVER_BUF];
    int64_t n;
    while ((n = cot_coro_read(c->tcp, buf, sizeof buf, COT_CORO_FOREVER)) > 0)
        if (cot_coro_write(c->tcp, buf, (size_t)n, COT_CORO_FOREVER) < 0) break;
    coro_conn_close(cot_coro_loop(cot_coro_current()), c);
    return NULL;
}

/* The stack holds the 64 KiB buffer, and room for the calls below it. */
#define CORO_STACK (SERVER_BUF + 64 * 1024)

/* Accepts until stop closes the listener (the accept then fails). */
static void *coro_accept(void *arg) {
    cot_loop *loop = arg;
    cot_tcp tcp;
    while (cot_coro_accept(coro_listener, &tcp, COT_CORO_FOREVER) == 0) {
        CHECK(cot_tcp_nodelay(loop, tcp, 1));
        struct coro_conn *c = malloc(sizeof *c);
        CHECK_PTR(c);
        c->tcp = tcp, c->open = 1;
        c->next = coro_conns, coro_conns = c;
        CHECK(cot_coro_new(loop, coro_echo, c, CORO_STACK, &c->co));
        CHECK(cot_coro_start(c->co));
    }
    return NULL;
}

/* stop: close every socket; the parked calls end with COT_ECANCELED, the
 * coroutines return, and cot_loop_run with them. */
static void coro_on_stop(cot_loop *loop, cot_handle h, void *data) {
    (void)data;
    for (struct coro_conn *c = coro_conns; c; c = c->next) coro_conn_close(loop, c);
    CHECK(cot_tcp_close(loop, coro_listener));
    CHECK(cot_close(loop, h, NULL));
}

static void *coro_server_main(void *arg) {
    struct server *s = arg;
    cot_loop *loop = cot_loop_new();
    CHECK_PTR(loop);
    struct sockaddr_in a = loopback_addr(0);
    uint32_t len = sizeof a;
    CHECK(cot_tcp_init(loop, AF_INET, &coro_listener));
    CHECK(cot_tcp_bind(loop, coro_listener, (struct sockaddr *)&a, len));
    CHECK(cot_tcp_listen(loop, coro_listener, 128));
    CHECK(cot_tcp_getsockname(loop, coro_listener, (struct sockaddr *)&a, &len));
    s->port = ntohs(a.sin_port);
    CHECK(cot_coro_new(loop, coro_accept, loop, 0, &coro_acceptor));
    CHECK(cot_coro_start(coro_acceptor));
    CHECK(cot_async_init(loop, coro_on_stop, NULL, &coro_stop));
    s->loop = loop;
    sem_post(&s->ready);
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    CHECK(cot_coro_free(coro_acceptor));
    while (coro_conns) {
        struct coro_conn *c = coro_conns;
        coro_conns = c->next;
        CHECK(cot_coro_free(c->co));
        free(c);
    }
    CHECK(cot_loop_close(loop));
    return NULL;
}

static void coro_server_stop(struct server *s) { CHECK(cot_async_send(s->loop, coro_stop)); }

/* ===== the libuv server ===== */

struct uv_wreq {
    uv_write_t req;
    uv_buf_t buf;
};

/* Read buffers (64 KiB, libuv's suggested size) are recycled through a free
 * list once their write completed. The canonical malloc per read and free
 * per write (test/echo-server.c) makes glibc trim and refault the server
 * thread's heap at every message: page faults then cost the libuv server
 * more than its I/O, which measures glibc rather than libuv. */
struct uv_free_buf {
    struct uv_free_buf *next;
};
static struct uv_free_buf *uv_free_bufs;

static void uv_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)h, (void)suggested;
    if (uv_free_bufs) {
        buf->base = (char *)uv_free_bufs;
        uv_free_bufs = uv_free_bufs->next;
    } else {
        buf->base = malloc(SERVER_BUF);
        CHECK_PTR(buf->base);
    }
    buf->len = SERVER_BUF;
}

static void uv_release(char *base) {
    struct uv_free_buf *f = (struct uv_free_buf *)base;
    f->next = uv_free_bufs;
    uv_free_bufs = f;
}

static void uv_free_bufs_all(void) {
    while (uv_free_bufs) {
        struct uv_free_buf *f = uv_free_bufs;
        uv_free_bufs = f->next;
        free(f);
    }
}

static void uv_free_handle(uv_handle_t *h) { free(h); }

static void uv_after_write(uv_write_t *req, int status) {
    struct uv_wreq *w = (struct uv_wreq *)req;
    uv_handle_t *stream = (uv_handle_t *)req->handle;
    uv_release(w->buf.base);
    free(w);
    if (status < 0 && !uv_is_closing(stream)) uv_close(stream, uv_free_handle);
}

static void uv_after_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
    if (nread > 0) {
        struct uv_wreq *w = malloc(sizeof *w);
        CHECK_PTR(w);
        w->buf = uv_buf_init(buf->base, (unsigned)nread);
        CHECK(uv_write(&w->req, stream, &w->buf, 1, uv_after_write));
        return;
    }
    if (buf->base) uv_release(buf->base);
    if (nread < 0 && !uv_is_closing((uv_handle_t *)stream)) /* EOF or error */
        uv_close((uv_handle_t *)stream, uv_free_handle);
}

static void uv_on_connection(uv_stream_t *server, int status) {
    CHECK(status);
    uv_tcp_t *c = malloc(sizeof *c);
    CHECK_PTR(c);
    CHECK(uv_tcp_init(server->loop, c));
    CHECK(uv_accept(server, (uv_stream_t *)c));
    CHECK(uv_tcp_nodelay(c, 1));
    CHECK(uv_read_start((uv_stream_t *)c, uv_alloc, uv_after_read));
}

static uv_tcp_t uv_listener;
static uv_async_t uv_stop_async;

static void uv_close_any(uv_handle_t *h, void *arg) {
    (void)arg;
    if (uv_is_closing(h)) return;
    uv_close(h, h == (uv_handle_t *)&uv_listener || h->type == UV_ASYNC ? NULL : uv_free_handle);
}

/* stop: close every handle; uv_run then returns. */
static void uv_on_stop(uv_async_t *a) { uv_walk(a->loop, uv_close_any, NULL); }

static void *uv_server_main(void *arg) {
    struct server *s = arg;
    uv_loop_t loop;
    CHECK(uv_loop_init(&loop));
    CHECK(uv_tcp_init(&loop, &uv_listener));
    struct sockaddr_in a;
    CHECK(uv_ip4_addr("127.0.0.1", 0, &a));
    CHECK(uv_tcp_bind(&uv_listener, (struct sockaddr *)&a, 0));
    CHECK(uv_listen((uv_stream_t *)&uv_listener, 128, uv_on_connection));
    int len = sizeof a;
    CHECK(uv_tcp_getsockname(&uv_listener, (struct sockaddr *)&a, &len));
    s->port = ntohs(a.sin_port);
    CHECK(uv_async_init(&loop, &uv_stop_async, uv_on_stop));
    s->loop = &loop;
    sem_post(&s->ready);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT));
    CHECK(uv_loop_close(&loop));
    uv_free_bufs_all();
    return NULL;
}

static void uv_server_stop(struct server *s) {
    (void)s;
    CHECK(uv_async_send(&uv_stop_async));
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : env_num("COT_BENCH_SECONDS", 10);
    int rounds = (int)env_num("COT_BENCH_ROUNDS", 1);
    if (!(seconds > 0)) {
        fprintf(stderr, "usage: %s [seconds]\n", argv[0]);
        return 2;
    }
    pattern_fill();

    printf("TCP echo on loopback: %d connections, %d-byte messages, %.0f s per server, best of %d\n",
           CONNS, MSG, seconds, rounds);
    printf("cothread %u.%u.%u vs libuv %s\n", cot_version() >> 16, (cot_version() >> 8) & 0xff,
           cot_version() & 0xff, uv_version_string());
    struct server servers[] = {
        {.name = "cothread", .main = cot_server_main, .stop = cot_server_stop},
        {.name = "coro", .main = coro_server_main, .stop = coro_server_stop},
        {.name = "libuv", .main = uv_server_main, .stop = uv_server_stop},
    };
    enum { COT, CORO, UV, N };
    struct result best[N] = {{0}};
    for (int i = 0; i < rounds; i++)
        for (int k = 0; k < N; k++) {
            struct result r = measure(&servers[k], seconds);
            report(servers[k].name, r);
            keep_best(&best[k], r);
        }
    printf("ratio cothread/libuv: throughput %.3f (target >= 0.9), server CPU per message %.3f\n",
           msg_rate(best[COT]) / msg_rate(best[UV]), cpu_per_msg_ns(best[COT]) / cpu_per_msg_ns(best[UV]));
    printf("ratio coro/libuv: throughput %.3f (target >= 0.9), server CPU per message %.3f\n",
           msg_rate(best[CORO]) / msg_rate(best[UV]), cpu_per_msg_ns(best[CORO]) / cpu_per_msg_ns(best[UV]));
    printf("ratio coro/cothread: server CPU per message %.3f\n",
           cpu_per_msg_ns(best[CORO]) / cpu_per_msg_ns(best[COT]));
    printf("stackful path cost (coro - cothread server CPU): %+.0f ns per message\n",
           cpu_per_msg_ns(best[CORO]) - cpu_per_msg_ns(best[COT]));
    return 0;
}
