/* UDP sockets through the C ABI: a round trip over IPv4 and IPv6, a
 * connected socket, receive timeouts and cancels, and bad input. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "socket_check.h"


/* A receive's result and sender. */
struct recv {
    int done;
    int64_t n;
    struct sockaddr_storage from;
    uint32_t fromlen;
    char buf[16];
};

static void on_recv(cot_loop *loop, cot_udp udp, int64_t n, const struct sockaddr *from, uint32_t fromlen,
                    void *data) {
    struct recv *r = data;
    (void)loop;
    (void)udp;
    CHECK(!r->done);
    r->done = 1;
    r->n = n;
    r->fromlen = fromlen;
    CHECK(n < 0 ? from == NULL && fromlen == 0 : from != NULL && fromlen <= sizeof r->from);
    if (from) memcpy(&r->from, from, fromlen);
}

/* Two sockets bound to the loopback of `family`: a datagram each way, the
 * reply to the sender's address as received. */
static void round_trip(int family, const struct sockaddr *any, uint32_t len) {
    cot_loop *loop = cot_loop_new();
    cot_udp a, b;
    CHECK_EQ(cot_udp_init(loop, family, &a), 0);
    CHECK_EQ(cot_udp_init(loop, family, &b), 0);
    CHECK_EQ(cot_udp_bind(loop, a, any, len), 0);
    CHECK_EQ(cot_udp_bind(loop, b, any, len), 0);
    struct sockaddr_storage to;
    uint32_t tolen = sizeof to;
    CHECK_EQ(cot_udp_getsockname(loop, b, (struct sockaddr *)&to, &tolen), 0);

    struct recv rb, ra;
    memset(&rb, 0, sizeof rb);
    memset(&ra, 0, sizeof ra);
    struct got s1 = {0, 1}, s2 = {0, 1};
    CHECK_EQ(cot_udp_recv(loop, b, rb.buf, sizeof rb.buf, 5000 * MS, on_recv, &rb), 0);
    CHECK_EQ(cot_udp_send(loop, a, "ping", 4, (struct sockaddr *)&to, tolen, 5000 * MS, on_io, &s1), 0);
    run_until(loop, &rb.done);
    run_until(loop, &s1.done);
    CHECK_EQ(s1.result, 4);
    CHECK_EQ(rb.n, 4);
    CHECK(memcmp(rb.buf, "ping", 4) == 0);
    CHECK_EQ(rb.from.ss_family, family);

    CHECK_EQ(cot_udp_recv(loop, a, ra.buf, 2, 5000 * MS, on_recv, &ra), 0);
    CHECK_EQ(cot_udp_send(loop, b, "pong!", 5, (struct sockaddr *)&rb.from, rb.fromlen, COT_FOREVER, on_io, &s2),
             0);
    run_until(loop, &ra.done);
    CHECK_EQ(ra.n, 2); /* truncated to the buffer, the rest dropped */
    CHECK(memcmp(ra.buf, "po", 2) == 0);

    CHECK_EQ(cot_udp_close(loop, a), 0);
    CHECK_EQ(cot_udp_close(loop, b), 0);
    finish(loop);
}

static void test_round_trip(void) {
    struct sockaddr_in v4 = loopback();
    round_trip(AF_INET, (struct sockaddr *)&v4, sizeof v4);
    struct sockaddr_in6 v6;
    memset(&v6, 0, sizeof v6);
    v6.sin6_family = AF_INET6;
    v6.sin6_addr = in6addr_loopback;
    round_trip(AF_INET6, (struct sockaddr *)&v6, sizeof v6);
}

/* A connected socket sends with a NULL address; an empty datagram is one. */
static void test_connected(void) {
    cot_loop *loop = cot_loop_new();
    struct sockaddr_in v4 = loopback();
    cot_udp a, b;
    CHECK_EQ(cot_udp_init(loop, AF_INET, &a), 0);
    CHECK_EQ(cot_udp_init(loop, AF_INET, &b), 0);
    CHECK_EQ(cot_udp_bind(loop, b, (struct sockaddr *)&v4, sizeof v4), 0);
    struct sockaddr_storage to;
    uint32_t tolen = sizeof to;
    CHECK_EQ(cot_udp_getsockname(loop, b, (struct sockaddr *)&to, &tolen), 0);

    struct got s = {0, 1};
    CHECK_EQ(cot_udp_send(loop, a, "x", 1, NULL, 0, COT_FOREVER, on_io, &s), 0);
    run_until(loop, &s.done);
    CHECK(s.result < 0); /* not connected: no peer to send to */

    CHECK_EQ(cot_udp_connect(loop, a, (struct sockaddr *)&to, tolen), 0);
    struct recv r;
    memset(&r, 0, sizeof r);
    CHECK_EQ(cot_udp_recv(loop, b, r.buf, sizeof r.buf, 5000 * MS, on_recv, &r), 0);
    s.done = 0;
    CHECK_EQ(cot_udp_send(loop, a, NULL, 0, NULL, 0, COT_FOREVER, on_io, &s), 0);
    run_until(loop, &r.done);
    run_until(loop, &s.done);
    CHECK_EQ(s.result, 0);
    CHECK_EQ(r.n, 0);
    CHECK_EQ(cot_udp_connect(loop, a, NULL, 0), 0); /* dissolved */

    CHECK_EQ(cot_udp_close(loop, a), 0);
    CHECK_EQ(cot_udp_close(loop, b), 0);
    finish(loop);
}

/* A receive times out, is cancelled, or ends when its socket closes; a
 * second receiver at once is COT_EBUSY; bad input is refused. */
static void test_waits_and_bad_input(void) {
    cot_loop *loop = cot_loop_new();
    struct sockaddr_in v4 = loopback();
    cot_udp u;
    CHECK_EQ(cot_udp_init(loop, AF_INET, &u), 0);
    CHECK_EQ(cot_udp_bind(loop, u, (struct sockaddr *)&v4, sizeof v4), 0);

    struct recv r;
    memset(&r, 0, sizeof r);
    CHECK_EQ(cot_udp_recv(loop, u, r.buf, sizeof r.buf, 1 * MS, on_recv, &r), 0);
    CHECK_EQ(cot_udp_recv(loop, u, r.buf, sizeof r.buf, 1 * MS, on_recv, &r), COT_EBUSY);
    run_until(loop, &r.done);
    CHECK_EQ(r.n, COT_ETIMEDOUT);

    memset(&r, 0, sizeof r);
    CHECK_EQ(cot_udp_recv(loop, u, r.buf, sizeof r.buf, COT_FOREVER, on_recv, &r), 0);
    CHECK_EQ(cot_udp_cancel(loop, u, COT_READABLE), 1);
    CHECK(!r.done);
    run_until(loop, &r.done);
    CHECK_EQ(r.n, COT_ECANCELED);

    int on = 1, got = 0;
    uint32_t glen = sizeof got;
    CHECK_EQ(cot_udp_setopt(loop, u, SOL_SOCKET, SO_BROADCAST, &on, sizeof on), 0);
    CHECK_EQ(cot_udp_getopt(loop, u, SOL_SOCKET, SO_BROADCAST, &got, &glen), 0);
    CHECK_EQ(got, 1);
    CHECK_EQ(glen, sizeof got);
    CHECK_EQ(cot_udp_setopt(loop, u, SOL_SOCKET, 9999, &on, sizeof on), COT_ENOPROTOOPT);

    struct got s = {0, 1};
    CHECK_EQ(cot_udp_recv(loop, u, r.buf, 0, COT_FOREVER, on_recv, &r), COT_EINVAL);
    CHECK_EQ(cot_udp_recv(loop, u, NULL, 4, COT_FOREVER, on_recv, &r), COT_EINVAL);
    CHECK_EQ(cot_udp_recv(loop, u, r.buf, 4, (uint64_t)-1 - 1, on_recv, &r), COT_EINVAL);
    CHECK_EQ(cot_udp_send(loop, u, NULL, 4, NULL, 0, COT_FOREVER, on_io, &s), COT_EINVAL);
    CHECK_EQ(cot_udp_send(loop, u, "x", 1, (struct sockaddr *)&v4, 1, COT_FOREVER, on_io, &s), COT_EINVAL);
    CHECK_EQ(cot_udp_send(loop, u, "x", 1, NULL, 0, (uint64_t)-3, on_io, &s), COT_EINVAL);

    /* Closing with a receive waiting cancels it; the key is dead after. */
    memset(&r, 0, sizeof r);
    CHECK_EQ(cot_udp_recv(loop, u, r.buf, sizeof r.buf, COT_FOREVER, on_recv, &r), 0);
    CHECK_EQ(cot_udp_close(loop, u), 0);
    CHECK(!r.done);
    run_until(loop, &r.done);
    CHECK_EQ(r.n, COT_ECANCELED);
    CHECK_EQ(cot_udp_recv(loop, u, r.buf, sizeof r.buf, COT_FOREVER, on_recv, &r), COT_EBADF);
    CHECK_EQ(cot_udp_send(loop, u, "x", 1, NULL, 0, COT_FOREVER, on_io, &s), COT_EBADF);
    CHECK_EQ(cot_udp_close(loop, u), COT_EBADF);
    CHECK(!s.done);
    finish(loop);
}

int main(void) {
    test_round_trip();
    test_connected();
    test_waits_and_bad_input();
    puts("test_udp: ok");
    return 0;
}
