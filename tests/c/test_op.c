/* The operation state machines through the C ABI (cot_op, cot_object), no
 * backend: bad input, and transitions of the machines (rust/src/op) with the exact
 * action bits and states each event yields. tests/c/libuv/test_libuv_ops.c
 * drives real libuv through the same functions. */
#include <cothread.h>
#include <string.h>

#include "check.h"

/* cot_op_state values (include/cothread.h, doc/c.md). */
enum {
    FREED = 0,
    REQ_AWAITING = 1,
    REQ_COMPLETED = 2,
    REQ_CANCELLED = 3,
    REQ_RESETTING = 4,
    HDL_AWAITING = 5,
    HDL_COMPLETED = 6,
    HDL_CANCELLED = 7,
    HDL_RESETTING_AFTER_CANCEL = 8,
    HDL_CLOSING = 9,
    HDL_RESETTING_AFTER_CLOSE = 10,
};
/* cot_object_state values. */
enum { OBJ_READY = 0, OBJ_AWAITING = 1, OBJ_COMPLETED = 2, OBJ_CLOSING = 3, OBJ_FREED = 4 };

/* Handle types, as a driver numbers them (any n > 0). */
#define TIMER 1u
#define IDLE 2u

#define NOTHING 0u
#define UNTOUCHED 0xdeadbeefu /* what a failed call must leave in *actions */

/* Applies an event and checks both its actions and the state it leads to. */
#define EXPECT(call, acts, state)                  \
    do {                                           \
        unsigned a_ = UNTOUCHED;                   \
        CHECK_EQ(call, 0);                         \
        CHECK_EQ(a_, (acts));                      \
        CHECK_EQ(cot_op_state(&op), (state));      \
    } while (0)
#define OBJ_EXPECT(call, acts, state)              \
    do {                                           \
        unsigned a_ = UNTOUCHED;                   \
        CHECK_EQ(call, 0);                         \
        CHECK_EQ(a_, (acts));                      \
        CHECK_EQ(cot_object_state(&obj), (state)); \
    } while (0)
/* A refused event: the error, *actions untouched, the state unchanged. */
#define REFUSED(call, err)                         \
    do {                                           \
        unsigned a_ = UNTOUCHED;                   \
        int before_ = cot_op_state(&op);           \
        CHECK_EQ(call, (err));                     \
        CHECK_EQ(a_, UNTOUCHED);                   \
        CHECK_EQ(cot_op_state(&op), before_);      \
    } while (0)
#define OBJ_REFUSED(call, err)                     \
    do {                                           \
        unsigned a_ = UNTOUCHED;                   \
        int before_ = cot_object_state(&obj);      \
        CHECK_EQ(call, (err));                     \
        CHECK_EQ(a_, UNTOUCHED);                   \
        CHECK_EQ(cot_object_state(&obj), before_); \
    } while (0)

static void test_layout(void) {
    CHECK_EQ(sizeof(cot_op), 16);
    CHECK_EQ(sizeof(cot_object), 16);
    /* Action bits: distinct, in execution order, resumes last. */
    CHECK_EQ(COT_ACT_DROP_RESULTS, 1 << 0);
    CHECK(COT_ACT_DROP_RESULTS < COT_ACT_CANCEL_REQUEST);
    CHECK(COT_ACT_CANCEL_REQUEST < COT_ACT_STOP_HANDLE);
    CHECK(COT_ACT_STOP_HANDLE < COT_ACT_CLOSE_HANDLE);
    CHECK(COT_ACT_CLOSE_HANDLE < COT_ACT_START_REQUEST);
    CHECK(COT_ACT_START_REQUEST < COT_ACT_START_HANDLE);
    CHECK(COT_ACT_START_HANDLE < COT_ACT_REARM_HANDLE);
    CHECK(COT_ACT_REARM_HANDLE < COT_ACT_RELEASE);
    CHECK(COT_ACT_RELEASE < COT_ACT_RESUME);
    CHECK(COT_ACT_RESUME < COT_ACT_RESUME_FAILED);
    CHECK(COT_ACT_RESUME_FAILED < COT_ACT_RESUME_CLOSED);
    CHECK_EQ(COT_ACT_RESUME_CLOSED, 1 << 10);
    CHECK_EQ(COT_OP_REQUEST, 0);
}

static void test_op_bad_input(void) {
    unsigned a = UNTOUCHED;
    /* NULL slot. */
    CHECK_EQ(cot_op_init(NULL), COT_EINVAL);
    CHECK_EQ(cot_op_state(NULL), COT_EINVAL);
    CHECK_EQ(cot_op_await(NULL, COT_OP_REQUEST, &a), COT_EINVAL);
    CHECK_EQ(cot_op_callback(NULL, &a), COT_EINVAL);
    CHECK_EQ(cot_op_close_callback(NULL, &a), COT_EINVAL);
    CHECK_EQ(cot_op_outside_resume(NULL, 0, &a), COT_EINVAL);
    CHECK_EQ(cot_op_task_left(NULL, &a), COT_EINVAL);
    CHECK_EQ(cot_op_start_failed(NULL, 0, &a), COT_EINVAL);
    CHECK_EQ(a, UNTOUCHED);

    /* Zeroed and garbage memory: never set up. */
    cot_op op;
    memset(&op, 0, sizeof op);
    CHECK_EQ(cot_op_state(&op), COT_EINVAL);
    REFUSED(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_EINVAL);
    REFUSED(cot_op_await(&op, TIMER, &a_), COT_EINVAL);
    REFUSED(cot_op_callback(&op, &a_), COT_EINVAL);
    REFUSED(cot_op_close_callback(&op, &a_), COT_EINVAL);
    REFUSED(cot_op_outside_resume(&op, 1, &a_), COT_EINVAL);
    REFUSED(cot_op_task_left(&op, &a_), COT_EINVAL);
    REFUSED(cot_op_start_failed(&op, 1, &a_), COT_EINVAL);
    memset(&op, 0xa5, sizeof op);
    CHECK_EQ(cot_op_state(&op), COT_EINVAL);
    REFUSED(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_EINVAL);
    REFUSED(cot_op_task_left(&op, &a_), COT_EINVAL);

    /* A slot is not an object, and an object is not a slot. */
    CHECK_EQ(cot_op_init(&op), 0);
    CHECK_EQ(cot_object_state((const cot_object *)(const void *)&op), COT_EINVAL);
    cot_object obj;
    CHECK_EQ(cot_object_init(&obj), 0);
    CHECK_EQ(cot_op_state((const cot_op *)(const void *)&obj), COT_EINVAL);

    /* A set-up slot with a NULL actions pointer: refused, nothing changes. */
    CHECK_EQ(cot_op_state(&op), FREED);
    CHECK_EQ(cot_op_await(&op, COT_OP_REQUEST, NULL), COT_EINVAL);
    CHECK_EQ(cot_op_state(&op), FREED);
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    CHECK_EQ(cot_op_callback(&op, NULL), COT_EINVAL);
    CHECK_EQ(cot_op_close_callback(&op, NULL), COT_EINVAL);
    CHECK_EQ(cot_op_outside_resume(&op, 0, NULL), COT_EINVAL);
    CHECK_EQ(cot_op_task_left(&op, NULL), COT_EINVAL);
    CHECK_EQ(cot_op_start_failed(&op, 0, NULL), COT_EINVAL);
    CHECK_EQ(cot_op_state(&op), REQ_AWAITING);

    /* Events the rules forbid: refused with COT_EINVAL, nothing changes. */
    REFUSED(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_EINVAL); /* already suspended */
    REFUSED(cot_op_task_left(&op, &a_), COT_EINVAL);             /* suspended: resume first */
    REFUSED(cot_op_close_callback(&op, &a_), COT_EINVAL);        /* a request never closes */
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, REQ_COMPLETED);
    REFUSED(cot_op_callback(&op, &a_), COT_EINVAL);   /* a request calls back once */
    REFUSED(cot_op_start_failed(&op, 0, &a_), COT_EINVAL); /* nothing was started */
    EXPECT(cot_op_task_left(&op, &a_), COT_ACT_RELEASE, FREED);
    REFUSED(cot_op_callback(&op, &a_), COT_EINVAL);   /* a freed slot */
    REFUSED(cot_op_close_callback(&op, &a_), COT_EINVAL);

    /* A re-init resets a slot (the driver's memory is the driver's). */
    EXPECT(cot_op_await(&op, TIMER, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    CHECK_EQ(cot_op_init(&op), 0);
    CHECK_EQ(cot_op_state(&op), FREED);
}

static void test_object_bad_input(void) {
    unsigned a = UNTOUCHED;
    CHECK_EQ(cot_object_init(NULL), COT_EINVAL);
    CHECK_EQ(cot_object_state(NULL), COT_EINVAL);
    CHECK_EQ(cot_object_await(NULL, 1, &a), COT_EINVAL);
    CHECK_EQ(cot_object_callback(NULL, &a), COT_EINVAL);
    CHECK_EQ(cot_object_close(NULL, &a), COT_EINVAL);
    CHECK_EQ(cot_object_close_callback(NULL, &a), COT_EINVAL);
    CHECK_EQ(cot_object_outside_resume(NULL, 1, &a), COT_EINVAL);
    CHECK_EQ(cot_object_task_left(NULL, 1, &a), COT_EINVAL);
    CHECK_EQ(cot_object_start_failed(NULL, &a), COT_EINVAL);
    CHECK_EQ(a, UNTOUCHED);

    cot_object obj;
    memset(&obj, 0, sizeof obj);
    CHECK_EQ(cot_object_state(&obj), COT_EINVAL);
    OBJ_REFUSED(cot_object_await(&obj, 1, &a_), COT_EINVAL);
    OBJ_REFUSED(cot_object_close(&obj, &a_), COT_EINVAL);
    OBJ_REFUSED(cot_object_callback(&obj, &a_), COT_EINVAL);
    memset(&obj, 0xff, sizeof obj);
    CHECK_EQ(cot_object_state(&obj), COT_EINVAL);
    OBJ_REFUSED(cot_object_await(&obj, 1, &a_), COT_EINVAL);

    CHECK_EQ(cot_object_init(&obj), 0);
    CHECK_EQ(cot_object_state(&obj), OBJ_READY);
    CHECK_EQ(cot_object_await(&obj, 1, NULL), COT_EINVAL);
    CHECK_EQ(cot_object_close(&obj, NULL), COT_EINVAL);
    CHECK_EQ(cot_object_state(&obj), OBJ_READY);
    OBJ_REFUSED(cot_object_callback(&obj, &a_), COT_EINVAL);       /* not started */
    OBJ_REFUSED(cot_object_close_callback(&obj, &a_), COT_EINVAL); /* not closed */
    OBJ_REFUSED(cot_object_start_failed(&obj, &a_), COT_EINVAL);   /* nothing started */

    /* A second waiter: COT_EBUSY; the waiter itself cannot "leave" while
     * suspended (resume it from outside). */
    OBJ_EXPECT(cot_object_await(&obj, 1, &a_), COT_ACT_START_HANDLE, OBJ_AWAITING);
    OBJ_REFUSED(cot_object_await(&obj, 2, &a_), COT_EBUSY);
    OBJ_REFUSED(cot_object_await(&obj, 1, &a_), COT_EBUSY);
    OBJ_REFUSED(cot_object_task_left(&obj, 1, &a_), COT_EINVAL);
    OBJ_EXPECT(cot_object_task_left(&obj, 2, &a_), NOTHING, OBJ_AWAITING);   /* another task */
    OBJ_EXPECT(cot_object_outside_resume(&obj, 2, &a_), NOTHING, OBJ_AWAITING);

    /* Closed: await and close are COT_EBADF, before and after the close callback. */
    OBJ_EXPECT(cot_object_close(&obj, &a_), COT_ACT_CLOSE_HANDLE | COT_ACT_RESUME_CLOSED, OBJ_CLOSING);
    OBJ_REFUSED(cot_object_await(&obj, 1, &a_), COT_EBADF);
    OBJ_REFUSED(cot_object_await(&obj, 2, &a_), COT_EBADF);
    OBJ_REFUSED(cot_object_close(&obj, &a_), COT_EBADF);
    OBJ_REFUSED(cot_object_callback(&obj, &a_), COT_EINVAL);
    OBJ_EXPECT(cot_object_close_callback(&obj, &a_), COT_ACT_RELEASE, OBJ_FREED);
    OBJ_REFUSED(cot_object_close_callback(&obj, &a_), COT_EINVAL);
    OBJ_REFUSED(cot_object_await(&obj, 1, &a_), COT_EBADF);
    OBJ_REFUSED(cot_object_close(&obj, &a_), COT_EBADF);
}

/* Req: Freed -O-> Awaiting -C-> Completed (resume) -O-> Awaiting (the slot
 * is free: start at once) -C-> Completed -Y-> Freed (release). */
static void test_request(void) {
    cot_op op;
    CHECK_EQ(cot_op_init(&op), 0);
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, REQ_COMPLETED);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), NOTHING, REQ_COMPLETED); /* not suspended: no-op */
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, REQ_COMPLETED);
    EXPECT(cot_op_task_left(&op, &a_), COT_ACT_RELEASE, FREED);
    EXPECT(cot_op_task_left(&op, &a_), NOTHING, FREED); /* left already */

    /* Completed, then a handle: the request's memory is free, start at once. */
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, REQ_COMPLETED);
    EXPECT(cot_op_await(&op, TIMER, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, HDL_COMPLETED);
    EXPECT(cot_op_task_left(&op, &a_), COT_ACT_CLOSE_HANDLE, HDL_CLOSING);
    EXPECT(cot_op_close_callback(&op, &a_), COT_ACT_RELEASE, FREED);
}

/* Req Awaiting -R-> Cancelled (cancel) -C-> Freed: the late callback is
 * dropped (no resume) and the memory released; with `keep` the request is
 * left to run (no cancel), its callback dropped all the same. */
static void test_request_cancelled(void) {
    cot_op op;
    CHECK_EQ(cot_op_init(&op), 0);
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), COT_ACT_CANCEL_REQUEST, REQ_CANCELLED);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), NOTHING, REQ_CANCELLED); /* left already */
    EXPECT(cot_op_task_left(&op, &a_), NOTHING, REQ_CANCELLED);         /* the task ends: the callback is still due */
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_DROP_RESULTS | COT_ACT_RELEASE, FREED);
    REFUSED(cot_op_callback(&op, &a_), COT_EINVAL); /* exactly one callback */

    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_outside_resume(&op, 1, &a_), NOTHING, REQ_CANCELLED); /* keep: no cancel */
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_DROP_RESULTS | COT_ACT_RELEASE, FREED);
}

/* Reset: a new await while the old request's callback is pending waits for
 * it (Req Resetting), and starts in that very callback, whose values are
 * dropped; an outside resume meanwhile gives the deferred start up. */
static void test_request_reset(void) {
    cot_op op;
    CHECK_EQ(cot_op_init(&op), 0);
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), COT_ACT_CANCEL_REQUEST, REQ_CANCELLED);
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), NOTHING, REQ_RESETTING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_DROP_RESULTS | COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, REQ_COMPLETED);
    EXPECT(cot_op_task_left(&op, &a_), COT_ACT_RELEASE, FREED);

    /* Deferred: a handle. */
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), COT_ACT_CANCEL_REQUEST, REQ_CANCELLED);
    EXPECT(cot_op_await(&op, TIMER, &a_), NOTHING, REQ_RESETTING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_DROP_RESULTS | COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), COT_ACT_CLOSE_HANDLE, HDL_CLOSING);
    EXPECT(cot_op_close_callback(&op, &a_), COT_ACT_RELEASE, FREED);

    /* Given up: R while resetting; the callback then only releases. */
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), COT_ACT_CANCEL_REQUEST, REQ_CANCELLED);
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), NOTHING, REQ_RESETTING);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), NOTHING, REQ_CANCELLED);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_DROP_RESULTS | COT_ACT_RELEASE, FREED);
}

/* Hdl Completed + O of the same type: re-armed, no close; the task leaving
 * a completed handle closes it, released at the close callback. */
static void test_handle_rearm(void) {
    cot_op op;
    CHECK_EQ(cot_op_init(&op), 0);
    EXPECT(cot_op_await(&op, TIMER, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, HDL_COMPLETED);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_DROP_RESULTS, HDL_COMPLETED); /* a 2nd tick before the next await */
    EXPECT(cot_op_await(&op, TIMER, &a_), COT_ACT_REARM_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, HDL_COMPLETED);
    EXPECT(cot_op_await(&op, TIMER, &a_), COT_ACT_REARM_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, HDL_COMPLETED);
    EXPECT(cot_op_task_left(&op, &a_), COT_ACT_CLOSE_HANDLE, HDL_CLOSING);
    EXPECT(cot_op_task_left(&op, &a_), NOTHING, HDL_CLOSING);
    REFUSED(cot_op_callback(&op, &a_), COT_EINVAL); /* closed: no more callbacks */
    EXPECT(cot_op_close_callback(&op, &a_), COT_ACT_RELEASE, FREED);
    REFUSED(cot_op_close_callback(&op, &a_), COT_EINVAL); /* one close callback */
}

/* Hdl Completed + O of another type (or a request): close, then start the
 * deferred operation at the close callback, in the same memory. */
static void test_handle_other_type(void) {
    cot_op op;
    CHECK_EQ(cot_op_init(&op), 0);
    EXPECT(cot_op_await(&op, TIMER, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, HDL_COMPLETED);
    EXPECT(cot_op_await(&op, IDLE, &a_), COT_ACT_CLOSE_HANDLE, HDL_RESETTING_AFTER_CLOSE);
    REFUSED(cot_op_await(&op, IDLE, &a_), COT_EINVAL); /* suspended */
    EXPECT(cot_op_close_callback(&op, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, HDL_COMPLETED);
    /* The open handle is an IDLE now: the same type re-arms... */
    EXPECT(cot_op_await(&op, IDLE, &a_), COT_ACT_REARM_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, HDL_COMPLETED);
    /* ...and a request waits for the close too. */
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_CLOSE_HANDLE, HDL_RESETTING_AFTER_CLOSE);
    EXPECT(cot_op_close_callback(&op, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, REQ_COMPLETED);
    EXPECT(cot_op_task_left(&op, &a_), COT_ACT_RELEASE, FREED);

    /* Given up: R while resetting after close: the close callback releases. */
    EXPECT(cot_op_await(&op, TIMER, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_RESUME, HDL_COMPLETED);
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_CLOSE_HANDLE, HDL_RESETTING_AFTER_CLOSE);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), NOTHING, HDL_CLOSING);
    EXPECT(cot_op_close_callback(&op, &a_), COT_ACT_RELEASE, FREED);
}

/* Hdl Awaiting + R: closed, or kept for a cleanup callback (then closed). */
static void test_handle_cancelled(void) {
    cot_op op;
    CHECK_EQ(cot_op_init(&op), 0);
    EXPECT(cot_op_await(&op, TIMER, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), COT_ACT_CLOSE_HANDLE, HDL_CLOSING);
    EXPECT(cot_op_await(&op, TIMER, &a_), NOTHING, HDL_RESETTING_AFTER_CLOSE); /* never re-armed once closing */
    EXPECT(cot_op_close_callback(&op, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_outside_resume(&op, 1, &a_), NOTHING, HDL_CANCELLED);
    EXPECT(cot_op_await(&op, TIMER, &a_), NOTHING, HDL_RESETTING_AFTER_CANCEL);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_DROP_RESULTS | COT_ACT_CLOSE_HANDLE, HDL_RESETTING_AFTER_CLOSE);
    EXPECT(cot_op_close_callback(&op, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_outside_resume(&op, 1, &a_), NOTHING, HDL_CANCELLED);
    EXPECT(cot_op_task_left(&op, &a_), NOTHING, HDL_CANCELLED);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_DROP_RESULTS | COT_ACT_CLOSE_HANDLE, HDL_CLOSING);
    EXPECT(cot_op_close_callback(&op, &a_), COT_ACT_RELEASE, FREED);
}

/* A start that failed synchronously: the await returns the error itself, or
 * a deferred start resumes the task with it (RESUME_FAILED). */
static void test_start_failed(void) {
    cot_op op;
    CHECK_EQ(cot_op_init(&op), 0);
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_start_failed(&op, 0, &a_), NOTHING, REQ_COMPLETED);
    EXPECT(cot_op_task_left(&op, &a_), COT_ACT_RELEASE, FREED);

    EXPECT(cot_op_await(&op, TIMER, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_start_failed(&op, 0, &a_), COT_ACT_RELEASE, FREED); /* init failed */
    EXPECT(cot_op_await(&op, TIMER, &a_), COT_ACT_START_HANDLE, HDL_AWAITING);
    EXPECT(cot_op_start_failed(&op, 1, &a_), NOTHING, HDL_COMPLETED); /* start failed, handle open */
    EXPECT(cot_op_task_left(&op, &a_), COT_ACT_CLOSE_HANDLE, HDL_CLOSING);
    EXPECT(cot_op_close_callback(&op, &a_), COT_ACT_RELEASE, FREED);

    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_outside_resume(&op, 0, &a_), COT_ACT_CANCEL_REQUEST, REQ_CANCELLED);
    EXPECT(cot_op_await(&op, COT_OP_REQUEST, &a_), NOTHING, REQ_RESETTING);
    EXPECT(cot_op_callback(&op, &a_), COT_ACT_DROP_RESULTS | COT_ACT_START_REQUEST, REQ_AWAITING);
    EXPECT(cot_op_start_failed(&op, 0, &a_), COT_ACT_RESUME_FAILED, REQ_COMPLETED);
    EXPECT(cot_op_task_left(&op, &a_), COT_ACT_RELEASE, FREED);
}

/* Objects: one waiter, resumed by the callback, re-awaiting without a
 * restart, stopped by an outside resume or when its task leaves; closed while
 * a task waits: RESUME_CLOSED, then RELEASE at the close callback. */
static void test_object(void) {
    cot_object obj;
    CHECK_EQ(cot_object_init(&obj), 0);
    OBJ_EXPECT(cot_object_await(&obj, 1, &a_), COT_ACT_START_HANDLE, OBJ_AWAITING);
    OBJ_EXPECT(cot_object_callback(&obj, &a_), COT_ACT_RESUME, OBJ_COMPLETED);
    OBJ_EXPECT(cot_object_await(&obj, 1, &a_), NOTHING, OBJ_AWAITING); /* still started */
    OBJ_EXPECT(cot_object_outside_resume(&obj, 1, &a_), COT_ACT_STOP_HANDLE, OBJ_READY);
    OBJ_EXPECT(cot_object_await(&obj, 2, &a_), COT_ACT_START_HANDLE, OBJ_AWAITING); /* free for another task */
    OBJ_EXPECT(cot_object_callback(&obj, &a_), COT_ACT_RESUME, OBJ_COMPLETED);
    OBJ_EXPECT(cot_object_task_left(&obj, 1, &a_), NOTHING, OBJ_COMPLETED); /* not the holder */
    OBJ_EXPECT(cot_object_task_left(&obj, 2, &a_), COT_ACT_STOP_HANDLE, OBJ_READY);

    OBJ_EXPECT(cot_object_await(&obj, 1, &a_), COT_ACT_START_HANDLE, OBJ_AWAITING);
    OBJ_REFUSED(cot_object_await(&obj, 2, &a_), COT_EBUSY);
    OBJ_EXPECT(cot_object_close(&obj, &a_), COT_ACT_CLOSE_HANDLE | COT_ACT_RESUME_CLOSED, OBJ_CLOSING);
    OBJ_EXPECT(cot_object_task_left(&obj, 1, &a_), NOTHING, OBJ_CLOSING);
    OBJ_EXPECT(cot_object_outside_resume(&obj, 1, &a_), NOTHING, OBJ_CLOSING);
    OBJ_REFUSED(cot_object_await(&obj, 1, &a_), COT_EBADF);
    OBJ_EXPECT(cot_object_close_callback(&obj, &a_), COT_ACT_RELEASE, OBJ_FREED);

    /* Closed with nobody waiting: no resume. */
    CHECK_EQ(cot_object_init(&obj), 0);
    OBJ_EXPECT(cot_object_close(&obj, &a_), COT_ACT_CLOSE_HANDLE, OBJ_CLOSING);
    OBJ_EXPECT(cot_object_close_callback(&obj, &a_), COT_ACT_RELEASE, OBJ_FREED);

    /* A start that failed: back to ready, the await returns the error. */
    CHECK_EQ(cot_object_init(&obj), 0);
    OBJ_EXPECT(cot_object_await(&obj, 1, &a_), COT_ACT_START_HANDLE, OBJ_AWAITING);
    OBJ_EXPECT(cot_object_start_failed(&obj, &a_), NOTHING, OBJ_READY);
    OBJ_REFUSED(cot_object_start_failed(&obj, &a_), COT_EINVAL);
}

int main(void) {
    test_layout();
    test_op_bad_input();
    test_object_bad_input();
    test_request();
    test_request_cancelled();
    test_request_reset();
    test_handle_rearm();
    test_handle_other_type();
    test_handle_cancelled();
    test_start_failed();
    test_object();
    puts("test_op ok");
    return 0;
}
