/*
 * The TCP echo load shared by the echo benchmarks (bench/c/tcp_echo.c, and
 * C++ ones that include it): a server runs in its own thread on 127.0.0.1,
 * and one client on the calling thread drives it; then the report line.
 * Compiles as C (C11) and as C++ (C++20).
 *
 * Client: one epoll loop over CONNS connections, each ping-ponging
 * MSG-byte messages: send a message, read its echo in full, check every
 * byte, send the next. Every message is a different window of a random
 * pattern, so a lost, duplicated or reordered byte shows as a mismatch (the
 * program then fails). After the duration the client sends nothing new,
 * waits for the echoes in flight and closes its sockets.
 *
 * Reported per server: echoed messages/s and MiB/s (one direction), the
 * server thread's CPU time per message, and how busy the client thread was
 * (at 100 % the client is the bottleneck).
 *
 * run_load is the same client for servers of several threads: the
 * connections spread over several client threads, each its own epoll loop,
 * and the server CPU summed over every server thread's clock
 * (bench/cpp/echo_group.cpp). run_client is run_load with one client
 * thread (the caller) and one server thread.
 *
 * A server is a `struct server`: `main` runs on its thread, sets `port` and
 * posts `ready` once it listens, and returns after `stop` (called from the
 * client's thread) asked it to close everything.
 */
#ifndef BENCH_ECHO_LOAD_H
#define BENCH_ECHO_LOAD_H

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

/* Fills the pattern from a fixed seed: every run sends the same bytes. */
static void pattern_fill(void) {
    uint64_t seed = 7;
    for (size_t i = 0; i < sizeof pattern; i++) pattern[i] = (unsigned char)(rng_next(&seed) >> 56);
}

static void set_nodelay(int fd) {
    int one = 1;
    CHECK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
}

/* What a server thread shares with the main thread. */
struct server {
    const char *name;
    void *(*main)(void *);          /* the thread's body; its argument is this struct */
    void (*stop)(struct server *);  /* wakes the server to close everything and return */
    pthread_t thread;
    sem_t ready;  /* posted once the server listens */
    int port;     /* its port, set before `ready` */
    void *loop;   /* the server's loop, for `stop` */
};

/* 127.0.0.1:port. (Set field by field: C++ has no nested designators.) */
static struct sockaddr_in loopback_addr(int port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/* A listening socket on 127.0.0.1, an ephemeral port; returns the fd.
 * (inline: not every includer uses it.) */
static inline int listen_loopback(int *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    CHECK(fd);
    struct sockaddr_in a = loopback_addr(0);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a));
    CHECK(listen(fd, 128));
    socklen_t len = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len));
    *port = ntohs(a.sin_port);
    return fd;
}

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
    double server_cpu;  /* s of the server threads' CPU over the window, summed */
    double client_cpu;  /* s of the client threads' CPU over the window, summed */
    int client_threads; /* 0 or 1: one client thread */
};

/* A load: `conns` connections to 127.0.0.1:port, connection i driven by
 * client thread i % threads (each its own epoll loop; one thread is the
 * calling thread itself), for `seconds`. The server's CPU is the sum of
 * `server_clocks` (every thread of the server). `while_open`, if set, is
 * called after the window while the connections are still open (to read a
 * server's per-thread counts). */
struct load {
    const char *name; /* in error messages */
    int port;
    int threads;
    int conns;
    double seconds;
    const clockid_t *server_clocks;
    int server_threads;
    void (*while_open)(void *);
    void *arg;
};

/* One client thread: its connections and its own pattern position (the
 * threads share only the read-only pattern). */
struct client {
    const struct load *l;
    struct client_conn *conns;
    int n;
    int first; /* index of conns[0] among all, for messages */
    int ep;
    uint64_t pattern_pos;
    uint64_t deadline;
    uint64_t messages;
    double cpu;
    pthread_t thread;
};

/* Sets what epoll watches on c's socket. */
static void client_watch(int ep, int op, struct client_conn *c, int want_out) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = (uint32_t)EPOLLIN | (want_out ? (uint32_t)EPOLLOUT : 0u);
    ev.data.ptr = c;
    CHECK(epoll_ctl(ep, op, c->fd, &ev));
}

/* Picks the next message and sends what the socket takes. */
static void client_send(struct client *cl, struct client_conn *c, int start) {
    if (start) {
        cl->pattern_pos = (cl->pattern_pos + 4099) % PATTERN; /* never the same window twice in a row */
        c->msg = pattern + cl->pattern_pos;
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
        client_watch(cl->ep, EPOLL_CTL_MOD, c, want_out);
        c->want_out = want_out;
    }
}

/* A client thread's loop: ping-pong until the deadline, then drain. */
static void *client_main(void *arg) {
    struct client *cl = (struct client *)arg;
    const char *name = cl->l->name;
    uint64_t u0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t messages = 0, last_progress = wall_ns();
    int in_flight = cl->n, sending = 1;
    for (int i = 0; i < cl->n; i++) client_send(cl, &cl->conns[i], 1);

    struct epoll_event evs[CONNS];
    while (in_flight > 0) {
        int n = epoll_wait(cl->ep, evs, CONNS, 100);
        if (n < 0 && errno == EINTR) continue;
        CHECK(n);
        uint64_t now = wall_ns();
        if (sending && now >= cl->deadline) sending = 0; /* drain what is in flight */
        if (n > 0) last_progress = now;
        else if (now - last_progress > 5000000000u) {
            fprintf(stderr, "%s: no echo for 5 s, %d messages in flight\n", name, in_flight);
            exit(1);
        }
        for (int i = 0; i < n; i++) {
            struct client_conn *c = (struct client_conn *)evs[i].data.ptr;
            int index = cl->first + (int)(c - cl->conns);
            if (evs[i].events & EPOLLOUT && c->sent < MSG) client_send(cl, c, 0);
            if (!(evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) continue;
            /* Read at most the rest of this message: an extra byte would be
             * read as the start of the next echo and fail its check. */
            ssize_t r = read(c->fd, c->in + c->got, MSG - c->got);
            if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (r <= 0 || !c->busy) {
                fprintf(stderr, "%s: connection %d: %s\n", name, index,
                        r == 0 ? "closed by the server" : !c->busy ? "unexpected data" : strerror(errno));
                exit(1);
            }
            c->got += (size_t)r;
            if (c->got < MSG) continue;
            if (memcmp(c->in, c->msg, MSG) != 0) {
                fprintf(stderr, "%s: connection %d: echo differs from the message\n", name, index);
                exit(1);
            }
            messages++;
            c->busy = 0;
            if (sending) client_send(cl, c, 1);
            else in_flight--;
        }
    }
    cl->messages = messages;
    cl->cpu = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - u0) / 1e9;
    return NULL;
}

static uint64_t server_cpu_ns(const struct load *l) {
    uint64_t sum = 0;
    for (int i = 0; i < l->server_threads; i++) sum += clock_ns(l->server_clocks[i]);
    return sum;
}

static struct result run_load(const struct load *l) {
    int threads = l->threads < 1 ? 1 : l->threads > l->conns ? l->conns : l->threads;
    struct client_conn *conns = (struct client_conn *)calloc((size_t)l->conns, sizeof *conns);
    struct client *clients = (struct client *)calloc((size_t)threads, sizeof *clients);
    CHECK_PTR(conns);
    CHECK_PTR(clients);
    struct sockaddr_in a = loopback_addr(l->port);
    /* Connection i to thread i % threads: each thread's share is a
     * contiguous run of the array, connected in the order of i. */
    for (int t = 0, first = 0; t < threads; t++) {
        struct client *cl = &clients[t];
        cl->l = l;
        cl->n = l->conns / threads + (t < l->conns % threads);
        cl->first = first;
        cl->conns = conns + first;
        cl->pattern_pos = (uint64_t)t * 1237; /* threads send different windows */
        first += cl->n;
        cl->ep = epoll_create1(EPOLL_CLOEXEC);
        CHECK(cl->ep);
    }
    for (int i = 0; i < l->conns; i++) {
        struct client *cl = &clients[i % threads];
        struct client_conn *c = &cl->conns[i / threads];
        c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(c->fd);
        CHECK(connect(c->fd, (struct sockaddr *)&a, sizeof a));
        set_nodelay(c->fd);
        CHECK(fcntl(c->fd, F_SETFL, O_NONBLOCK));
        c->busy = c->want_out = 0;
        client_watch(cl->ep, EPOLL_CTL_ADD, c, 0);
    }

    uint64_t s0 = server_cpu_ns(l);
    uint64_t t0 = wall_ns(), deadline = t0 + (uint64_t)(l->seconds * 1e9);
    for (int t = 0; t < threads; t++) clients[t].deadline = deadline;
    /* Thread 0 is this one, so one client thread is what it always was. */
    for (int t = 1; t < threads; t++) {
        CHECK(-pthread_create(&clients[t].thread, NULL, client_main, &clients[t]));
        char name[16];
        snprintf(name, sizeof name, "client-%d", t);
        pthread_setname_np(clients[t].thread, name);
    }
    client_main(&clients[0]);
    for (int t = 1; t < threads; t++) CHECK(-pthread_join(clients[t].thread, NULL));
    uint64_t t1 = wall_ns(), s1 = server_cpu_ns(l);

    struct result res;
    memset(&res, 0, sizeof res);
    res.seconds = (t1 - t0) / 1e9;
    res.server_cpu = (s1 - s0) / 1e9;
    res.client_threads = threads;
    for (int t = 0; t < threads; t++) {
        res.messages += clients[t].messages;
        res.client_cpu += clients[t].cpu;
    }
    if (l->while_open) l->while_open(l->arg);
    for (int i = 0; i < l->conns; i++) close(conns[i].fd);
    for (int t = 0; t < threads; t++) close(clients[t].ep);
    free(clients);
    free(conns);
    return res;
}

/* One client thread, CONNS connections, against a one-thread server. */
static inline struct result run_client(struct server *s, double seconds) {
    clockid_t server_clock;
    CHECK(-pthread_getcpuclockid(s->thread, &server_clock));
    struct load l;
    memset(&l, 0, sizeof l);
    l.name = s->name;
    l.port = s->port;
    l.threads = 1;
    l.conns = CONNS;
    l.seconds = seconds;
    l.server_clocks = &server_clock;
    l.server_threads = 1;
    return run_load(&l);
}

/* Starts server `s`, drives it for `seconds`, stops it. (inline, as below:
 * not every includer uses them.) */
static inline struct result measure(struct server *s, double seconds) {
    CHECK(-sem_init(&s->ready, 0, 0));
    CHECK(-pthread_create(&s->thread, NULL, s->main, s));
    char name[16];
    snprintf(name, sizeof name, "srv-%s", s->name);
    pthread_setname_np(s->thread, name);
    while (sem_wait(&s->ready) < 0) {}
    struct result r = run_client(s, seconds);
    s->stop(s);
    CHECK(-pthread_join(s->thread, NULL));
    sem_destroy(&s->ready);
    return r;
}

static double msg_rate(struct result r) { return r.seconds > 0 ? r.messages / r.seconds : 0; }

/* Keeps in *best the round with the higher throughput. */
static inline void keep_best(struct result *best, struct result r) {
    if (msg_rate(r) > msg_rate(*best)) *best = r;
}

/* The server's CPU time (all its threads) per echoed message, in ns. */
static double cpu_per_msg_ns(struct result r) { return r.server_cpu * 1e9 / r.messages; }

/* Client busy: the client threads' mean CPU over the wall time. */
static void report(const char *name, struct result r) {
    double mps = msg_rate(r);
    int threads = r.client_threads > 1 ? r.client_threads : 1;
    printf("%-9s %10.0f msg/s %8.1f MiB/s | server CPU %6.2f us/msg | client busy %3.0f %% | %llu msgs in %.2f s\n",
           name, mps, mps * MSG / (1024.0 * 1024.0), r.server_cpu * 1e6 / r.messages,
           100 * r.client_cpu / threads / r.seconds, (unsigned long long)r.messages, r.seconds);
    fflush(stdout);
}

#endif
