/* The op ABI (cot_op, cot_object) driving REAL libuv (Debian's libuv1-dev):
 * "tasks" are simulated as small structs (a resumed counter, a slot: a cot_op
 * next to a union of libuv request/handle memory), and this file is the
 * driver: it reports what libuv does and performs the actions returned, in
 * bit order (lowest first; a resume last):
 *   START_REQUEST  -> uv_fs_open / uv_fs_read (thread pool), uv_tcp_connect
 *   CANCEL_REQUEST -> uv_cancel
 *   START_HANDLE   -> uv_timer_init + uv_timer_start (object: uv_read_start)
 *   REARM_HANDLE   -> uv_timer_start again
 *   STOP_HANDLE    -> uv_read_stop (objects)
 *   CLOSE_HANDLE   -> uv_close (its close callback reports the F event)
 *   RELEASE        -> checks that libuv holds nothing, then frees the memory
 *   RESUME*        -> the task runs its continuation (it may await again).
 * Every scenario checks the exact sequence of events and actions, and the
 * invariants of the machines (rust/src/op): each started request called back exactly
 * once, each closed handle's close callback exactly once (never inside
 * uv_close), a task resumed at most once per await and never by an operation
 * it left, no memory released while libuv holds it; uv_loop_close succeeds
 * after each scenario, and ASan (the _asan variant) sees no bad access and
 * no leak. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "../check.h"

/* cot_op_state / cot_object_state values (include/cothread.h). */
enum { FREED = 0, REQ_AWAITING = 1, REQ_COMPLETED = 2, REQ_CANCELLED = 3, REQ_RESETTING = 4 };
enum { HDL_AWAITING = 5, HDL_COMPLETED = 6, HDL_CLOSING = 9, HDL_RESETTING_AFTER_CLOSE = 10 };
enum { OBJ_READY = 0, OBJ_AWAITING = 1, OBJ_COMPLETED = 2, OBJ_CLOSING = 3, OBJ_FREED = 4 };

#define NOTHING 0u
#define ALL_ACTIONS ((COT_ACT_RESUME_CLOSED << 1) - 1)
#define RESUMES (COT_ACT_RESUME | COT_ACT_RESUME_FAILED | COT_ACT_RESUME_CLOSED)

static const char CONTENT[] = "hello from the thread pool";
static char path[] = "/tmp/cot_libuv_opsXXXXXX";

/* ------------------------------------------------------------------------ */
/* Global bookkeeping                                                       */
/* ------------------------------------------------------------------------ */

static struct {
    int req_started, req_callbacks;   /* slot requests */
    int closes, close_callbacks;      /* every uv_close, and its callback */
    int released, resumes;
} g;

/* The events of one scenario: O C F R Y S for slots, o c x f r y for
 * objects (x = close), with the actions each answered. */
typedef struct {
    char ev;
    unsigned acts;
} entry;
static entry events[64];
static int nevents;

static void log_event(char ev, unsigned acts) {
    CHECK(nevents < 64);
    events[nevents].ev = ev;
    events[nevents].acts = acts;
    nevents++;
}

static void print_log(void) {
    for (int i = 0; i < nevents; i++) fprintf(stderr, "  %c 0x%x\n", events[i].ev, events[i].acts);
}

/* Checks the log against `evs` (one letter per event) and `acts`, then clears it. */
static void expect_log(const char *scenario, const char *evs, const unsigned *acts) {
    int n = (int)strlen(evs), ok = n == nevents;
    for (int i = 0; ok && i < n; i++) ok = events[i].ev == evs[i] && events[i].acts == acts[i];
    if (!ok) {
        fprintf(stderr, "%s: expected events %s, got:\n", scenario, evs);
        print_log();
        exit(1);
    }
    nevents = 0;
}
#define EXPECT_LOG(scenario, evs, ...) expect_log(scenario, evs, (const unsigned[]){__VA_ARGS__})

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A driver-owned handle (listener, peer, helper timer): closed once, counted. */
static void driver_close_cb(uv_handle_t *h) {
    (void)h;
    g.close_callbacks++;
}
static void driver_close(uv_handle_t *h) {
    CHECK(!uv_is_closing(h));
    g.closes++;
    uv_close(h, driver_close_cb);
}

static void finish_loop(uv_loop_t *loop) {
    CHECK_EQ(uv_run(loop, UV_RUN_DEFAULT), 0);
    CHECK_EQ(uv_loop_close(loop), 0); /* nothing left active or closing */
    CHECK_EQ(g.req_started, g.req_callbacks);
    CHECK_EQ(g.closes, g.close_callbacks);
}

/* ------------------------------------------------------------------------ */
/* Tasks and their slots                                                    */
/* ------------------------------------------------------------------------ */

enum opkind { OP_NONE, OP_FS_OPEN, OP_FS_READ, OP_TIMER, OP_CONNECT };
enum how { HOW_RESUMED = 1, HOW_FAILED, HOW_CLOSED, HOW_CANCELLED };

/* What a task awaits: the parameters of the start (maybe deferred). */
typedef struct {
    enum opkind kind;
    uv_file fd;                /* OP_FS_READ */
    uint64_t timeout;          /* OP_TIMER */
    uv_tcp_t *tcp;             /* OP_CONNECT */
    struct sockaddr_in addr;   /* OP_CONNECT */
} params;

/* The slot's memory: whatever request or handle the task may await. */
typedef union {
    uv_req_t req;
    uv_fs_t fs;
    uv_connect_t connect;
    uv_handle_t handle;
    uv_timer_t timer;
} slot_mem;

typedef struct task task;
typedef void (*resume_fn)(task *t, enum how how);

struct task {
    const char *name;
    uv_loop_t *loop;
    resume_fn on_resume;
    int stage;

    /* The task as the scheduler would see it. */
    int suspended;      /* waiting on its slot or an object */
    unsigned await_gen; /* bumped by every await and every outside resume */
    int resumed, cancelled;

    /* The slot. */
    cot_op op;
    slot_mem *mem;      /* malloc'd at a start, freed at RELEASE */
    params next, cur;   /* awaited / what runs in mem */
    unsigned op_gen;    /* the await_gen of the await the running operation serves */
    int req_pending;    /* libuv holds mem for a request until its callback */
    int handle_open;    /* libuv holds mem for a handle until its close callback */
    int closing, in_close;
    int cancel_rc;
    int handle_inits, handle_callbacks, rearms, dropped, released;

    /* Results. */
    ssize_t result;
    char buf[64];
};

static void slot_perform(task *t, unsigned acts);

static unsigned kind_of(const params *p) {
    return p->kind == OP_TIMER ? (unsigned)UV_TIMER : COT_OP_REQUEST;
}

/* The task awaits in its slot (O). */
static void task_await(task *t, params p) {
    CHECK(!t->suspended);
    t->next = p;
    t->suspended = 1;
    t->await_gen++;
    unsigned a = 0;
    CHECK_EQ(cot_op_await(&t->op, kind_of(&p), &a), 0);
    log_event('O', a);
    slot_perform(t, a);
}

/* The task is resumed from outside (R): it left whatever it waited on. */
static void task_outside_resume(task *t, int keep) {
    CHECK(t->suspended);
    t->suspended = 0;
    t->await_gen++; /* anything started for the old await may no longer resume it */
    t->cancelled++;
    unsigned a = 0;
    CHECK_EQ(cot_op_outside_resume(&t->op, keep, &a), 0);
    log_event('R', a);
    CHECK_EQ(a & RESUMES, 0);
    slot_perform(t, a);
    t->on_resume(t, HOW_CANCELLED);
}

/* The task goes on elsewhere, or ends (Y). */
static void task_leave(task *t) {
    CHECK(!t->suspended);
    unsigned a = 0;
    CHECK_EQ(cot_op_task_left(&t->op, &a), 0);
    log_event('Y', a);
    slot_perform(t, a);
}

static void resume_task(task *t, unsigned gen, enum how how) {
    CHECK(t->suspended);           /* at most once per await */
    CHECK_EQ(gen, t->await_gen);   /* never by an operation it left */
    t->suspended = 0;
    t->resumed++;
    g.resumes++;
    t->on_resume(t, how);
}

static void fs_cb(uv_fs_t *req);
static void connect_cb(uv_connect_t *req, int status);
static void timer_cb(uv_timer_t *timer);
static void slot_close_cb(uv_handle_t *h);

/* The memory for a start: must be the driver's (libuv holds nothing in it). */
static slot_mem *slot_memory(task *t) {
    CHECK(!t->req_pending && !t->handle_open && !t->closing);
    if (!t->mem) {
        t->mem = malloc(sizeof *t->mem);
        CHECK(t->mem != NULL);
    }
    return t->mem;
}

static void start_request(task *t) {
    slot_mem *m = slot_memory(t);
    t->cur = t->next;
    t->op_gen = t->await_gen;
    int rc;
    switch (t->cur.kind) {
    case OP_FS_OPEN:
        rc = uv_fs_open(t->loop, &m->fs, path, O_RDONLY, 0, fs_cb);
        break;
    case OP_FS_READ: {
        memset(t->buf, 0, sizeof t->buf);
        uv_buf_t b = uv_buf_init(t->buf, sizeof t->buf - 1);
        rc = uv_fs_read(t->loop, &m->fs, t->cur.fd, &b, 1, 0, fs_cb);
        break;
    }
    case OP_CONNECT:
        rc = uv_tcp_connect(&m->connect, t->cur.tcp, (const struct sockaddr *)&t->cur.addr, connect_cb);
        break;
    default:
        CHECK(!"not a request");
        return;
    }
    CHECK_EQ(rc, 0); /* (a failure would be reported with cot_op_start_failed) */
    m->req.data = t;
    t->req_pending = 1;
    g.req_started++;
}

static void start_handle(task *t) {
    slot_mem *m = slot_memory(t);
    t->cur = t->next;
    t->op_gen = t->await_gen;
    CHECK_EQ(t->cur.kind, OP_TIMER);
    CHECK_EQ(uv_timer_init(t->loop, &m->timer), 0);
    m->timer.data = t;
    t->handle_open = 1;
    t->handle_inits++;
    CHECK_EQ(uv_timer_start(&m->timer, timer_cb, t->cur.timeout, 0), 0);
}

static void slot_perform(task *t, unsigned acts) {
    CHECK_EQ(acts & ~ALL_ACTIONS, 0);
    CHECK((acts & RESUMES) == 0 || ((acts & RESUMES) & ((acts & RESUMES) - 1)) == 0); /* one resume */
    for (unsigned bit = 1; bit <= COT_ACT_RESUME_CLOSED; bit <<= 1) {
        if (!(acts & bit)) continue;
        switch (bit) {
        case COT_ACT_DROP_RESULTS:
            t->dropped++;
            if (t->cur.kind == OP_FS_OPEN && t->result >= 0) { /* a late open: close its fd */
                uv_fs_t c;
                CHECK_EQ(uv_fs_close(NULL, &c, (uv_file)t->result, NULL), 0);
                uv_fs_req_cleanup(&c);
            }
            break;
        case COT_ACT_CANCEL_REQUEST:
            CHECK(t->req_pending);
            t->cancel_rc = uv_cancel(&t->mem->req);
            break;
        case COT_ACT_STOP_HANDLE:
            CHECK(!"STOP_HANDLE is for objects");
            break;
        case COT_ACT_CLOSE_HANDLE:
            CHECK(t->handle_open && !t->closing); /* uv_close at most once */
            t->closing = 1;
            t->in_close = 1;
            g.closes++;
            uv_close(&t->mem->handle, slot_close_cb);
            t->in_close = 0;
            break;
        case COT_ACT_START_REQUEST:
            start_request(t);
            break;
        case COT_ACT_START_HANDLE:
            start_handle(t);
            break;
        case COT_ACT_REARM_HANDLE:
            CHECK(t->handle_open && !t->closing);
            CHECK_EQ(t->next.kind, OP_TIMER);
            t->cur = t->next;
            t->op_gen = t->await_gen;
            t->rearms++;
            CHECK_EQ(uv_timer_start(&t->mem->timer, timer_cb, t->cur.timeout, 0), 0);
            break;
        case COT_ACT_RELEASE:
            /* Nothing released early: no request callback nor close callback due. */
            CHECK(t->mem != NULL);
            CHECK(!t->req_pending && !t->handle_open && !t->closing);
            memset(t->mem, 0x5a, sizeof *t->mem);
            free(t->mem);
            t->mem = NULL;
            t->released++;
            g.released++;
            break;
        case COT_ACT_RESUME:
            resume_task(t, t->op_gen, HOW_RESUMED);
            break;
        case COT_ACT_RESUME_FAILED:
            resume_task(t, t->op_gen, HOW_FAILED);
            break;
        case COT_ACT_RESUME_CLOSED:
            CHECK(!"RESUME_CLOSED is for objects");
            break;
        }
    }
}

/* C: a request's callback. */
static void slot_request_done(task *t, ssize_t result) {
    CHECK(t->req_pending); /* exactly once per started request */
    t->req_pending = 0;
    g.req_callbacks++;
    t->result = result;
    unsigned a = 0;
    CHECK_EQ(cot_op_callback(&t->op, &a), 0);
    log_event('C', a);
    slot_perform(t, a); /* may free or reuse the memory: the caller no longer touches it */
}

static void fs_cb(uv_fs_t *req) {
    task *t = req->data;
    ssize_t result = req->result;
    uv_fs_req_cleanup(req);
    slot_request_done(t, result);
}

static void connect_cb(uv_connect_t *req, int status) {
    slot_request_done(req->data, status);
}

/* C: a handle's callback. */
static void timer_cb(uv_timer_t *timer) {
    task *t = timer->data;
    CHECK(t->handle_open && !t->closing);
    t->handle_callbacks++;
    unsigned a = 0;
    CHECK_EQ(cot_op_callback(&t->op, &a), 0);
    log_event('C', a);
    slot_perform(t, a);
}

/* F: the close callback. */
static void slot_close_cb(uv_handle_t *h) {
    task *t = h->data;
    CHECK(t->closing && !t->in_close); /* once, and never inside uv_close */
    t->closing = 0;
    t->handle_open = 0;
    g.close_callbacks++;
    unsigned a = 0;
    CHECK_EQ(cot_op_close_callback(&t->op, &a), 0);
    log_event('F', a);
    slot_perform(t, a);
}

static void task_init(task *t, const char *name, uv_loop_t *loop, resume_fn on_resume) {
    memset(t, 0, sizeof *t);
    t->name = name;
    t->loop = loop;
    t->on_resume = on_resume;
    CHECK_EQ(cot_op_init(&t->op), 0);
}

/* At the end of a scenario: the slot is Freed and its memory released. */
static void task_done(task *t) {
    CHECK(!t->suspended);
    CHECK_EQ(cot_op_state(&t->op), FREED);
    CHECK(t->mem == NULL);
    CHECK(!t->req_pending && !t->handle_open && !t->closing);
}

static params fs_open_params(void) {
    params p = {.kind = OP_FS_OPEN};
    return p;
}
static params fs_read_params(uv_file fd) {
    params p = {.kind = OP_FS_READ, .fd = fd};
    return p;
}
static params timer_params(uint64_t ms) {
    params p = {.kind = OP_TIMER, .timeout = ms};
    return p;
}

static uv_file open_file(void) {
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    return fd;
}

/* ------------------------------------------------------------------------ */
/* A thread pool kept busy (UV_THREADPOOL_SIZE=1), so a request stays queued */
/* ------------------------------------------------------------------------ */

static uv_work_t blocker;
static atomic_int blocker_started, blocker_release;
static int blocker_after;

static void block_work(uv_work_t *w) {
    (void)w;
    atomic_store(&blocker_started, 1);
    while (!atomic_load(&blocker_release)) sleep_ms(1);
}
static void block_after(uv_work_t *w, int status) {
    (void)w;
    CHECK_EQ(status, 0);
    blocker_after++;
}
static void block_pool(uv_loop_t *loop) {
    atomic_store(&blocker_started, 0);
    atomic_store(&blocker_release, 0);
    blocker_after = 0;
    CHECK_EQ(uv_queue_work(loop, &blocker, block_work, block_after), 0);
    while (!atomic_load(&blocker_started)) sleep_ms(1);
}
static void unblock_pool(void) {
    atomic_store(&blocker_release, 1);
}

/* ------------------------------------------------------------------------ */
/* 1. uv_fs_open + uv_fs_read, not cancelled: the task gets the bytes        */
/* ------------------------------------------------------------------------ */

static uv_file s1_fd = -1;

static void s1_resume(task *t, enum how how) {
    CHECK_EQ(how, HOW_RESUMED);
    switch (t->stage++) {
    case 0: /* opened: read in the same slot (Req Completed + O: start at once) */
        CHECK(t->result >= 0);
        s1_fd = (uv_file)t->result;
        CHECK_EQ(cot_op_state(&t->op), REQ_COMPLETED);
        task_await(t, fs_read_params(s1_fd));
        CHECK_EQ(cot_op_state(&t->op), REQ_AWAITING);
        break;
    case 1: /* read */
        CHECK_EQ(t->result, (ssize_t)strlen(CONTENT));
        CHECK(strcmp(t->buf, CONTENT) == 0);
        task_leave(t); /* Req Completed + Y: release */
        break;
    default:
        CHECK(!"resumed too often");
    }
}

static void scenario_read(void) {
    uv_loop_t loop;
    CHECK_EQ(uv_loop_init(&loop), 0);
    task t;
    task_init(&t, "reader", &loop, s1_resume);
    task_await(&t, fs_open_params());
    CHECK(t.suspended);
    finish_loop(&loop);
    CHECK_EQ(t.resumed, 2);
    CHECK_EQ(t.released, 1);
    CHECK_EQ(t.dropped, 0);
    task_done(&t);
    EXPECT_LOG("read", "OCOCY",
               COT_ACT_START_REQUEST, COT_ACT_RESUME,
               COT_ACT_START_REQUEST, COT_ACT_RESUME,
               COT_ACT_RELEASE);
    CHECK_EQ(close(s1_fd), 0);
}

/* ------------------------------------------------------------------------ */
/* 2. uv_fs_read cancelled while queued: callback UV_ECANCELED, dropped       */
/* ------------------------------------------------------------------------ */

static void s2_resume(task *t, enum how how) {
    /* Only the outside resume comes; the task then ends (Y in Req Cancelled:
     * nothing, the callback is still due). */
    CHECK_EQ(how, HOW_CANCELLED);
    CHECK_EQ(t->stage++, 0);
    task_leave(t);
}

static void scenario_read_cancelled(void) {
    uv_loop_t loop;
    CHECK_EQ(uv_loop_init(&loop), 0);
    uv_file fd = open_file();
    block_pool(&loop);
    task t;
    task_init(&t, "cancelled reader", &loop, s2_resume);
    task_await(&t, fs_read_params(fd));
    CHECK_EQ(cot_op_state(&t.op), REQ_AWAITING);
    task_outside_resume(&t, 0); /* CANCEL_REQUEST: uv_cancel on the queued read */
    CHECK_EQ(t.cancel_rc, 0);
    CHECK_EQ(cot_op_state(&t.op), REQ_CANCELLED);
    CHECK(t.mem != NULL); /* libuv still holds it */
    unblock_pool();
    finish_loop(&loop);
    CHECK_EQ(t.result, UV_ECANCELED); /* the callback came, once, and was dropped */
    CHECK_EQ(t.resumed, 0);
    CHECK_EQ(t.cancelled, 1);
    CHECK_EQ(t.dropped, 1);
    CHECK_EQ(t.released, 1);
    CHECK_EQ(blocker_after, 1);
    task_done(&t);
    EXPECT_LOG("read cancelled", "ORYC",
               COT_ACT_START_REQUEST, COT_ACT_CANCEL_REQUEST, NOTHING,
               COT_ACT_DROP_RESULTS | COT_ACT_RELEASE);
    CHECK_EQ(close(fd), 0);
}

/* 2b. Same, but the task awaits a new read right away (Req Resetting): it
 * starts in the very UV_ECANCELED callback, in the same memory. */
static uv_file s2b_fd;

static void s2b_resume(task *t, enum how how) {
    switch (t->stage++) {
    case 0:
        CHECK_EQ(how, HOW_CANCELLED);
        task_await(t, fs_read_params(s2b_fd)); /* deferred */
        CHECK_EQ(cot_op_state(&t->op), REQ_RESETTING);
        break;
    case 1:
        CHECK_EQ(how, HOW_RESUMED);
        CHECK_EQ(t->result, (ssize_t)strlen(CONTENT));
        CHECK(strcmp(t->buf, CONTENT) == 0);
        task_leave(t);
        break;
    default:
        CHECK(!"resumed too often");
    }
}

static void scenario_read_cancelled_reset(void) {
    uv_loop_t loop;
    CHECK_EQ(uv_loop_init(&loop), 0);
    s2b_fd = open_file();
    block_pool(&loop);
    task t;
    task_init(&t, "reset reader", &loop, s2b_resume);
    task_await(&t, fs_read_params(s2b_fd));
    task_outside_resume(&t, 0);
    CHECK_EQ(t.cancel_rc, 0);
    CHECK(t.suspended); /* on the deferred read */
    CHECK_EQ(g.req_started, g.req_callbacks + 1); /* not started yet */
    unblock_pool();
    finish_loop(&loop);
    CHECK_EQ(t.resumed, 1);
    CHECK_EQ(t.dropped, 1);
    CHECK_EQ(t.released, 1);
    task_done(&t);
    EXPECT_LOG("read cancelled, reset", "OROCCY",
               COT_ACT_START_REQUEST, COT_ACT_CANCEL_REQUEST, NOTHING,
               COT_ACT_DROP_RESULTS | COT_ACT_START_REQUEST,
               COT_ACT_RESUME, COT_ACT_RELEASE);
    CHECK_EQ(close(s2b_fd), 0);
}

/* ------------------------------------------------------------------------ */
/* 3. A uv_timer re-armed, then closed when the task leaves                  */
/* ------------------------------------------------------------------------ */

static void s3_resume(task *t, enum how how) {
    CHECK_EQ(how, HOW_RESUMED);
    CHECK_EQ(cot_op_state(&t->op), HDL_COMPLETED);
    switch (t->stage++) {
    case 0: /* the same handle type again: re-armed, no close */
        task_await(t, timer_params(2));
        CHECK_EQ(cot_op_state(&t->op), HDL_AWAITING);
        CHECK(!t->closing);
        break;
    case 1: /* leaves: closed, released at the close callback */
        task_leave(t);
        CHECK_EQ(cot_op_state(&t->op), HDL_CLOSING);
        CHECK(t->closing && t->mem != NULL);
        break;
    default:
        CHECK(!"resumed too often");
    }
}

static void scenario_timer_rearm(void) {
    uv_loop_t loop;
    CHECK_EQ(uv_loop_init(&loop), 0);
    task t;
    task_init(&t, "sleeper", &loop, s3_resume);
    task_await(&t, timer_params(1));
    finish_loop(&loop);
    CHECK_EQ(t.resumed, 2);
    CHECK_EQ(t.handle_inits, 1);
    CHECK_EQ(t.handle_callbacks, 2);
    CHECK_EQ(t.rearms, 1);
    CHECK_EQ(t.released, 1);
    task_done(&t);
    EXPECT_LOG("timer re-armed", "OCOCYF",
               COT_ACT_START_HANDLE, COT_ACT_RESUME,
               COT_ACT_REARM_HANDLE, COT_ACT_RESUME,
               COT_ACT_CLOSE_HANDLE, COT_ACT_RELEASE);
}

/* 3b. One slot, a timer then a read: the read waits for the timer's close
 * callback (Resetting-after-close) and starts there, in the same memory; a
 * long timer resumed from outside is closed (it never fires), and the read
 * awaited meanwhile starts at its close callback. */
static uv_file s3b_fd;
static task *s3b_task;
static uv_timer_t s3b_interrupter;

static void s3b_interrupt(uv_timer_t *h) {
    CHECK_EQ(cot_op_state(&s3b_task->op), HDL_AWAITING);
    task_outside_resume(s3b_task, 0);
    driver_close((uv_handle_t *)h);
}

static void s3b_resume(task *t, enum how how) {
    switch (t->stage++) {
    case 0: /* the timer fired; now a request: close first */
        CHECK_EQ(how, HOW_RESUMED);
        task_await(t, fs_read_params(s3b_fd));
        CHECK_EQ(cot_op_state(&t->op), HDL_RESETTING_AFTER_CLOSE);
        CHECK_EQ(g.req_started, g.req_callbacks); /* deferred, not started */
        break;
    case 1: /* read; now a 10 s timer in the memory the read used */
        CHECK_EQ(how, HOW_RESUMED);
        CHECK_EQ(t->result, (ssize_t)strlen(CONTENT));
        task_await(t, timer_params(10000));
        CHECK_EQ(cot_op_state(&t->op), HDL_AWAITING);
        CHECK_EQ(uv_timer_init(t->loop, &s3b_interrupter), 0);
        CHECK_EQ(uv_timer_start(&s3b_interrupter, s3b_interrupt, 1, 0), 0);
        break;
    case 2: /* resumed from outside: the timer closes; read meanwhile */
        CHECK_EQ(how, HOW_CANCELLED);
        CHECK_EQ(cot_op_state(&t->op), HDL_CLOSING);
        task_await(t, fs_read_params(s3b_fd));
        CHECK_EQ(cot_op_state(&t->op), HDL_RESETTING_AFTER_CLOSE);
        break;
    case 3:
        CHECK_EQ(how, HOW_RESUMED);
        CHECK_EQ(t->result, (ssize_t)strlen(CONTENT));
        task_leave(t);
        break;
    default:
        CHECK(!"resumed too often");
    }
}

static void scenario_timer_then_read(void) {
    uv_loop_t loop;
    CHECK_EQ(uv_loop_init(&loop), 0);
    s3b_fd = open_file();
    task t;
    task_init(&t, "mixed", &loop, s3b_resume);
    s3b_task = &t;
    uint64_t t0 = uv_hrtime();
    task_await(&t, timer_params(1));
    finish_loop(&loop);
    CHECK(uv_hrtime() - t0 < 5000000000u); /* the 10 s timer did not hold the loop */
    CHECK_EQ(t.resumed, 3);
    CHECK_EQ(t.cancelled, 1);
    CHECK_EQ(t.handle_inits, 2);
    CHECK_EQ(t.handle_callbacks, 1); /* the long timer never fired */
    CHECK_EQ(t.released, 1);
    task_done(&t);
    EXPECT_LOG("timer then read", "OCOFCOROFCY",
               COT_ACT_START_HANDLE, COT_ACT_RESUME,
               COT_ACT_CLOSE_HANDLE, COT_ACT_START_REQUEST, COT_ACT_RESUME,
               COT_ACT_START_HANDLE, COT_ACT_CLOSE_HANDLE,
               NOTHING, COT_ACT_START_REQUEST, COT_ACT_RESUME,
               COT_ACT_RELEASE);
    CHECK_EQ(close(s3b_fd), 0);
}

/* ------------------------------------------------------------------------ */
/* Objects: a stream's read                                                 */
/* ------------------------------------------------------------------------ */

typedef struct {
    cot_object obj;
    uv_tcp_t *tcp;      /* malloc'd; freed at RELEASE */
    task *waiter;       /* who the machine will resume */
    unsigned gen;       /* the waiter's await_gen */
    int reading, closing, in_close, close_callbacks, released, starts, stops;
    char pending[64];   /* the last read, for the resumed task */
    size_t npending;
} object;

static void obj_perform(object *o, unsigned acts);

static uint64_t token(task *t) {
    return (uint64_t)(uintptr_t)t;
}

/* Returns the await's result: 0 (suspended), COT_EBUSY, COT_EBADF. */
static int obj_await(object *o, task *t) {
    CHECK(!t->suspended);
    unsigned a = 0xdeadbeefu;
    int rc = cot_object_await(&o->obj, token(t), &a);
    if (rc != 0) {
        CHECK_EQ(a, 0xdeadbeefu);
        return rc;
    }
    t->suspended = 1;
    t->await_gen++;
    o->waiter = t;
    o->gen = t->await_gen;
    log_event('o', a);
    obj_perform(o, a);
    return 0;
}

static void obj_task_left(object *o, task *t) {
    unsigned a = 0;
    CHECK_EQ(cot_object_task_left(&o->obj, token(t), &a), 0);
    log_event('y', a);
    obj_perform(o, a);
}

static void obj_outside_resume(object *o, task *t) {
    unsigned a = 0;
    CHECK_EQ(cot_object_outside_resume(&o->obj, token(t), &a), 0);
    log_event('r', a);
    obj_perform(o, a);
}

static void obj_close(object *o) {
    unsigned a = 0;
    CHECK_EQ(cot_object_close(&o->obj, &a), 0);
    log_event('x', a);
    obj_perform(o, a);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)h;
    (void)suggested;
    buf->base = malloc(64);
    CHECK(buf->base != NULL);
    buf->len = 64;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    object *o = s->data;
    CHECK(o->reading && !o->closing);
    if (nread > 0) {
        CHECK((size_t)nread <= sizeof o->pending);
        memcpy(o->pending, buf->base, (size_t)nread);
        o->npending = (size_t)nread;
    }
    free(buf->base);
    if (nread == 0) return; /* EAGAIN: nothing */
    CHECK(nread > 0);       /* no EOF nor error expected here */
    unsigned a = 0;
    CHECK_EQ(cot_object_callback(&o->obj, &a), 0);
    log_event('c', a);
    obj_perform(o, a);
}

static void obj_close_cb(uv_handle_t *h) {
    object *o = h->data;
    CHECK(o->closing && !o->in_close);
    o->closing = 0;
    o->close_callbacks++;
    g.close_callbacks++;
    unsigned a = 0;
    CHECK_EQ(cot_object_close_callback(&o->obj, &a), 0);
    log_event('f', a);
    obj_perform(o, a);
}

static void obj_resume(object *o, enum how how) {
    task *t = o->waiter;
    CHECK(t != NULL);
    o->waiter = NULL;
    resume_task(t, o->gen, how);
}

static void obj_perform(object *o, unsigned acts) {
    CHECK_EQ(acts & ~ALL_ACTIONS, 0);
    for (unsigned bit = 1; bit <= COT_ACT_RESUME_CLOSED; bit <<= 1) {
        if (!(acts & bit)) continue;
        switch (bit) {
        case COT_ACT_STOP_HANDLE:
            CHECK(o->reading);
            CHECK_EQ(uv_read_stop((uv_stream_t *)o->tcp), 0);
            o->reading = 0;
            o->stops++;
            break;
        case COT_ACT_CLOSE_HANDLE:
            CHECK(o->tcp != NULL && !o->closing);
            o->closing = 1;
            o->reading = 0;
            o->in_close = 1;
            g.closes++;
            uv_close((uv_handle_t *)o->tcp, obj_close_cb);
            o->in_close = 0;
            break;
        case COT_ACT_START_HANDLE:
            CHECK(!o->reading && !o->closing);
            CHECK_EQ(uv_read_start((uv_stream_t *)o->tcp, alloc_cb, read_cb), 0);
            o->reading = 1;
            o->starts++;
            break;
        case COT_ACT_RELEASE:
            CHECK(o->close_callbacks == 1 && !o->closing);
            memset(o->tcp, 0x5a, sizeof *o->tcp);
            free(o->tcp);
            o->tcp = NULL;
            o->released++;
            g.released++;
            break;
        case COT_ACT_RESUME:
            obj_resume(o, HOW_RESUMED);
            break;
        case COT_ACT_RESUME_CLOSED:
            obj_resume(o, HOW_CLOSED);
            break;
        default:
            fprintf(stderr, "unexpected object action 0x%x\n", bit);
            exit(1);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* 4. TCP over loopback: read on an object closed while a task waits         */
/* ------------------------------------------------------------------------ */

static struct {
    uv_loop_t loop;
    uv_tcp_t server, conn;
    uv_write_t wreq;
    uv_timer_t closer;
    object client;
    task t, other;
    char got[16];
    size_t ngot;
    int writes;
} s4;

static void s4_write_cb(uv_write_t *req, int status) {
    (void)req;
    CHECK_EQ(status, 0);
    s4.writes++;
}

static void s4_on_connection(uv_stream_t *server, int status) {
    CHECK_EQ(status, 0);
    CHECK_EQ(uv_tcp_init(&s4.loop, &s4.conn), 0);
    CHECK_EQ(uv_accept(server, (uv_stream_t *)&s4.conn), 0);
    static char ping[] = "ping";
    uv_buf_t b = uv_buf_init(ping, 4);
    CHECK_EQ(uv_write(&s4.wreq, (uv_stream_t *)&s4.conn, &b, 1, s4_write_cb), 0);
    driver_close((uv_handle_t *)server);
}

/* Somebody else closes the stream while the task waits on it. */
static void s4_close_it(uv_timer_t *h) {
    object *o = &s4.client;
    CHECK_EQ(cot_object_state(&o->obj), OBJ_AWAITING);
    CHECK(s4.t.suspended);
    CHECK_EQ(obj_await(o, &s4.other), COT_EBUSY); /* one waiter at a time */
    obj_outside_resume(o, &s4.other);             /* not its waiter: no-op */
    obj_close(o);                                 /* CLOSE_HANDLE + RESUME_CLOSED */
    CHECK_EQ(cot_object_state(&o->obj), OBJ_CLOSING);
    unsigned a = 0xdeadbeefu;
    CHECK_EQ(cot_object_close(&o->obj, &a), COT_EBADF);
    CHECK(o->closing && o->tcp != NULL); /* not released before the close callback */
    driver_close((uv_handle_t *)h);
    driver_close((uv_handle_t *)&s4.conn);
}

static void s4_resume(task *t, enum how how) {
    object *o = &s4.client;
    switch (t->stage) {
    case 0: /* connected (a request in the slot) */
        CHECK_EQ(how, HOW_RESUMED);
        CHECK_EQ(t->result, 0);
        task_leave(t); /* release the connect request's memory */
        t->stage = 1;
        CHECK_EQ(obj_await(o, t), 0); /* START_HANDLE: uv_read_start */
        CHECK_EQ(cot_object_state(&o->obj), OBJ_AWAITING);
        break;
    case 1: /* data */
        CHECK_EQ(how, HOW_RESUMED);
        CHECK_EQ(cot_object_state(&o->obj), OBJ_COMPLETED);
        CHECK(s4.ngot + o->npending <= sizeof s4.got);
        memcpy(s4.got + s4.ngot, o->pending, o->npending);
        s4.ngot += o->npending;
        CHECK_EQ(obj_await(o, t), 0); /* again, from the resumption: no restart */
        CHECK(o->reading);
        if (s4.ngot == 4) {
            CHECK(memcmp(s4.got, "ping", 4) == 0);
            t->stage = 2;
            CHECK_EQ(uv_timer_init(&s4.loop, &s4.closer), 0);
            CHECK_EQ(uv_timer_start(&s4.closer, s4_close_it, 0, 0), 0);
        }
        break;
    case 2: /* the object was closed */
        CHECK_EQ(how, HOW_CLOSED);
        CHECK_EQ(obj_await(o, t), COT_EBADF);
        obj_task_left(o, t);
        t->stage = 3;
        break;
    default:
        CHECK(!"resumed too often");
    }
}

static void s4_other_resume(task *t, enum how how) {
    (void)t;
    (void)how;
    CHECK(!"the other task never waits");
}

static void scenario_tcp_closed_while_waiting(void) {
    memset(&s4, 0, sizeof s4);
    CHECK_EQ(uv_loop_init(&s4.loop), 0);

    struct sockaddr_in addr;
    CHECK_EQ(uv_ip4_addr("127.0.0.1", 0, &addr), 0);
    CHECK_EQ(uv_tcp_init(&s4.loop, &s4.server), 0);
    CHECK_EQ(uv_tcp_bind(&s4.server, (const struct sockaddr *)&addr, 0), 0);
    CHECK_EQ(uv_listen((uv_stream_t *)&s4.server, 8, s4_on_connection), 0);
    struct sockaddr_in bound;
    int len = sizeof bound;
    CHECK_EQ(uv_tcp_getsockname(&s4.server, (struct sockaddr *)&bound, &len), 0);

    object *o = &s4.client;
    o->tcp = malloc(sizeof *o->tcp);
    CHECK(o->tcp != NULL);
    CHECK_EQ(uv_tcp_init(&s4.loop, o->tcp), 0);
    o->tcp->data = o;
    CHECK_EQ(cot_object_init(&o->obj), 0);

    task_init(&s4.t, "tcp reader", &s4.loop, s4_resume);
    task_init(&s4.other, "other", &s4.loop, s4_other_resume);
    params p = {.kind = OP_CONNECT, .tcp = o->tcp, .addr = bound};
    task_await(&s4.t, p);

    finish_loop(&s4.loop);
    CHECK_EQ(s4.t.stage, 3);
    CHECK_EQ(s4.t.resumed, 3); /* connect, data, closed */
    CHECK_EQ(s4.writes, 1);
    CHECK_EQ(o->starts, 1);
    CHECK_EQ(o->stops, 0);
    CHECK_EQ(o->close_callbacks, 1);
    CHECK_EQ(o->released, 1);
    CHECK(o->tcp == NULL);
    CHECK_EQ(cot_object_state(&o->obj), OBJ_FREED);
    task_done(&s4.t);
    task_done(&s4.other);
    EXPECT_LOG("tcp closed while waiting", "OCYocorxyf",
               COT_ACT_START_REQUEST, COT_ACT_RESUME, COT_ACT_RELEASE,
               COT_ACT_START_HANDLE, COT_ACT_RESUME, NOTHING,
               NOTHING, COT_ACT_CLOSE_HANDLE | COT_ACT_RESUME_CLOSED, NOTHING,
               COT_ACT_RELEASE);
}

int main(void) {
    /* Before the first use of the pool (it reads the variable once): one
     * thread, so that a blocked job keeps later requests queued. */
    CHECK_EQ(setenv("UV_THREADPOOL_SIZE", "1", 1), 0);

    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, CONTENT, strlen(CONTENT)), (ssize_t)strlen(CONTENT));
    CHECK_EQ(close(fd), 0);

    scenario_read();
    scenario_read_cancelled();
    scenario_read_cancelled_reset();
    scenario_timer_rearm();
    scenario_timer_then_read();
    scenario_tcp_closed_while_waiting();

    CHECK_EQ(unlink(path), 0);
    CHECK_EQ(g.req_started, g.req_callbacks);
    CHECK_EQ(g.closes, g.close_callbacks);
    printf("test_libuv_ops ok: %d requests, %d closes, %d releases, %d resumes (libuv %s)\n",
           g.req_started, g.closes, g.released, g.resumes, uv_version_string());
    return 0;
}
