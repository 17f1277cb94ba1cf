/* A TCP echo server in stackful coroutines, and its clients, on one loop
 * (doc/c.md, "Sockets in stackful coroutines"). Each connection gets a
 * coroutine that reads and writes as blocking code would; the loop runs the
 * others meanwhile. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SECOND 1000000000ull
#define CLIENTS 3

static cot_loop *loop;
static struct sockaddr_in addr = {.sin_family = AF_INET};
static cot_coro *coros[2 * CLIENTS + 1]; /* freed at the end */
static int ncoros, served;

static void go(cot_coro_fn fn, void *arg) {
    cot_coro *co;
    if (cot_coro_new(loop, fn, arg, 64 * 1024, &co) == 0 && cot_coro_start(co) == 0) coros[ncoros++] = co;
}

/* One connection: echo until the client is done or idle for 10 s. */
static void *echo(void *arg) {
    cot_tcp conn = (cot_tcp)(uintptr_t)arg;
    char buf[4096];
    int64_t n;
    while ((n = cot_coro_read(conn, buf, sizeof buf, 10 * SECOND)) > 0)
        if (cot_coro_write(conn, buf, (size_t)n, 10 * SECOND) < 0) break;
    cot_tcp_close(loop, conn);
    return NULL;
}

/* The server: a coroutine per connection; CLIENTS of them, then stop. */
static void *acceptor(void *arg) {
    cot_tcp server = (cot_tcp)(uintptr_t)arg, conn;
    for (int i = 0; i < CLIENTS && cot_coro_accept(server, &conn, COT_CORO_FOREVER) == 0; i++)
        go(echo, (void *)(uintptr_t)conn);
    cot_tcp_close(loop, server);
    return NULL;
}

/* A client: connect, send a line, read it back, hang up. */
static void *client(void *arg) {
    char line[32], back[32];
    int len = snprintf(line, sizeof line, "hello from %d", (int)(intptr_t)arg);
    cot_tcp t;
    int64_t n = 0;
    if (cot_tcp_init(loop, AF_INET, &t) < 0) return NULL;
    if (cot_coro_connect(t, (struct sockaddr *)&addr, sizeof addr, SECOND) == 0 &&
        cot_coro_write(t, line, (size_t)len, SECOND) == len)
        n = cot_coro_read(t, back, sizeof back, SECOND); /* a short line comes back whole on loopback */
    if (n == len && memcmp(line, back, (size_t)len) == 0) {
        printf("echoed: %.*s\n", len, back);
        served++;
    }
    cot_tcp_close(loop, t);
    return NULL;
}

int main(void) {
    uint32_t len = sizeof addr;
    cot_tcp server;
    int r;
    loop = cot_loop_new();
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((r = cot_tcp_init(loop, AF_INET, &server)) < 0 ||
        (r = cot_tcp_bind(loop, server, (struct sockaddr *)&addr, len)) < 0 ||
        (r = cot_tcp_listen(loop, server, 128)) < 0 ||
        (r = cot_tcp_getsockname(loop, server, (struct sockaddr *)&addr, &len)) < 0) { /* the port it got */
        fprintf(stderr, "%s\n", cot_strerror(r));
        return 1;
    }
    go(acceptor, (void *)(uintptr_t)server);
    for (int i = 0; i < CLIENTS; i++) go(client, (void *)(intptr_t)i);
    cot_loop_run(loop, COT_RUN_DEFAULT); /* until every coroutine and socket is done */
    for (int i = 0; i < ncoros; i++) cot_coro_free(coros[i]);
    return cot_loop_close(loop) == 0 && served == CLIENTS ? 0 : 1;
}
