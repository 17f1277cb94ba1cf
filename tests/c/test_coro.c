/* Stackful coroutines through the C ABI: switching order, many coroutines on
 * small stacks, a stack overflow caught by the guard page (in a child
 * process), sleeps and timeouts, waits on several sources, fd readiness on a
 * socketpair, work on the pool, static stacks and control blocks, raw
 * contexts, and every error case.
 *
 * AddressSanitizer: this file is also built with -fsanitize=address (the
 * _asan variant) and runs its functions on coroutine stacks without the
 * sanitizer's fiber annotations (__sanitizer_start_switch_fiber). That works
 * because ASan checks stack accesses through its shadow memory, which exists
 * for any address, and poisons/unpoisons a frame's red zones on entry/exit
 * wherever the frame is. What would go wrong without annotations is (a) a
 * frame abandoned on a freed coroutine's stack leaving its red zones
 * poisoned for the next user of that memory, which the library handles
 * itself (it unpoisons a stack when making and releasing it, through
 * __asan_unpoison_memory_region found with dlsym), and (b) noreturn calls
 * (exit, longjmp) on a coroutine stack, after which ASan would not know the
 * stack's bounds: the coroutines here return normally and never call exit
 * except when a check fails. So no annotations are needed, and none are
 * used. */
#define _GNU_SOURCE
#include <cothread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "now.h"

#define MS 1000000ull

/* Under ThreadSanitizer (scripts/tsan-c): each coroutine also has a TSan
 * fiber (its shadow call stack and clock, about 20 KiB), so the memory
 * bounds are not checked; raw contexts have no fiber annotations (see
 * doc/c.md), so their test is skipped. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

/* Resident set size in KiB, from /proc/self/statm. */
static long rss_kib(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    CHECK(f != NULL);
    CHECK_EQ(fscanf(f, "%ld %ld", &pages, &resident), 2);
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Runs the loop until nothing is alive, then closes it. */
static void finish_loop(cot_loop *loop) {
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== switching order ===== */

static char order[64];
static int order_len;

static void note(char c) {
    CHECK(order_len < (int)sizeof order - 1);
    order[order_len++] = c;
    order[order_len] = 0;
}

/* Notes its letter three times, yielding in between; returns its letter. */
static void *pinger(void *arg) {
    char c = *(char *)arg;
    for (int i = 0; i < 3; i++) {
        note(c);
        CHECK_EQ(cot_coro_status(cot_coro_current()), COT_CORO_RUNNING);
        CHECK_EQ(cot_coro_yield(), 0);
    }
    return arg;
}

static void test_ping_pong(void) {
    cot_loop *loop = cot_loop_new();
    static char a = 'a', b = 'b';
    cot_coro *ca, *cb;
    CHECK_EQ(cot_coro_new(loop, pinger, &a, 0, &ca), 0);
    CHECK_EQ(cot_coro_new(loop, pinger, &b, 64 * 1024, &cb), 0);
    CHECK_EQ(cot_coro_status(ca), COT_CORO_CREATED);
    CHECK(cot_coro_loop(ca) == loop);
    CHECK(cot_coro_arg(cb) == &b);
    CHECK(cot_coro_current() == NULL);
    CHECK_EQ(cot_coro_start(ca), 0);
    CHECK_EQ(cot_coro_start(cb), 0);
    CHECK_EQ(cot_coro_status(ca), COT_CORO_READY);
    order_len = 0;
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK(strcmp(order, "ababab") == 0);
    CHECK_EQ(cot_coro_status(ca), COT_CORO_FINISHED);
    void *r = NULL;
    CHECK_EQ(cot_coro_result(ca, &r), 0);
    CHECK(r == &a);
    CHECK_EQ(cot_coro_result(cb, &r), 0);
    CHECK(r == &b);
    /* Finished coroutines hold nothing of the loop: it closes first. */
    CHECK_EQ(cot_loop_close(loop), 0);
    CHECK_EQ(cot_coro_free(ca), 0);
    CHECK_EQ(cot_coro_free(cb), 0);
}

/* poco's model: the caller resumes the coroutine, which yields back to it. */
static void test_resume_from_outside(void) {
    cot_loop *loop = cot_loop_new();
    static char c = 'c';
    cot_coro *co;
    CHECK_EQ(cot_coro_new(loop, pinger, &c, 0, &co), 0);
    order_len = 0;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(cot_coro_resume(co), COT_CORO_READY); /* ran until its yield */
        note('-');
    }
    CHECK_EQ(cot_coro_resume(co), COT_CORO_FINISHED);
    CHECK(strcmp(order, "c-c-c-") == 0);
    CHECK_EQ(cot_coro_resume(co), COT_EINVAL);
    CHECK_EQ(cot_coro_free(co), 0);
    finish_loop(loop);
}

/* ===== yields and the loop's iterations ===== */

static int counter, timer_fired;

static void *count_forever(void *arg) {
    (void)arg;
    for (;;) {
        counter++;
        CHECK_EQ(cot_coro_yield(), 0);
    }
    return NULL;
}

static void *yield_until_fired(void *arg) {
    (void)arg;
    while (!timer_fired) CHECK_EQ(cot_coro_yield(), 0);
    return NULL;
}

static void set_fired(cot_loop *loop, cot_handle timer, void *data) {
    (void)data;
    timer_fired = 1;
    CHECK_EQ(cot_close(loop, timer, NULL), 0);
}

static void *stop_after_many(void *arg) {
    cot_loop *loop = arg;
    for (int i = 0; i < 100000; i++) CHECK_EQ(cot_coro_yield(), 0);
    CHECK_EQ(cot_loop_stop(loop), 0);
    for (;;) CHECK_EQ(cot_coro_yield(), 0);
    return NULL;
}

static void *yield_then_sleep(void *arg) {
    uint64_t *slept = arg;
    for (int i = 0; i < 100000; i++) CHECK_EQ(cot_coro_yield(), 0);
    uint64_t t0 = now_ns();
    CHECK_EQ(cot_coro_sleep(10 * MS), 0);
    *slept = now_ns() - t0;
    return NULL;
}

/* A yield hands the CPU straight to the next ready coroutine, but each runs
 * once per iteration, so yielding coroutines never starve timers or I/O;
 * with nothing else alive, the loop's iterations pass without a trip
 * through the loop (and without reading the clock), yet a sleep still
 * counts from the current time. */
static void test_yield_and_iterations(void) {
    cot_loop *loop = cot_loop_new();
    cot_coro *co[3];
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(cot_coro_new(loop, count_forever, NULL, 0, &co[i]), 0);
        CHECK_EQ(cot_coro_start(co[i]), 0);
    }
    counter = 0;
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1);
    CHECK_EQ(counter, 3); /* one batch: each ran once */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1);
    CHECK_EQ(counter, 6);
    for (int i = 0; i < 3; i++) CHECK_EQ(cot_coro_free(co[i]), 0);

    /* A timer fires while a coroutine keeps yielding. */
    cot_coro *y;
    cot_handle timer;
    timer_fired = 0;
    CHECK_EQ(cot_coro_new(loop, yield_until_fired, NULL, 0, &y), 0);
    CHECK_EQ(cot_coro_start(y), 0);
    CHECK_EQ(cot_timer_init(loop, NULL, &timer), 0);
    CHECK_EQ(cot_timer_start(loop, timer, set_fired, 2 * MS, 0), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK(timer_fired);
    CHECK_EQ(cot_coro_free(y), 0);

    /* cot_loop_stop from a coroutine that goes on yielding. */
    cot_coro *s;
    CHECK_EQ(cot_coro_new(loop, stop_after_many, loop, 0, &s), 0);
    CHECK_EQ(cot_coro_start(s), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 1); /* stopped, still alive */
    CHECK_EQ(cot_coro_status(s), COT_CORO_READY);
    CHECK_EQ(cot_coro_free(s), 0);

    /* Many passes without reading the clock, then a sleep of 10 ms. */
    uint64_t slept = 0;
    cot_coro *z;
    CHECK_EQ(cot_coro_new(loop, yield_then_sleep, &slept, 0, &z), 0);
    CHECK_EQ(cot_coro_start(z), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK(slept >= 10 * MS);
    CHECK_EQ(cot_coro_free(z), 0);
    finish_loop(loop);
}

/* ===== many coroutines ===== */

static long counted;

static void *count_twice(void *arg) {
    (void)arg;
    counted++;
    CHECK_EQ(cot_coro_yield(), 0);
    counted++;
    return NULL;
}

/* 100 000 coroutines on 16 KiB stacks carved out of one mapping (one entry
 * of the process's memory map; mapped stacks take two each, and Linux allows
 * 65 530 by default), with their blocks in one array: memory grows by the
 * pages the coroutines touch, not by their stacks' size. */
static void test_many_on_lent_stacks(void) {
    enum { N = 100000, SIZE = 16 * 1024 };
    cot_loop *loop = cot_loop_new();
    long before = rss_kib();
    char *region = mmap(NULL, (size_t)N * SIZE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(region != MAP_FAILED);
    cot_coro_block *blocks = calloc(N, sizeof *blocks);
    CHECK(blocks != NULL);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(cot_coro_init(loop, &blocks[i], region + (size_t)i * SIZE, SIZE, count_twice, NULL, NULL), 0);
        CHECK_EQ(cot_coro_start((cot_coro *)&blocks[i]), 0);
    }
    counted = 0;
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(counted, 2 * N);
    long grown = rss_kib() - before;
    printf("100 000 coroutines on 16 KiB lent stacks: RSS grew %ld KiB (%.1f KiB each; stacks total %d MiB)\n",
           grown, (double)grown / N, N * (SIZE / 1024) / 1024);
    CHECK(UNDER_TSAN || grown < (long)N * (SIZE / 1024) / 2); /* far below the stacks' size */
    for (int i = 0; i < N; i++) CHECK_EQ(cot_coro_free((cot_coro *)&blocks[i]), 0);
    free(blocks);
    munmap(region, (size_t)N * SIZE);
    finish_loop(loop);
}

/* 10 000 coroutines on mapped 16 KiB stacks with guard pages. */
static void test_many_mapped(void) {
    enum { N = 10000 };
    cot_loop *loop = cot_loop_new();
    static cot_coro *cos[N];
    long before = rss_kib();
    for (int i = 0; i < N; i++) {
        CHECK_EQ(cot_coro_new(loop, count_twice, NULL, 16 * 1024, &cos[i]), 0);
        CHECK_EQ(cot_coro_start(cos[i]), 0);
    }
    counted = 0;
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1); /* all ran once, all stacks mapped */
    CHECK_EQ(counted, N);
    long grown = rss_kib() - before;
    printf("10 000 coroutines on mapped 16 KiB stacks: RSS grew %ld KiB (%.1f KiB each)\n", grown,
           (double)grown / N);
    CHECK(UNDER_TSAN || grown < (long)N * 16 / 2);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(counted, 2 * N);
    for (int i = 0; i < N; i++) CHECK_EQ(cot_coro_free(cos[i]), 0);
    finish_loop(loop);
}

/* ===== the guard page ===== */

static volatile int depth_limit = -1; /* never reached: the guard page is */

static int recurse(int depth) {
    volatile char frame[1024];
    frame[0] = (char)depth;
    frame[sizeof frame - 1] = (char)depth;
    if (depth == depth_limit) return 0;
    return recurse(depth + 1) + frame[depth % (int)sizeof frame];
}

static void *overflow(void *arg) {
    (void)arg;
    return (void *)(intptr_t)recurse(0);
}

/* The child overflows a coroutine's 16 KiB stack: the guard page below it
 * faults, and the child dies of SIGSEGV instead of writing over other
 * memory. (Under ASan, the default action is restored first, so the death is
 * the kernel's, not a sanitizer report; no core file, so the death is quick
 * where core dumps are on, qemu-user's own included.) */
static void test_guard_page(void) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        prctl(PR_SET_DUMPABLE, 0);
        setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
        cot_loop *loop = cot_loop_new();
        cot_coro *co;
        if (cot_coro_new(loop, overflow, NULL, 16 * 1024, &co) != 0 || cot_coro_start(co) != 0) _exit(2);
        cot_loop_run(loop, COT_RUN_DEFAULT);
        _exit(0); /* not reached */
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFSIGNALED(status));
    CHECK_EQ(WTERMSIG(status), SIGSEGV);
}

/* ===== sleeps and timeouts ===== */

static int sig_a, sig_b, sig_c;

struct timed {
    int sleep_rc, timeout_rc, notified_rc;
    uint64_t slept_ns;
};

static void *timed_waits(void *arg) {
    struct timed *t = arg;
    uint64_t t0 = now_ns();
    t->sleep_rc = cot_coro_sleep(2 * MS);
    t->slept_ns = now_ns() - t0;
    t->timeout_rc = cot_coro_wait(&sig_a, 1 * MS);   /* nobody notifies */
    t->notified_rc = cot_coro_wait(&sig_a, COT_CORO_FOREVER);
    return NULL;
}

static void notify_a(cot_loop *loop, cot_handle timer, void *data) {
    (void)data;
    CHECK_EQ(cot_loop_notify(loop, &sig_a, COT_LATER), 1);
    CHECK_EQ(cot_close(loop, timer, NULL), 0);
}

static void *sleep_then_return(void *arg) {
    CHECK_EQ(cot_coro_sleep(5 * MS), 0);
    return arg;
}

/* 50 ms against the joiner's 1 ms: under qemu the joiner may start
 * several ms after this sleep began (each wait counts from its call), and
 * with 5 ms the sleep once ended first (CI, AArch64). */
static void *sleep_long_then_return(void *arg) {
    CHECK_EQ(cot_coro_sleep(50 * MS), 0);
    return arg;
}

struct joins {
    cot_coro *target;
    int first, second;
    void *result;
};

static void *joiner(void *arg) {
    struct joins *j = arg;
    j->first = cot_coro_join(j->target, 1 * MS, &j->result); /* it sleeps 50 ms */
    j->second = cot_coro_join(j->target, COT_CORO_FOREVER, &j->result);
    return NULL;
}

static void test_sleep_and_timeouts(void) {
    cot_loop *loop = cot_loop_new();
    struct timed t = {-1, -1, -1, 0};
    cot_coro *co, *target, *j;
    cot_handle timer;
    CHECK_EQ(cot_coro_new(loop, timed_waits, &t, 0, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    CHECK_EQ(cot_timer_init(loop, NULL, &timer), 0);
    CHECK_EQ(cot_timer_start(loop, timer, notify_a, 20 * MS, 0), 0);
    static int token = 42;
    struct joins js = {0};
    CHECK_EQ(cot_coro_new(loop, sleep_long_then_return, &token, 0, &target), 0);
    js.target = target;
    CHECK_EQ(cot_coro_new(loop, joiner, &js, 0, &j), 0);
    CHECK_EQ(cot_coro_start(target), 0);
    CHECK_EQ(cot_coro_start(j), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(t.sleep_rc, 0);
    CHECK(t.slept_ns >= 2 * MS);
    CHECK_EQ(t.timeout_rc, COT_ETIMEDOUT);
    CHECK_EQ(t.notified_rc, 0);
    CHECK_EQ(js.first, COT_ETIMEDOUT);
    CHECK_EQ(js.second, 0);
    CHECK(js.result == &token);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_coro_free(target), 0);
    CHECK_EQ(cot_coro_free(j), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== waking from outside ===== */

static void *wait_forever(void *arg) {
    int *rc = arg;
    *rc = cot_coro_wait(&sig_b, COT_CORO_FOREVER);
    return NULL;
}

static void *sleep_long(void *arg) {
    int *rc = arg;
    *rc = cot_coro_sleep(60000 * MS);
    return NULL;
}

static void test_wake(void) {
    cot_loop *loop = cot_loop_new();
    int rw = 1, rs = 1, rn = 1;
    cot_coro *w, *s, *n;
    CHECK_EQ(cot_coro_new(loop, wait_forever, &rw, 0, &w), 0);
    CHECK_EQ(cot_coro_new(loop, sleep_long, &rs, 0, &s), 0);
    CHECK_EQ(cot_coro_new(loop, wait_forever, &rn, 0, &n), 0);
    CHECK_EQ(cot_coro_wake(w), 1); /* a created one starts */
    CHECK_EQ(cot_coro_wake(w), 0); /* ready already */
    CHECK_EQ(cot_coro_start(s), 0);
    CHECK_EQ(cot_coro_start(n), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1);
    CHECK_EQ(cot_coro_status(w), COT_CORO_WAITING);
    CHECK_EQ(cot_coro_resume(w), COT_EBUSY); /* waiting: wake it instead */
    CHECK_EQ(cot_coro_wake(w), 1);
    CHECK_EQ(cot_coro_wake(w), 0); /* woken already */
    CHECK_EQ(cot_coro_wake(s), 1);
    /* n is notified first, then woken: the notification wins. */
    CHECK_EQ(cot_loop_notify(loop, &sig_b, COT_LATER), 1);
    CHECK_EQ(cot_coro_wake(n), 1);
    uint64_t t0 = now_ns();
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK(now_ns() - t0 < 5000 * MS); /* the long sleep was cut short */
    CHECK_EQ(rw, COT_ECANCELED);
    CHECK_EQ(rs, COT_ECANCELED);
    CHECK_EQ(rn, 0);
    CHECK_EQ(cot_coro_free(w), 0);
    CHECK_EQ(cot_coro_free(s), 0);
    CHECK_EQ(cot_coro_free(n), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== several sources ===== */

struct any {
    cot_coro_source src[4];
    int rc[4];
    int revents[4];
};

static void *wait_any(void *arg) {
    struct any *a = arg;
    /* 1: sig_b notified by a timer; 2: the coroutine ends; 3: timeout. */
    for (int round = 0; round < 3; round++) {
        a->rc[round] = cot_coro_wait_any(a->src, 3, 30 * MS);
        a->revents[round] = a->rc[round] >= 0 ? a->src[a->rc[round]].revents : 0;
        /* The others are told they did not fire. */
        for (int i = 0; i < 3; i++)
            if (i != a->rc[round]) CHECK_EQ(a->src[i].revents, 0);
        if (round == 1) a->src[2].coro = NULL, a->src[2].type = COT_SOURCE_SIGNAL, a->src[2].signal = &sig_c;
    }
    return NULL;
}

static void notify_b(cot_loop *loop, cot_handle timer, void *data) {
    (void)data;
    CHECK_EQ(cot_loop_notify(loop, &sig_b, COT_LATER), 1);
    CHECK_EQ(cot_close(loop, timer, NULL), 0);
}

static void test_wait_any(void) {
    cot_loop *loop = cot_loop_new();
    struct any a = {0};
    cot_coro *w, *ender;
    static int token;
    CHECK_EQ(cot_coro_new(loop, sleep_then_return, &token, 0, &ender), 0); /* ends after 5 ms */
    a.src[0] = (cot_coro_source){.type = COT_SOURCE_SIGNAL, .signal = &sig_a};
    a.src[1] = (cot_coro_source){.type = COT_SOURCE_SIGNAL, .signal = &sig_b};
    a.src[2] = (cot_coro_source){.type = COT_SOURCE_CORO, .coro = ender};
    CHECK_EQ(cot_coro_new(loop, wait_any, &a, 0, &w), 0);
    CHECK_EQ(cot_coro_start(w), 0);
    cot_handle timer;
    CHECK_EQ(cot_timer_init(loop, NULL, &timer), 0);
    CHECK_EQ(cot_timer_start(loop, timer, notify_b, 1 * MS, 0), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_ONCE), 1); /* w waits now */
    CHECK_EQ(cot_coro_start(ender), 0);
    CHECK_EQ(cot_coro_free(ender), COT_EBUSY); /* w is joining it */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(a.rc[0], 1);
    CHECK_EQ(a.revents[0], 1);
    CHECK_EQ(a.rc[1], 2);
    CHECK_EQ(a.revents[1], 1);
    CHECK_EQ(a.rc[2], COT_ETIMEDOUT);
    CHECK_EQ(cot_coro_free(w), 0);
    CHECK_EQ(cot_coro_free(ender), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* A finished coroutine among the sources fires at once, without suspending. */
static void *wait_on_finished(void *arg) {
    cot_coro_source src[2] = {
        {.type = COT_SOURCE_SIGNAL, .signal = &sig_a},
        {.type = COT_SOURCE_CORO, .coro = arg},
    };
    CHECK_EQ(cot_coro_wait_any(src, 2, COT_CORO_FOREVER), 1);
    CHECK_EQ(src[1].revents, 1);
    void *r = NULL;
    CHECK_EQ(cot_coro_join(arg, 0, &r), 0); /* finished: no wait, no timeout */
    CHECK(r == arg);
    CHECK_EQ(cot_coro_wait_any(NULL, 0, 1 * MS), COT_ETIMEDOUT); /* a plain sleep */
    return NULL;
}

static void *return_arg(void *arg) {
    return arg;
}

/* The coroutine `wait_on_finished` joins returns itself (its argument). */
static void test_wait_any_finished(void) {
    cot_loop *loop = cot_loop_new();
    static cot_coro_block blk;
    static char stack[16 * 1024];
    cot_coro *done, *w;
    CHECK_EQ(cot_coro_init(loop, &blk, stack, sizeof stack, return_arg, &blk, &done), 0);
    CHECK(done == (cot_coro *)&blk);
    CHECK_EQ(cot_coro_resume(done), COT_CORO_FINISHED);
    CHECK_EQ(cot_coro_new(loop, wait_on_finished, done, 0, &w), 0);
    CHECK_EQ(cot_coro_start(w), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_coro_status(w), COT_CORO_FINISHED);
    CHECK_EQ(cot_coro_free(w), 0);
    CHECK_EQ(cot_coro_free(done), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== fd readiness ===== */

struct reader {
    cot_handle poll;
    int fd;
    int timeout_rc, ready_rc, any_rc, any_revents, closed_rc;
    char got[8];
};

static void *reader(void *arg) {
    struct reader *r = arg;
    r->timeout_rc = cot_coro_poll(r->poll, COT_READABLE, 1 * MS); /* nothing written yet */
    r->ready_rc = cot_coro_poll(r->poll, COT_READABLE, 10000 * MS);
    CHECK_EQ(read(r->fd, r->got, 2), 2);
    cot_coro_source src[2] = {
        {.type = COT_SOURCE_SIGNAL, .signal = &sig_c},
        {.type = COT_SOURCE_POLL, .poll = r->poll, .events = COT_READABLE},
    };
    r->any_rc = cot_coro_wait_any(src, 2, 10000 * MS);
    r->any_revents = src[1].revents;
    CHECK_EQ(read(r->fd, r->got + 2, 1), 1);
    r->closed_rc = cot_coro_poll(r->poll, COT_READABLE, COT_CORO_FOREVER); /* closed meanwhile */
    return NULL;
}

struct writer {
    int fd, step;
    cot_handle poll;
};

static void write_later(cot_loop *loop, cot_handle timer, void *data) {
    struct writer *w = data;
    switch (w->step++) {
    case 0: CHECK_EQ(write(w->fd, "ab", 2), 2); break;
    case 1: CHECK_EQ(write(w->fd, "c", 1), 1); break;
    default:
        CHECK_EQ(cot_close(loop, w->poll, NULL), 0);
        CHECK_EQ(cot_close(loop, timer, NULL), 0);
        return;
    }
    CHECK_EQ(cot_timer_start(loop, timer, write_later, 5 * MS, 0), 0);
}

static void test_poll(void) {
    cot_loop *loop = cot_loop_new();
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct reader r = {.fd = sv[1], .timeout_rc = 1, .ready_rc = 1, .any_rc = 1, .closed_rc = 1};
    struct writer w = {.fd = sv[0]};
    CHECK_EQ(cot_poll_init(loop, sv[1], NULL, &r.poll), 0);
    w.poll = r.poll;
    cot_coro *co;
    CHECK_EQ(cot_coro_new(loop, reader, &r, 0, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    cot_handle timer;
    CHECK_EQ(cot_timer_init(loop, &w, &timer), 0);
    CHECK_EQ(cot_timer_start(loop, timer, write_later, 10 * MS, 0), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(r.timeout_rc, COT_ETIMEDOUT);
    CHECK_EQ(r.ready_rc, COT_READABLE);
    CHECK_EQ(r.any_rc, 1);
    CHECK_EQ(r.any_revents, COT_READABLE);
    CHECK_EQ(r.closed_rc, COT_EBADF);
    CHECK(memcmp(r.got, "abc", 3) == 0);
    CHECK_EQ(cot_coro_status(co), COT_CORO_FINISHED);
    CHECK_EQ(cot_coro_free(co), 0);
    close(sv[0]);
    close(sv[1]);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== work on the pool ===== */

static atomic_int worked;

static void work(void *data) {
    (void)data;
    atomic_fetch_add(&worked, 1);
}

static void *worker(void *arg) {
    int *rc = arg;
    for (int i = 0; i < 3; i++) rc[i] = cot_coro_work(work, NULL);
    return NULL;
}

static void test_work(void) {
    cot_loop *loop = cot_loop_new();
    int rc[3] = {1, 1, 1};
    cot_coro *co;
    CHECK_EQ(cot_coro_new(loop, worker, rc, 0, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    for (int i = 0; i < 3; i++) CHECK_EQ(rc[i], 0);
    CHECK_EQ(atomic_load(&worked), 3);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== static stacks and control blocks ===== */

static char static_stack[32 * 1024];
static cot_coro_block static_block;

static void *where_am_i(void *arg) {
    char local = 0;
    *(char **)arg = &local;
    CHECK_EQ(cot_coro_yield(), 0);
    return NULL;
}

static void test_static(void) {
    cot_loop *loop = cot_loop_new();
    CHECK_EQ(sizeof(cot_coro_block), COT_CORO_BLOCK_SIZE);
    CHECK_EQ(COT_CORO_BLOCK_SIZE, 256);
    char *local = NULL;
    cot_coro *co = NULL;
    CHECK_EQ(cot_coro_status((cot_coro *)&static_block), COT_EINVAL); /* a zeroed block holds none */
    CHECK_EQ(cot_coro_init(loop, &static_block, static_stack, sizeof static_stack, where_am_i, &local, &co), 0);
    CHECK(co == (cot_coro *)&static_block);
    /* The block holds a live coroutine: it cannot be made again. */
    CHECK_EQ(cot_coro_init(loop, &static_block, static_stack, sizeof static_stack, where_am_i, &local, NULL),
             COT_EBUSY);
    CHECK_EQ(cot_coro_resume(co), COT_CORO_READY);
    CHECK(local >= static_stack && local < static_stack + sizeof static_stack); /* it runs there */
    /* Freed while ready: the block and the stack are the caller's again. */
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_coro_status(co), COT_EINVAL);
    CHECK_EQ(cot_coro_free(co), COT_EINVAL);
    memset(static_stack, 0, sizeof static_stack);
    /* Reused, to the end this time. */
    CHECK_EQ(cot_coro_init(loop, &static_block, static_stack, sizeof static_stack, where_am_i, &local, NULL), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_coro_status(co), COT_CORO_FINISHED);
    CHECK_EQ(cot_coro_free(co), 0);
    /* A static block with a mapped stack. */
    CHECK_EQ(cot_coro_init(loop, &static_block, NULL, 0, where_am_i, &local, NULL), 0);
    CHECK_EQ(cot_coro_resume(co), COT_CORO_READY);
    CHECK(!(local >= static_stack && local < static_stack + sizeof static_stack));
    CHECK_EQ(cot_coro_free(co), 0);
    finish_loop(loop);
}

/* ===== raw contexts ===== */

static cot_context main_ctx, raw_ctx;

static void raw_echo(void *arg) {
    for (;;) arg = cot_context_switch(&raw_ctx, main_ctx, (char *)arg + 1);
}

static void test_raw_context(void) {
    static char stack[16 * 1024];
    if (UNDER_TSAN) return;
    raw_ctx = cot_context_make(stack, sizeof stack, raw_echo);
    CHECK(raw_ctx != NULL);
    char *p = NULL;
    for (int i = 0; i < 100; i++) {
        char *got = cot_context_switch(&main_ctx, raw_ctx, p);
        CHECK(got == p + 1);
        p = got;
    }
    CHECK(cot_context_make(NULL, sizeof stack, raw_echo) == NULL);
    CHECK(cot_context_make(stack, COT_CORO_STACK_MIN - 1, raw_echo) == NULL);
    CHECK(cot_context_make(stack, sizeof stack, NULL) == NULL);
    CHECK(cot_context_switch(NULL, raw_ctx, p) == NULL);
    CHECK(cot_context_switch(&main_ctx, NULL, p) == NULL);
}

/* Peers: three contexts pass a counter round in a ring with the peer
 * switch, and the last hands it back to main with the plain one (either
 * switch resumes a context the other saved). */
static cot_context ring_ctx[3];

static void ring_member(void *arg) {
    for (;;) {
        uintptr_t n = (uintptr_t)arg;
        int me = (int)(n % 3), next = (me + 1) % 3;
        if (n % 30 == 29) {
            arg = cot_context_switch(&ring_ctx[me], main_ctx, (void *)(n + 1));
        } else {
            arg = cot_context_switch_peer(&ring_ctx[me], ring_ctx[next], (void *)(n + 1));
        }
    }
}

static void test_raw_context_peers(void) {
    static char stacks[3][16 * 1024];
    if (UNDER_TSAN) return;
    for (int i = 0; i < 3; i++) {
        ring_ctx[i] = cot_context_make(stacks[i], sizeof stacks[i], ring_member);
        CHECK(ring_ctx[i] != NULL);
    }
    /* Each round: main -> 0 -> 1 -> 2 -> 0 ... -> 2 (value 29 mod 30) -> main. */
    uintptr_t n = 0;
    for (int round = 0; round < 5; round++) {
        uintptr_t got = (uintptr_t)cot_context_switch_peer(&main_ctx, ring_ctx[0], (void *)n);
        CHECK_EQ(got, n + 30);
        n = got;
    }
    CHECK(cot_context_switch_peer(NULL, ring_ctx[0], NULL) == NULL);
    CHECK(cot_context_switch_peer(&main_ctx, NULL, NULL) == NULL);
}

/* ===== errors ===== */

struct errs {
    cot_coro *self, *other_loop_coro;
    cot_handle poll_a, poll_b;
};

static void *error_cases(void *arg) {
    struct errs *e = arg;
    cot_coro *self = cot_coro_current();
    CHECK(self == e->self);
    CHECK_EQ(cot_coro_free(self), COT_EBUSY);   /* running */
    CHECK_EQ(cot_coro_wake(self), COT_EBUSY);
    CHECK_EQ(cot_coro_resume(self), COT_EBUSY);
    CHECK_EQ(cot_coro_start(self), COT_EBUSY);
    void *r;
    CHECK_EQ(cot_coro_result(self, &r), COT_EBUSY); /* not finished */
    CHECK_EQ(cot_coro_join(self, 0, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_join(NULL, 0, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_join(e->other_loop_coro, 0, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_wait(NULL, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_poll(0, COT_READABLE, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_poll(e->poll_a, 0, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_poll(e->poll_a, 64, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_work(NULL, NULL), COT_EINVAL);
    cot_coro_source two_polls[2] = {
        {.type = COT_SOURCE_POLL, .poll = e->poll_a, .events = COT_READABLE},
        {.type = COT_SOURCE_POLL, .poll = e->poll_b, .events = COT_READABLE},
    };
    CHECK_EQ(cot_coro_wait_any(two_polls, 2, 0), COT_EINVAL);
    cot_coro_source bad[1] = {{.type = 99}};
    CHECK_EQ(cot_coro_wait_any(bad, 1, 0), COT_EINVAL);
    bad[0] = (cot_coro_source){.type = COT_SOURCE_SIGNAL, .signal = NULL};
    CHECK_EQ(cot_coro_wait_any(bad, 1, 0), COT_EINVAL);
    bad[0] = (cot_coro_source){.type = COT_SOURCE_CORO, .coro = self};
    CHECK_EQ(cot_coro_wait_any(bad, 1, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_wait_any(NULL, 1, 0), COT_EINVAL);
    CHECK_EQ(cot_coro_wait_any(NULL, 0, COT_CORO_FOREVER), COT_EINVAL); /* nothing, forever */
    /* The loop runs this coroutine: running it again is refused. */
    CHECK_EQ(cot_loop_run(cot_coro_loop(self), COT_RUN_NOWAIT), COT_EBUSY);
    /* Still fine after all that. */
    CHECK_EQ(cot_coro_yield(), 0);
    return NULL;
}

/* Freeing unfinished coroutines frees their loop tasks at once: the loop
 * closes right after, with no run in between (doc/c.md, "The loop"). */
static void test_free_then_close(void) {
    cot_loop *loop = cot_loop_new();
    int rw = 1, rs = 1;
    cot_coro *created, *ready, *waiting, *sleeping;
    CHECK_EQ(cot_coro_new(loop, return_arg, NULL, 0, &created), 0);
    CHECK_EQ(cot_coro_new(loop, return_arg, NULL, 0, &ready), 0);
    CHECK_EQ(cot_coro_new(loop, wait_forever, &rw, 0, &waiting), 0);
    CHECK_EQ(cot_coro_new(loop, sleep_long, &rs, 0, &sleeping), 0);
    CHECK_EQ(cot_coro_start(waiting), 0);
    CHECK_EQ(cot_coro_start(sleeping), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), 1);
    CHECK_EQ(cot_coro_start(ready), 0);
    CHECK_EQ(cot_coro_status(waiting), COT_CORO_WAITING);
    CHECK_EQ(cot_coro_status(sleeping), COT_CORO_WAITING);
    CHECK_EQ(cot_coro_status(ready), COT_CORO_READY);
    CHECK_EQ(cot_loop_close(loop), COT_EBUSY); /* four coroutines */
    CHECK_EQ(cot_coro_free(created), 0);
    CHECK_EQ(cot_coro_free(ready), 0);
    CHECK_EQ(cot_coro_free(waiting), 0);
    CHECK_EQ(cot_loop_close(loop), COT_EBUSY); /* one left */
    CHECK_EQ(cot_coro_free(sleeping), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
    CHECK_EQ(rw, 1); /* abandoned: their waits never returned */
    CHECK_EQ(rs, 1);
}

static void test_errors(void) {
    cot_loop *loop = cot_loop_new(), *other = cot_loop_new();
    cot_coro *co = NULL, *foreign = NULL;
    static char small[COT_CORO_STACK_MIN - 1];
    static cot_coro_block blk;

    /* NULLs and bad arguments. */
    CHECK_EQ(cot_coro_new(NULL, return_arg, NULL, 0, &co), COT_EINVAL);
    CHECK_EQ(cot_coro_new(loop, NULL, NULL, 0, &co), COT_EINVAL);
    CHECK_EQ(cot_coro_new(loop, return_arg, NULL, 0, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_new(loop, return_arg, NULL, (size_t)-1 / 2, &co), COT_ENOMEM);
    CHECK_EQ(cot_coro_init(NULL, &blk, NULL, 0, return_arg, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_init(loop, NULL, NULL, 0, return_arg, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_init(loop, &blk, NULL, 0, NULL, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_init(loop, &blk, small, sizeof small, return_arg, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_start(NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_wake(NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_resume(NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_free(NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_status(NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_result(NULL, NULL), COT_EINVAL);
    CHECK(cot_coro_loop(NULL) == NULL);
    CHECK(cot_coro_arg(NULL) == NULL);

    /* Waiting calls outside coroutines. */
    CHECK_EQ(cot_coro_yield(), COT_EPERM);
    CHECK_EQ(cot_coro_sleep(1), COT_EPERM);
    CHECK_EQ(cot_coro_wait(&sig_a, 1), COT_EPERM);
    CHECK_EQ(cot_coro_poll(1, COT_READABLE, 1), COT_EPERM);
    CHECK_EQ(cot_coro_work(work, NULL), COT_EPERM);
    CHECK_EQ(cot_coro_wait_any(NULL, 0, 1), COT_EPERM);

    /* Lifecycle misuse. */
    CHECK_EQ(cot_coro_new(other, return_arg, NULL, 0, &foreign), 0);
    CHECK_EQ(cot_coro_join(foreign, 0, NULL), COT_EPERM);
    CHECK_EQ(cot_coro_new(loop, return_arg, NULL, 0, &co), 0);
    void *r;
    CHECK_EQ(cot_coro_result(co, &r), COT_EBUSY);
    CHECK_EQ(cot_coro_result(co, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_start(co), 0);
    CHECK_EQ(cot_coro_start(co), COT_EBUSY);
    CHECK_EQ(cot_loop_close(loop), COT_EBUSY); /* a coroutine's task is a handle */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_coro_status(co), COT_CORO_FINISHED);
    CHECK_EQ(cot_coro_result(co, NULL), COT_EINVAL);
    CHECK_EQ(cot_coro_start(co), COT_EINVAL);
    CHECK_EQ(cot_coro_wake(co), COT_EINVAL);
    CHECK_EQ(cot_coro_resume(co), COT_EINVAL);
    CHECK_EQ(cot_coro_free(co), 0);

    /* Errors inside a coroutine. */
    struct errs e = {0};
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CHECK_EQ(cot_poll_init(loop, sv[0], NULL, &e.poll_a), 0);
    CHECK_EQ(cot_poll_init(loop, sv[1], NULL, &e.poll_b), 0);
    e.other_loop_coro = foreign;
    CHECK_EQ(cot_coro_new(loop, error_cases, &e, 0, &e.self), 0);
    CHECK_EQ(cot_coro_start(e.self), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_coro_status(e.self), COT_CORO_FINISHED);
    CHECK_EQ(cot_coro_free(e.self), 0);
    CHECK_EQ(cot_close(loop, e.poll_a, NULL), 0);
    CHECK_EQ(cot_close(loop, e.poll_b, NULL), 0);
    close(sv[0]);
    close(sv[1]);
    finish_loop(loop);

    /* A created coroutine keeps its loop from closing; freed, it does not. */
    CHECK_EQ(cot_loop_close(other), COT_EBUSY);
    CHECK_EQ(cot_coro_free(foreign), 0);
    CHECK_EQ(cot_loop_close(other), 0);
    /* Error names. */
    CHECK(strcmp(cot_err_name(COT_EPERM), "COT_EPERM") == 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    test_ping_pong();
    test_resume_from_outside();
    test_yield_and_iterations();
    test_many_on_lent_stacks();
    test_many_mapped();
    test_guard_page();
    test_sleep_and_timeouts();
    test_wake();
    test_free_then_close();
    test_wait_any();
    test_wait_any_finished();
    test_poll();
    test_work();
    test_static();
    test_raw_context();
    test_raw_context_peers();
    test_errors();
    puts("test_coro ok");
    return 0;
}
