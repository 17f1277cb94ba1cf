/* A TCP echo server and one client on one loop (doc/c.md, "Sockets"). */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#define SECOND 1000000000ull

struct conn {
    cot_tcp tcp;
    char buf[4096];
};

static void on_read(cot_loop *loop, uint64_t tcp, int64_t n, void *data);

static void on_written(cot_loop *loop, uint64_t tcp, int64_t n, void *data) {
    if (n < 0) {
        cot_tcp_close(loop, tcp);
        return;
    }
    struct conn *c = data; /* echo what comes next; idle 10 s: close */
    cot_tcp_read(loop, tcp, c->buf, sizeof c->buf, 10 * SECOND, on_read, c);
}

static void on_read(cot_loop *loop, uint64_t tcp, int64_t n, void *data) {
    struct conn *c = data;
    if (n <= 0) { /* 0: the client is done; < 0: an error, a timeout */
        cot_tcp_close(loop, tcp);
        return;
    }
    cot_tcp_write(loop, tcp, c->buf, (size_t)n, 10 * SECOND, on_written, c);
}

static void on_accept(cot_loop *loop, cot_tcp server, int status, cot_tcp client, void *data) {
    struct conn *c = data; /* one client here; a server would allocate one */
    if (status < 0) return;
    c->tcp = client;
    cot_tcp_read(loop, client, c->buf, sizeof c->buf, 10 * SECOND, on_read, c);
    cot_tcp_close(loop, server); /* serve only this one */
}

/* The client: connect, send, read the echo, shut down. */
static char reply[16];

static void on_reply(cot_loop *loop, uint64_t tcp, int64_t n, void *data) {
    (void)data;
    printf("echoed: %.*s\n", (int)(n > 0 ? n : 0), reply);
    cot_tcp_close(loop, tcp);
}

static void on_sent(cot_loop *loop, uint64_t tcp, int64_t n, void *data) {
    (void)data;
    if (n < 0 || cot_tcp_read(loop, tcp, reply, sizeof reply, SECOND, on_reply, NULL) < 0) cot_tcp_close(loop, tcp);
}

static void on_connect(cot_loop *loop, uint64_t tcp, int64_t status, void *data) {
    (void)data;
    if (status < 0 || cot_tcp_write(loop, tcp, "hello", 5, SECOND, on_sent, NULL) < 0) {
        fprintf(stderr, "connect: %s\n", cot_strerror((int)status));
        cot_tcp_close(loop, tcp);
    }
}

int main(void) {
    cot_loop *loop = cot_loop_new();
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    uint32_t len = sizeof addr;
    static struct conn conn;
    cot_tcp server, client;
    int r;
    if ((r = cot_tcp_init(loop, AF_INET, &server)) < 0 ||
        (r = cot_tcp_bind(loop, server, (struct sockaddr *)&addr, len)) < 0 ||
        (r = cot_tcp_listen(loop, server, 128)) < 0 ||
        (r = cot_tcp_getsockname(loop, server, (struct sockaddr *)&addr, &len)) < 0 || /* the port it got */
        (r = cot_tcp_accept(loop, server, COT_FOREVER, on_accept, &conn)) < 0 ||
        (r = cot_tcp_init(loop, AF_INET, &client)) < 0 ||
        (r = cot_tcp_connect(loop, client, (struct sockaddr *)&addr, len, SECOND, on_connect, NULL)) < 0) {
        fprintf(stderr, "%s\n", cot_strerror(r));
        return 1;
    }
    cot_loop_run(loop, COT_RUN_DEFAULT); /* until every socket is closed */
    return cot_loop_close(loop) == 0 && strcmp(reply, "hello") == 0 ? 0 : 1;
}
