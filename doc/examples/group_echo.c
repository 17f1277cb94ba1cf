/* A TCP echo server on every core: a loop group, one loop per processor,
 * a stackful coroutine per connection (doc/c.md, "Many cores").
 *
 *   group_echo [--handoff] [--loops N] [--port P]   serve until SIGINT/SIGTERM
 *   group_echo [--handoff] --self-test               64 clients, then exit
 *
 * Connections reach the loops in one of two ways: every loop listens on the
 * port with SO_REUSEPORT (the default), or loop 0 alone accepts and hands
 * each connection to the loop with the fewest (--handoff). */
#define _GNU_SOURCE
#include <cothread.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SECOND 1000000000ull
#define MAX_LOOPS 256
#define MAX_COROS 4096

static int handoff;
static cot_group *group;
static struct sockaddr_in addr = {.sin_family = AF_INET};

/* What one loop owns; only its own thread touches it. */
static struct per_loop {
    cot_tcp listener;
    int listening;
    cot_coro *coros[MAX_COROS];
    int ncoros;
    long served;
} loops[MAX_LOOPS];

/* Starts a coroutine on the calling thread's loop, freeing finished ones
 * first so that a long-running server does not grow. */
static void go(size_t index, cot_coro_fn fn, void *arg) {
    struct per_loop *me = &loops[index];
    for (int i = 0; i < me->ncoros;)
        if (cot_coro_status(me->coros[i]) == COT_CORO_FINISHED) {
            cot_coro_free(me->coros[i]);
            me->coros[i] = me->coros[--me->ncoros];
        } else {
            i++;
        }
    cot_coro *co;
    if (me->ncoros < MAX_COROS && cot_coro_new(cot_loop_current(), fn, arg, 64 * 1024, &co) == 0 &&
        cot_coro_start(co) == 0)
        me->coros[me->ncoros++] = co;
}

/* One connection: echo until the client hangs up or is idle for 30 s. */
static void *echo(void *arg) {
    cot_tcp conn = (cot_tcp)(uintptr_t)arg;
    char buf[16384];
    int64_t n;
    while ((n = cot_coro_read(conn, buf, sizeof buf, 30 * SECOND)) > 0)
        if (cot_coro_write(conn, buf, (size_t)n, 30 * SECOND) < 0) break;
    cot_tcp_close(cot_loop_current(), conn);
    loops[cot_group_index(group)].served++;
    return NULL;
}

/* --handoff: a connection arrives on the loop chosen for it. */
static void arrived(cot_loop *loop, int status, cot_tcp conn, void *data) {
    (void)loop;
    (void)data;
    if (status == 0) go((size_t)cot_group_index(group), echo, (void *)(uintptr_t)conn);
}

/* Accepts until the listener is closed (the stop callback closes it). */
static void *acceptor(void *arg) {
    size_t index = (size_t)(uintptr_t)arg;
    cot_tcp conn;
    while (cot_coro_accept(loops[index].listener, &conn, COT_FOREVER) == 0) {
        if (!handoff) go(index, echo, (void *)(uintptr_t)conn);
        else if (cot_group_handoff(group, cot_loop_current(), conn, COT_LEAST_LOADED, arrived, NULL) != 0)
            cot_tcp_close(cot_loop_current(), conn);
    }
    return NULL;
}

/* On each loop's thread, once every loop runs. */
static void start(cot_loop *loop, size_t index, void *data) {
    (void)data;
    struct per_loop *me = &loops[index];
    if (handoff && index != 0) return; /* only loop 0 listens */
    int r;
    if ((r = cot_tcp_init(loop, AF_INET, &me->listener)) < 0 || (r = cot_tcp_reuseport(loop, me->listener, 1)) < 0 ||
        (r = cot_tcp_bind(loop, me->listener, (struct sockaddr *)&addr, sizeof addr)) < 0 ||
        (r = cot_tcp_listen(loop, me->listener, 511)) < 0) {
        fprintf(stderr, "loop %zu: %s\n", index, cot_strerror(r));
        return;
    }
    me->listening = 1;
    go(index, acceptor, (void *)(uintptr_t)index);
}

/* Shutdown began: stop accepting; open connections finish or time out. */
static void stop(cot_loop *loop, size_t index, void *data) {
    (void)data;
    if (loops[index].listening) cot_tcp_close(loop, loops[index].listener);
}

/* The loop has ended: free its coroutines. */
static void end(cot_loop *loop, size_t index, void *data) {
    (void)loop;
    (void)data;
    for (int i = 0; i < loops[index].ncoros; i++) cot_coro_free(loops[index].coros[i]);
}

/* --self-test: 64 clients connect, each echoes a line, then all hang up. */
static int self_test(size_t n) {
    enum { CLIENTS = 64 };
    int fds[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[i] < 0 || connect(fds[i], (struct sockaddr *)&addr, sizeof addr) != 0) return 1;
    }
    for (int i = 0; i < CLIENTS; i++) {
        char line[32], back[32];
        int len = snprintf(line, sizeof line, "hello from %d", i);
        if (write(fds[i], line, (size_t)len) != len || read(fds[i], back, sizeof back) != len ||
            memcmp(line, back, (size_t)len) != 0)
            return 1;
    }
    printf("64 clients echoed; connections per loop:");
    for (size_t i = 0; i < n; i++) printf(" %zu", cot_group_load(group, i));
    printf("\n");
    for (int i = 0; i < CLIENTS; i++) close(fds[i]);
    return 0;
}

int main(int argc, char **argv) {
    size_t n = cot_cpu_count();
    int port = 7007, test = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--handoff")) handoff = 1;
        else if (!strcmp(argv[i], "--self-test")) test = 1;
        else if (!strcmp(argv[i], "--loops") && i + 1 < argc) n = (size_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--port") && i + 1 < argc) port = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--handoff] [--loops N] [--port P] [--self-test]\n", argv[0]);
            return 2;
        }
    }
    if (n < 1 || n > MAX_LOOPS) n = n < 1 ? 1 : MAX_LOOPS;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons((uint16_t)(test ? 0 : port));
    int probe = -1;
    if (test) { /* a free port, held with SO_REUSEPORT until the loops listen on it */
        socklen_t len = sizeof addr;
        int one = 1;
        probe = socket(AF_INET, SOCK_STREAM, 0);
        setsockopt(probe, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        if (bind(probe, (struct sockaddr *)&addr, sizeof addr) != 0 ||
            getsockname(probe, (struct sockaddr *)&addr, &len) != 0)
            return 1;
    }

    /* Signals for the shutdown are taken by this thread alone (sigwait):
     * blocked before the loops' threads start, so they inherit the mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    cot_group_options o = {.loops = n, .flags = COT_GROUP_PIN, .start = start, .stop = stop, .end = end};
    int r = cot_group_new(&o, &group);
    if (r != 0) {
        fprintf(stderr, "cot_group_new: %s\n", cot_strerror(r));
        return 1;
    }
    if (probe >= 0) close(probe);
    int failed = 0;
    if (test) {
        failed = self_test(n);
    } else {
        printf("echo on 127.0.0.1:%d, %zu loops, %s; Ctrl-C to stop\n", port, n,
               handoff ? "loop 0 hands connections out" : "a listener per loop");
        int sig;
        sigwait(&sigs, &sig);
    }
    cot_group_shutdown(group, 5 * SECOND); /* 5 s for open connections */
    long served = 0;
    for (size_t i = 0; i < n; i++) served += loops[i].served;
    printf("served %ld connections\n", served);
    cot_group_free(group);
    return failed || (test && served != 64);
}
