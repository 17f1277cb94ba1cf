/*
 * TCP echo on loopback: an echo server on cothread's event loop against a
 * plain libuv echo server, both driven by the same client in one run.
 *
 * Servers (each in its own thread, on 127.0.0.1, an ephemeral port):
 *   - cothread: non-blocking sockets and cot_poll handles. The listening
 *     socket is polled READABLE and accepts until EAGAIN. Each connection is
 *     polled READABLE; its callback reads into a 64 KiB buffer and writes the
 *     bytes straight back; a short read means the socket is drained (libuv
 *     stops at a short read too). When a write would block, the rest is kept
 *     and the connection polls WRITABLE only, until it is flushed.
 *   - libuv: the usual echo server (as libuv's own test/echo-server.c):
 *     uv_tcp_t, uv_read_start with a 64 KiB buffer per read, uv_write of
 *     what was read, the buffer released in the write callback (to a free
 *     list rather than free(): see uv_alloc).
 *   Both set TCP_NODELAY on accepted sockets, and stop when the main thread
 *   sends them an async wakeup (cot_async_send / uv_async_send).
 *
 * Client (the main thread, the same code for both servers): one epoll loop
 * over CONNS connections, each ping-ponging MSG-byte messages: send a
 * message, read its echo in full, check every byte, send the next. Every
 * message is a different window of a random pattern, so a lost, duplicated
 * or reordered byte shows as a mismatch (the program then fails). After the
 * duration the client sends nothing new, waits for the echoes in flight and
 * closes its sockets.
 *
 * Reported per server: echoed messages/s and MiB/s (one direction), the
 * server thread's CPU time per message, and how busy the client thread was
 * (at 100 % the client is the bottleneck). Then the ratios ours / libuv.
 * The machine has 2 cores: the client and the server thread use one each.
 *
 * Run (after building the library, see bench/c/Makefile):
 *     make -C bench/c run-tcp SECONDS=10
 *     bench/c/bench-tcp-echo [seconds]   # or COT_BENCH_SECONDS; default 10
 *     COT_BENCH_ROUNDS=3 bench/c/bench-tcp-echo 3   # best of 3, alternating
 */
#include <cothread.h>
#include <uv.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

#define CONNS 64
#define MSG 4096
#define SERVER_BUF 65536
#define PATTERN 65536 /* messages are windows of this random pattern */

static unsigned char pattern[PATTERN + MSG];

static void set_nodelay(int fd) {
    int one = 1;
    CHECK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
}

/* What a server thread shares with the main thread. */
struct server {
    const char *name;
    void *(*main)(void *); /* the thread's body */
    pthread_t thread;
    sem_t ready;  /* posted once the server listens */
    int port;     /* its port, set before `ready` */
    void *loop;   /* cot_loop* or uv_loop_t*, to send `stop` */
    union {
        cot_handle cot;
        uv_async_t uv;
    } stop;       /* wakes the server to close everything and return */
};

/* A listening socket on 127.0.0.1, an ephemeral port; returns the fd. */
static int listen_loopback(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    CHECK(fd);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a));
    CHECK(listen(fd, 128));
    socklen_t len = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len));
    *port = ntohs(a.sin_port);
    return fd;
}

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
    CHECK(cot_async_init(loop, cot_on_stop, NULL, &s->stop.cot));
    s->loop = loop;
    sem_post(&s->ready);
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    CHECK(cot_loop_close(loop));
    return NULL;
}

static void cot_server_stop(struct server *s) { CHECK(cot_async_send(s->loop, s->stop.cot)); }

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
    CHECK(uv_async_init(&loop, &s->stop.uv, uv_on_stop));
    s->loop = &loop;
    sem_post(&s->ready);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT));
    CHECK(uv_loop_close(&loop));
    uv_free_bufs_all();
    return NULL;
}

static void uv_server_stop(struct server *s) { CHECK(uv_async_send(&s->stop.uv)); }

/* ===== the client ===== */

struct client_conn {
    int fd;
    const unsigned char *msg; /* the message in flight: a window of pattern */
    size_t sent, got;         /* bytes of it sent, and echoed back */
    int busy;                 /* a message is in flight */
    int want_out;             /* EPOLLOUT is watched (part of msg unsent) */
    unsigned char in[MSG];
};

struct result {
    uint64_t messages; /* echoed and checked */
    double seconds;
    double server_cpu; /* s of the server thread's CPU over the window */
    double client_cpu; /* s of the client thread's CPU over the window */
};

static uint64_t pattern_pos = 0;

/* Picks the next message and sends what the socket takes. */
static void client_send(int ep, struct client_conn *c, int start) {
    if (start) {
        pattern_pos = (pattern_pos + 4099) % PATTERN; /* never the same window twice in a row */
        c->msg = pattern + pattern_pos;
        c->sent = c->got = 0;
        c->busy = 1;
    }
    while (c->sent < MSG) {
        ssize_t w = write(c->fd, c->msg + c->sent, MSG - c->sent);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) CHECK(w);
            break;
        }
        c->sent += (size_t)w;
    }
    /* Watch for writability only while part of the message is unsent (in
     * practice never: 4 KiB fit an idle socket's buffer). */
    int want_out = c->sent < MSG;
    if (want_out != c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
        CHECK(epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev));
        c->want_out = want_out;
    }
}

static struct result run_client(struct server *s, double seconds) {
    static struct client_conn conns[CONNS];
    int ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK(ep);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(s->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int i = 0; i < CONNS; i++) {
        struct client_conn *c = &conns[i];
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(c->fd);
        CHECK(connect(c->fd, (struct sockaddr *)&a, sizeof a));
        set_nodelay(c->fd);
        CHECK(fcntl(c->fd, F_SETFL, O_NONBLOCK));
        c->busy = c->want_out = 0;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev));
    }

    clockid_t server_clock, client_clock = CLOCK_THREAD_CPUTIME_ID;
    CHECK(-pthread_getcpuclockid(s->thread, &server_clock));
    uint64_t s0 = clock_ns(server_clock), u0 = clock_ns(client_clock);
    uint64_t t0 = wall_ns(), deadline = t0 + (uint64_t)(seconds * 1e9);
    uint64_t messages = 0, last_progress = t0;
    int in_flight = CONNS, sending = 1;
    for (int i = 0; i < CONNS; i++) client_send(ep, &conns[i], 1);

    struct epoll_event evs[CONNS];
    while (in_flight > 0) {
        int n = epoll_wait(ep, evs, CONNS, 100);
        if (n < 0 && errno == EINTR) continue;
        CHECK(n);
        uint64_t now = wall_ns();
        if (sending && now >= deadline) sending = 0; /* drain what is in flight */
        if (n > 0) last_progress = now;
        else if (now - last_progress > 5000000000u) {
            fprintf(stderr, "%s: no echo for 5 s, %d messages in flight\n", s->name, in_flight);
            exit(1);
        }
        for (int i = 0; i < n; i++) {
            struct client_conn *c = evs[i].data.ptr;
            if (evs[i].events & EPOLLOUT && c->sent < MSG) client_send(ep, c, 0);
            if (!(evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) continue;
            /* Read at most the rest of this message: an extra byte would be
             * read as the start of the next echo and fail its check. */
            ssize_t r = read(c->fd, c->in + c->got, MSG - c->got);
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (r <= 0 || !c->busy) {
                fprintf(stderr, "%s: connection %d: %s\n", s->name, (int)(c - conns),
                        r == 0 ? "closed by the server" : !c->busy ? "unexpected data" : strerror(errno));
                exit(1);
            }
            c->got += (size_t)r;
            if (c->got < MSG) continue;
            if (memcmp(c->in, c->msg, MSG) != 0) {
                fprintf(stderr, "%s: connection %d: echo differs from the message\n", s->name,
                        (int)(c - conns));
                exit(1);
            }
            messages++;
            c->busy = 0;
            if (sending) client_send(ep, c, 1);
            else in_flight--;
        }
    }
    uint64_t t1 = wall_ns();
    struct result res = {
        .messages = messages,
        .seconds = (t1 - t0) / 1e9,
        .server_cpu = (clock_ns(server_clock) - s0) / 1e9,
        .client_cpu = (clock_ns(client_clock) - u0) / 1e9,
    };
    for (int i = 0; i < CONNS; i++) close(conns[i].fd);
    close(ep);
    return res;
}

/* Starts server `s`, drives it for `seconds`, stops it. */
static struct result measure(struct server *s, double seconds) {
    CHECK(-sem_init(&s->ready, 0, 0));
    CHECK(-pthread_create(&s->thread, NULL, s->main, s));
    pthread_setname_np(s->thread, s->main == cot_server_main ? "srv-cothread" : "srv-libuv");
    while (sem_wait(&s->ready) < 0) {}
    struct result r = run_client(s, seconds);
    if (s->main == cot_server_main) cot_server_stop(s); else uv_server_stop(s);
    CHECK(-pthread_join(s->thread, NULL));
    sem_destroy(&s->ready);
    return r;
}

static void report(const char *name, struct result r) {
    double mps = r.messages / r.seconds;
    printf("%-9s %10.0f msg/s %8.1f MiB/s | server CPU %6.2f us/msg | client busy %3.0f %% | %llu msgs in %.2f s\n",
           name, mps, mps * MSG / (1024.0 * 1024.0), r.server_cpu * 1e6 / r.messages,
           100 * r.client_cpu / r.seconds, (unsigned long long)r.messages, r.seconds);
    fflush(stdout);
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : env_num("COT_BENCH_SECONDS", 10);
    int rounds = (int)env_num("COT_BENCH_ROUNDS", 1);
    if (!(seconds > 0)) {
        fprintf(stderr, "usage: %s [seconds]\n", argv[0]);
        return 2;
    }
    uint64_t seed = 7;
    for (size_t i = 0; i < sizeof pattern; i++) pattern[i] = (unsigned char)(rng_next(&seed) >> 56);

    printf("TCP echo on loopback: %d connections, %d-byte messages, %.0f s per server, best of %d\n",
           CONNS, MSG, seconds, rounds);
    printf("cothread %u.%u.%u vs libuv %s\n", cot_version() >> 16, (cot_version() >> 8) & 0xff,
           cot_version() & 0xff, uv_version_string());
    struct server cot = {.name = "cothread", .main = cot_server_main};
    struct server uv = {.name = "libuv", .main = uv_server_main};
    struct result best_cot = {0}, best_uv = {0};
    for (int i = 0; i < rounds; i++) {
        struct result r = measure(&cot, seconds);
        report("cothread", r);
        if (r.messages / r.seconds > best_cot.messages / (best_cot.seconds + 1e-12)) best_cot = r;
        r = measure(&uv, seconds);
        report("libuv", r);
        if (r.messages / r.seconds > best_uv.messages / (best_uv.seconds + 1e-12)) best_uv = r;
    }
    double ratio = (best_cot.messages / best_cot.seconds) / (best_uv.messages / best_uv.seconds);
    double cpu_ratio = (best_cot.server_cpu / best_cot.messages) / (best_uv.server_cpu / best_uv.messages);
    printf("ratio ours/libuv: throughput %.3f (target >= 0.9), server CPU per message %.3f\n", ratio,
           cpu_ratio);
    return 0;
}
