/* What the socket tests share: running a loop until a callback has run,
 * closing it, and the one callback that keeps a socket operation's result. */
#ifndef COT_TEST_SOCKET_CHECK_H
#define COT_TEST_SOCKET_CHECK_H

#include <cothread.h>

#include "check.h"

#define MS 1000000ull

/* Runs the loop until `*flag` is set (at most a few thousand turns). */
static void run_until(cot_loop *loop, const int *flag) {
    for (int i = 0; i < 5000 && !*flag; i++) CHECK(cot_loop_run(loop, COT_RUN_ONCE) >= 0);
    CHECK(*flag);
}

/* Closes the loop once the sockets' handles are finished. */
static void finish(cot_loop *loop) {
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* Where a callback leaves its result. */
struct got {
    int done;
    int64_t result;
};

/* A cot_socket_cb keeping its result in the `struct got` of `data`. */
static void on_io(cot_loop *loop, uint64_t sock, int64_t result, void *data) {
    struct got *g = data;
    (void)loop;
    (void)sock;
    CHECK(!g->done); /* a completion runs once */
    g->done = 1;
    g->result = result;
}

#endif
