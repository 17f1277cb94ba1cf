/* poco-compatible API: byte streams. Known output: a message larger than the
 * stream's buffer sent in pieces and received whole, receive_up_to, flush,
 * the _no_wait forms, timeouts with partial counts. */
#include <poco/poco.h>
#include <string.h>

#include "check.h"
#include "poco_log.h"

static char const msg[] = "The quick brown fox jumps over the lazy dog.";

static void sender(void *ctx) {
    Stream *s = ctx;
    size_t n = strlen(msg);
    CHECK_EQ(stream_send(s, (uint8_t const *)msg, &n, PLATFORM_TICKS_FOREVER), RES_OK);
    CHECK_EQ(n, strlen(msg));
    LOG("sent %zu\n", n);
    CHECK_EQ(stream_flush(s, PLATFORM_TICKS_FOREVER), RES_OK);
    LOG("flushed\n");
    n = 3;
    CHECK_EQ(stream_send(s, (uint8_t const *)"xyz", &n, PLATFORM_TICKS_FOREVER), RES_OK);
}

static void receiver(void *ctx) {
    Stream *s = ctx;
    char buf[64] = {0};
    size_t n = strlen(msg);
    CHECK_EQ(stream_receive(s, (uint8_t *)buf, &n, PLATFORM_TICKS_FOREVER), RES_OK);
    LOG("received %zu: %s\n", n, buf);
    memset(buf, 0, sizeof buf);
    n = sizeof buf - 1;
    CHECK_EQ(stream_receive_up_to(s, (uint8_t *)buf, &n, PLATFORM_TICKS_FOREVER), RES_OK);
    LOG("up_to %zu: %s\n", n, buf);
}

static void whole(void) {
    Stream *s = stream_create(8);
    CHECK(s != NULL);
    Coro *t[] = {
        coro_create(sender, s, DEFAULT_STACK_SIZE),
        coro_create(receiver, s, DEFAULT_STACK_SIZE),
    };
    Scheduler *sch = round_robin_scheduler_create(t, 2);
    scheduler_run(sch);
    /* The receiver takes the last piece and yields; the sender, next in
     * turn, finds the stream empty already and flushes at once. */
    EXPECT_LOG("sent 44\n"
               "flushed\n"
               "received 44: The quick brown fox jumps over the lazy dog.\n"
               "up_to 3: xyz\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)sch);
    coro_free(t[0]);
    coro_free(t[1]);
    stream_free(s);
}

static void partial_coro(void *ctx) {
    Stream *s = ctx;
    size_t n = 6;
    CHECK_EQ(stream_send(s, (uint8_t const *)"abcdef", &n, 5), RES_TIMEOUT);
    CHECK_EQ(n, 4);
    CHECK_EQ(stream_bytes_used(s), 4);
    CHECK_EQ(stream_bytes_free(s), 0);
    n = 1;
    CHECK_EQ(stream_send_no_wait(s, (uint8_t const *)"g", &n), RES_STREAM_FULL);
    CHECK_EQ(stream_flush(s, 0), RES_TIMEOUT);
    char buf[8] = {0};
    n = 6;
    CHECK_EQ(stream_receive(s, (uint8_t *)buf, &n, 0), RES_TIMEOUT);
    CHECK_EQ(n, 4);
    LOG("partial %s\n", buf);
    n = 2;
    CHECK_EQ(stream_receive_no_wait(s, (uint8_t *)buf, &n), RES_STREAM_EMPTY);
    CHECK_EQ(n, 0);
    n = 2;
    CHECK_EQ(stream_send_no_wait(s, (uint8_t const *)"gh", &n), RES_OK);
    n = 8;
    CHECK_EQ(stream_receive_up_to(s, (uint8_t *)buf, &n, 0), RES_OK);
    CHECK_EQ(n, 2);
    n = 8;
    CHECK_EQ(stream_receive_up_to(s, (uint8_t *)buf, &n, 3), RES_TIMEOUT);
    CHECK_EQ(n, 0);
    CHECK_EQ(stream_flush(s, 0), RES_OK);
    LOG("partial ok\n");
}

static void partial(void) {
    Stream st;
    uint8_t buf[4];
    CHECK(stream_create_static(&st, sizeof buf, buf) == &st);
    Coro *t[] = {coro_create(partial_coro, &st, DEFAULT_STACK_SIZE)};
    Scheduler *sch = round_robin_scheduler_create(t, 1);
    scheduler_run(sch);
    EXPECT_LOG("partial abcd\npartial ok\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)sch);
    coro_free(t[0]);
}

int main(void) {
    whole();
    partial();
    printf("test_poco_stream: ok\n");
    return 0;
}
