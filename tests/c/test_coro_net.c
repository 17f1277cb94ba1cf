/* Socket calls in stackful coroutines: a TCP echo (a server coroutine per
 * client), a UDP round trip, timeouts, a close and a wake from outside the
 * waiting coroutine, writes that go at once or wait, and bad input. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "socket_check.h"

#define CLIENTS 3

static cot_loop *loop;

/* ---- echo: an acceptor, an echo coroutine per client, CLIENTS clients ---- */

static struct sockaddr_in echo_addr;
static cot_coro *echoers[CLIENTS];
static int echoed;

static void *echo(void *arg) {
    cot_tcp c = (cot_tcp)(uintptr_t)arg;
    char buf[16]; /* small: a message takes several reads */
    int64_t n;
    while ((n = cot_coro_read(c, buf, sizeof buf, 1000 * MS)) > 0) {
        CHECK_EQ(cot_coro_write(c, buf, (size_t)n, 1000 * MS), n);
        echoed += (int)n;
    }
    CHECK_EQ(n, 0); /* the client shut its side */
    CHECK_EQ(cot_tcp_close(loop, c), 0);
    return NULL;
}

static void *acceptor(void *arg) {
    cot_tcp server = (cot_tcp)(uintptr_t)arg;
    for (int i = 0; i < CLIENTS; i++) {
        cot_tcp c = 0;
        CHECK_EQ(cot_coro_accept(server, &c, COT_CORO_FOREVER), 0);
        CHECK(c != 0);
        echoers[i] = spawn_on(loop, echo, (void *)(uintptr_t)c);
    }
    CHECK_EQ(cot_tcp_close(loop, server), 0);
    return NULL;
}

static void *client(void *arg) {
    int id = (int)(intptr_t)arg;
    char msg[100], got[100];
    cot_tcp t;
    memset(msg, 'a' + id, sizeof msg);
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &t), 0);
    CHECK_EQ(cot_coro_connect(t, (struct sockaddr *)&echo_addr, sizeof echo_addr, 1000 * MS), 0);
    CHECK_EQ(cot_coro_write(t, msg, sizeof msg, 1000 * MS), sizeof msg);
    size_t have = 0;
    while (have < sizeof got) {
        int64_t n = cot_coro_read(t, got + have, sizeof got - have, 1000 * MS);
        CHECK(n > 0);
        have += (size_t)n;
    }
    CHECK(memcmp(msg, got, sizeof msg) == 0);
    CHECK_EQ(cot_tcp_shutdown(loop, t), 0);
    CHECK_EQ(cot_coro_read(t, got, sizeof got, 1000 * MS), 0); /* the server closed */
    CHECK_EQ(cot_tcp_close(loop, t), 0);
    return NULL;
}

static void test_echo(void) {
    cot_coro *cos[1 + CLIENTS];
    cot_tcp server = listen_loopback(loop, 16, &echo_addr);
    cos[0] = spawn_on(loop, acceptor, (void *)(uintptr_t)server);
    for (int i = 0; i < CLIENTS; i++) cos[1 + i] = spawn_on(loop, client, (void *)(intptr_t)i);
    run_and_free_on(loop, cos, 1 + CLIENTS);
    run_and_free_on(loop, echoers, CLIENTS);
    CHECK_EQ(echoed, 100 * CLIENTS);
}

/* ---- UDP: a ping and its reply to the sender's address ---- */

static cot_udp udp_a, udp_b;
static struct sockaddr_in addr_b;

static cot_udp udp_bound(struct sockaddr_in *a) {
    cot_udp u;
    uint32_t len = sizeof *a;
    *a = loopback();
    CHECK_EQ(cot_udp_init(loop, AF_INET, &u), 0);
    CHECK_EQ(cot_udp_bind(loop, u, (struct sockaddr *)a, sizeof *a), 0);
    CHECK_EQ(cot_udp_getsockname(loop, u, (struct sockaddr *)a, &len), 0);
    return u;
}

static void *udp_server(void *arg) {
    char buf[64];
    struct sockaddr_storage from;
    uint32_t fromlen = sizeof from;
    (void)arg;
    int64_t n = cot_coro_recvfrom(udp_b, buf, sizeof buf, (struct sockaddr *)&from, &fromlen, 1000 * MS);
    CHECK_EQ(n, 4);
    CHECK(memcmp(buf, "ping", 4) == 0);
    CHECK_EQ(fromlen, sizeof(struct sockaddr_in));
    CHECK_EQ(cot_coro_sendto(udp_b, "pong!", 5, (struct sockaddr *)&from, fromlen, 1000 * MS), 5);
    return NULL;
}

static void *udp_client(void *arg) {
    char buf[64];
    (void)arg;
    CHECK_EQ(cot_coro_sendto(udp_a, "ping", 4, (struct sockaddr *)&addr_b, sizeof addr_b, 1000 * MS), 4);
    /* no `from` wanted; a buffer too small cuts the datagram */
    CHECK_EQ(cot_coro_recvfrom(udp_a, buf, 4, NULL, NULL, 1000 * MS), 4);
    CHECK(memcmp(buf, "pong", 4) == 0);
    CHECK_EQ(cot_coro_recvfrom(udp_a, buf, sizeof buf, NULL, NULL, 20 * MS), COT_ETIMEDOUT);
    return NULL;
}

static void test_udp(void) {
    struct sockaddr_in a;
    udp_a = udp_bound(&a);
    udp_b = udp_bound(&addr_b);
    cot_coro *cos[2] = {spawn_on(loop, udp_server, NULL), spawn_on(loop, udp_client, NULL)};
    run_and_free_on(loop, cos, 2);
    CHECK_EQ(cot_udp_close(loop, udp_a), 0);
    CHECK_EQ(cot_udp_close(loop, udp_b), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
}

/* ---- timeouts, a wake, a close by another coroutine, bad input ---- */

static cot_tcp pair_a, pair_b; /* a connected pair */
static cot_coro *reader;
static int reader_ended;

static void *connect_pair(void *arg) {
    struct sockaddr_in a;
    cot_tcp server = listen_loopback(loop, 16, &a);
    (void)arg;
    CHECK_EQ(cot_tcp_init(loop, AF_INET, &pair_a), 0);
    CHECK_EQ(cot_coro_connect(pair_a, (struct sockaddr *)&a, sizeof a, 1000 * MS), 0);
    CHECK_EQ(cot_coro_accept(server, &pair_b, 1000 * MS), 0);
    CHECK_EQ(cot_tcp_close(loop, server), 0);
    return NULL;
}

static void *timeouts(void *arg) {
    char buf[8];
    (void)arg;
    CHECK_EQ(cot_coro_read(pair_a, buf, sizeof buf, 20 * MS), COT_ETIMEDOUT);
    CHECK_EQ(cot_coro_read(pair_a, buf, sizeof buf, 0), COT_ETIMEDOUT);
    /* data already there wins over a timeout of 0 */
    CHECK_EQ(cot_coro_write(pair_b, "xy", 2, 0), 2);
    CHECK_EQ(cot_coro_sleep(5 * MS), 0);
    CHECK_EQ(cot_coro_read(pair_a, buf, sizeof buf, 0), 2);
    return NULL;
}

static void *read_forever(void *arg) {
    char buf[8];
    int64_t want = (int64_t)(intptr_t)arg;
    CHECK_EQ(cot_coro_read(pair_a, buf, sizeof buf, COT_CORO_FOREVER), want);
    reader_ended = 1;
    return NULL;
}

static void *waker(void *arg) {
    char buf[8];
    (void)arg;
    CHECK_EQ(cot_coro_sleep(5 * MS), 0);
    CHECK_EQ(reader_ended, 0);
    /* a second reader on the socket: refused, the first one goes on */
    CHECK_EQ(cot_coro_read(pair_a, buf, sizeof buf, 0), COT_EBUSY);
    /* one writer beside the reader is normal full duplex */
    CHECK_EQ(cot_coro_write(pair_a, "z", 1, 1000 * MS), 1);
    CHECK_EQ(cot_coro_read(pair_b, buf, sizeof buf, 1000 * MS), 1);
    CHECK_EQ(cot_coro_wake(reader), 1);
    CHECK_EQ(cot_coro_sleep(5 * MS), 0);
    CHECK_EQ(reader_ended, 1);
    /* the read was cancelled, not left behind: the socket reads again */
    CHECK_EQ(cot_coro_write(pair_b, "again", 5, 1000 * MS), 5);
    CHECK_EQ(cot_coro_read(pair_a, buf, sizeof buf, 1000 * MS), 5);
    return NULL;
}

/* After its reader was freed mid-read, the socket reads again. */
static void *read_again(void *arg) {
    char buf[8];
    (void)arg;
    /* the freed reader's read ends at the loop's next turn (a write that
     * fits no longer parks, so wait for that turn here) */
    CHECK_EQ(cot_coro_sleep(1 * MS), 0);
    CHECK_EQ(cot_coro_write(pair_b, "q", 1, 1000 * MS), 1);
    CHECK_EQ(cot_coro_read(pair_a, buf, sizeof buf, 1000 * MS), 1);
    return NULL;
}

static void *closer(void *arg) {
    (void)arg;
    CHECK_EQ(cot_coro_sleep(5 * MS), 0);
    CHECK_EQ(cot_tcp_close(loop, pair_a), 0);
    return NULL;
}

/* A write the socket takes goes at once, without a switch; one it cannot
 * take parks for the rest, which arrives whole and in order, and a second
 * writer meanwhile is refused rather than slipped in between. */
static int other_ran;

static void *note_ran(void *arg) {
    (void)arg;
    other_ran = 1;
    return NULL;
}

static void *write_at_once(void *arg) {
    char c = 0;
    (void)arg;
    CHECK_EQ(cot_coro_write(pair_b, "w", 1, 1000 * MS), 1);
    CHECK_EQ(other_ran, 0); /* not parked: the coroutine started after this one has not run */
    CHECK_EQ(cot_coro_read(pair_a, &c, 1, 1000 * MS), 1);
    CHECK_EQ(c, 'w');
    return NULL;
}

/* A read whose data is there goes without a switch; a read right after a
 * short one skips the try and waits for readiness, even if the bytes came
 * meanwhile, and still gets them. The writes are try calls, which the
 * budget does not count (two reads fit in it: COT_BUDGET >= 2). */
static int other_turns, other_stop;

static void *count_turns(void *arg) {
    (void)arg;
    while (!other_stop) {
        other_turns++;
        CHECK_EQ(cot_coro_yield(), 0);
    }
    return NULL;
}

static void *read_after_short(void *arg) {
    char buf[8];
    (void)arg;
    CHECK_EQ(cot_tcp_try_write(loop, pair_b, "abc", 3), 3);
    CHECK_EQ(cot_coro_read(pair_a, buf, 2, 1000 * MS), 2); /* filled: not short */
    CHECK_EQ(cot_coro_read(pair_a, buf, sizeof buf, 1000 * MS), 1);
    CHECK_EQ(buf[0], 'c');
    CHECK_EQ(other_turns, 0); /* both answered at once */
    CHECK_EQ(cot_coro_yield(), 0); /* a new turn */
    CHECK_EQ(cot_tcp_try_write(loop, pair_b, "d", 1), 1);
    int before = other_turns;
    CHECK_EQ(cot_coro_read(pair_a, buf, sizeof buf, 1000 * MS), 1);
    CHECK_EQ(buf[0], 'd');
    CHECK(other_turns > before); /* the last read came back short: this one waited */
    other_stop = 1;
    return NULL;
}

#define BIG (8 << 20) /* more than loopback buffers hold unread */
static unsigned char big[BIG], big_got[BIG];

static void *write_big(void *arg) {
    (void)arg;
    for (size_t i = 0; i < BIG; i++) big[i] = (unsigned char)(i * 7 ^ i >> 11);
    CHECK_EQ(cot_coro_write(pair_b, big, BIG, 5000 * MS), BIG);
    return NULL;
}

static void *read_big(void *arg) {
    size_t have = 0;
    (void)arg;
    CHECK_EQ(cot_coro_write(pair_b, "x", 1, 0), COT_EBUSY); /* write_big waits with the rest */
    while (have < BIG) {
        int64_t n = cot_coro_read(pair_a, big_got + have, BIG - have, 5000 * MS);
        CHECK(n > 0);
        have += (size_t)n;
    }
    CHECK(memcmp(big, big_got, BIG) == 0);
    return NULL;
}

/* Parks in a write of `arg` (BIG bytes) that nobody reads. */
static void *write_lent(void *arg) {
    CHECK_EQ(cot_coro_write(pair_b, arg, BIG, COT_CORO_FOREVER), BIG); /* never returns: freed */
    return NULL;
}

static void *drain_a(void *arg) {
    static char buf[64 * 1024];
    (void)arg;
    while (cot_coro_read(pair_a, buf, sizeof buf, 20 * MS) > 0) {
    }
    return NULL;
}

static void *bad_input(void *arg) {
    char buf[8];
    struct sockaddr_in a = {0};
    cot_tcp t = 0;
    (void)arg;
    CHECK_EQ(cot_coro_read(pair_b, NULL, 8, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_read(pair_b, buf, 0, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_write(pair_b, buf, 0, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_write(pair_b, NULL, 1, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_read(pair_b, buf, sizeof buf, (uint64_t)-5), COT_EINVAL);
    CHECK_EQ(cot_coro_write(pair_b, "x", 1, (uint64_t)-5), COT_EINVAL);
    CHECK_EQ(cot_coro_accept(pair_b, NULL, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_connect(pair_b, NULL, 0, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_recvfrom(udp_a, buf, sizeof buf, (struct sockaddr *)&a, NULL, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_read(pair_a, buf, sizeof buf, 0), COT_EBADF); /* closed key */
    CHECK_EQ(cot_coro_write(pair_a, "x", 1, 0), COT_EBADF);
    CHECK_EQ(cot_coro_accept(12345, &t, 0), COT_EBADF); /* made-up key */
    CHECK_EQ(t, 0);
    CHECK_EQ(cot_coro_recvfrom(pair_b, buf, sizeof buf, NULL, NULL, 0), COT_EINVAL); /* a TCP key */
    return NULL;
}

static void test_waits(void) {
    char buf[8];
    cot_coro *cos[1] = {spawn_on(loop, connect_pair, NULL)};
    run_and_free_on(loop, cos, 1);
    cos[0] = spawn_on(loop, timeouts, NULL);
    run_and_free_on(loop, cos, 1);
    cot_coro *o[2] = {spawn_on(loop, write_at_once, NULL), spawn_on(loop, note_ran, NULL)};
    run_and_free_on(loop, o, 2);
    o[0] = spawn_on(loop, read_after_short, NULL);
    o[1] = spawn_on(loop, count_turns, NULL);
    run_and_free_on(loop, o, 2);
    cot_coro *b[2] = {spawn_on(loop, write_big, NULL), spawn_on(loop, read_big, NULL)};
    run_and_free_on(loop, b, 2);

    reader = spawn_on(loop, read_forever, (void *)(intptr_t)COT_ECANCELED); /* woken */
    cot_coro *w[2] = {reader, spawn_on(loop, waker, NULL)};
    run_and_free_on(loop, w, 2);

    /* freed while parked in a read: the read is cancelled, nothing leaks */
    cot_coro *parked = spawn_on(loop, read_forever, NULL);
    for (int i = 0; i < 3; i++) CHECK(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0);
    CHECK_EQ(cot_coro_status(parked), COT_CORO_WAITING);
    CHECK_EQ(cot_coro_free(parked), 0);
    cos[0] = spawn_on(loop, read_again, NULL);
    run_and_free_on(loop, cos, 1);

    /* freed while parked in a write, which sends from the caller's buffer:
     * the write ends before the free returns (ASan would see a later read) */
    unsigned char *lent = malloc(BIG);
    memset(lent, 5, BIG);
    parked = spawn_on(loop, write_lent, lent);
    for (int i = 0; i < 3; i++) CHECK(cot_loop_run(loop, COT_RUN_NOWAIT) >= 0);
    CHECK_EQ(cot_coro_status(parked), COT_CORO_WAITING);
    CHECK_EQ(cot_coro_free(parked), 0);
    free(lent);
    cos[0] = spawn_on(loop, drain_a, NULL);
    run_and_free_on(loop, cos, 1);

    reader_ended = 0;
    reader = spawn_on(loop, read_forever, (void *)(intptr_t)COT_ECANCELED); /* its socket closed */
    cot_coro *c[2] = {reader, spawn_on(loop, closer, NULL)};
    run_and_free_on(loop, c, 2);

    CHECK_EQ(cot_coro_read(pair_b, buf, sizeof buf, 0), COT_EPERM); /* outside coroutines */
    CHECK_EQ(cot_coro_write(pair_b, "x", 1, 0), COT_EPERM);
    cos[0] = spawn_on(loop, bad_input, NULL);
    run_and_free_on(loop, cos, 1);
    CHECK_EQ(cot_tcp_close(loop, pair_b), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
}

int main(void) {
    loop = cot_loop_new();
    CHECK(loop != NULL);
    test_echo();
    test_udp();
    test_waits();
    CHECK_EQ(cot_loop_close(loop), 0);
    puts("test_coro_net: ok");
    return 0;
}
