/*
 * Timer benchmarks: cothread's event loop (cot_loop, cot_timer_*) against
 * libuv (uv_loop_t, uv_timer_*), measured in one run of one process.
 *
 * 1. "restart": one timer with timeout 0 restarted from its own callback
 *    (cot_timer_start(loop, h, cb, 0, 0) / uv_timer_start(h, cb, 0, 0)) until
 *    it expired CYCLES times, all inside one cot_loop_run / uv_run. Reported:
 *    total wall time and ns per start/expire cycle.
 *
 *    The two loops do not do the same work here. cothread fires a timer
 *    started by a timer callback on a later loop iteration (as libuv >= 1.48
 *    does), so each cycle is one full iteration: two clock reads, timer heap,
 *    epoll_wait(0) on the loop's epoll set (which always holds the async
 *    eventfd), close phase. libuv 1.44 (Debian 12) re-fires such a timer
 *    within the same uv__run_timers pass (libuv issue #4245, fixed in 1.48):
 *    its 1M cycles are heap pop + push + callback, with no loop iteration in
 *    between. So a second libuv baseline makes one iteration per cycle:
 *
 *    "restart, libuv 1 iteration/cycle": the libuv timer callback only
 *       counts, and a uv_prepare handle (which runs just before the poll
 *       phase) restarts the timer with timeout 0. The timer is then due, so
 *       uv_run polls with timeout 0 and fires it on the next iteration: each
 *       cycle is a full libuv iteration with one epoll_wait(0) (a libuv loop
 *       always watches its signal pipe, so it never skips the poll), which
 *       is the work cothread does per cycle.
 *
 * 2. "heap": 10 000 timers, each restarted from its callback with its own
 *    random timeout in 0..1 ms, until CYCLES expiries in all: the loop's
 *    timer heap holds 10 000 entries. Both loops are busy all the time (each
 *    timer wants to fire every 0.5 ms on average), so the figure is CPU time
 *    per expiry. cothread gets the random timeouts in ns; libuv counts in
 *    whole ms, so it gets the same draws rounded to the ms (0 or 1).
 *
 * 3. "bulk": CYCLES timers started one after the other with random
 *    timeouts in 0..1 ms, then one run until all expired: start and expiry
 *    through a heap growing to CYCLES entries, loop-thread CPU time.
 *
 * Each figure is the best of ROUNDS runs, the two sides alternating.
 *
 * Run (after building the library, see bench/c/Makefile):
 *     make -C bench/c run-timers
 *     COT_BENCH_CYCLES=1000000 COT_BENCH_ROUNDS=5 bench/c/bench-timers
 */
#include <cothread.h>
#include <uv.h>

#include "common.h"

static uint64_t cycles; /* expiries per measurement */

/* ===== 1. one timer restarted with timeout 0 ===== */

static uint64_t fired;

static void cot_restart_cb(cot_loop *loop, cot_handle h, void *data) {
    (void)data;
    if (++fired < cycles) CHECK(cot_timer_start(loop, h, cot_restart_cb, 0, 0));
}

/* Wall ns of `cycles` expiries of one cothread timer restarted from its
 * callback. */
static uint64_t cot_restart(void) {
    cot_loop *loop = cot_loop_new();
    CHECK_PTR(loop);
    cot_handle t;
    CHECK(cot_timer_init(loop, NULL, &t));
    fired = 0;
    CHECK(cot_timer_start(loop, t, cot_restart_cb, 0, 0));
    uint64_t t0 = wall_ns();
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    uint64_t dt = wall_ns() - t0;
    if (fired != cycles) abort();
    CHECK(cot_close(loop, t, NULL));
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    CHECK(cot_loop_close(loop));
    return dt;
}

static void uv_restart_cb(uv_timer_t *h) {
    if (++fired < cycles) CHECK(uv_timer_start(h, uv_restart_cb, 0, 0));
}

/* The same with libuv: the restarted timer fires within the same pass. */
static uint64_t uv_restart(void) {
    uv_loop_t loop;
    uv_timer_t t;
    CHECK(uv_loop_init(&loop));
    CHECK(uv_timer_init(&loop, &t));
    fired = 0;
    CHECK(uv_timer_start(&t, uv_restart_cb, 0, 0));
    uint64_t t0 = wall_ns();
    CHECK(uv_run(&loop, UV_RUN_DEFAULT));
    uint64_t dt = wall_ns() - t0;
    if (fired != cycles) abort();
    uv_close((uv_handle_t *)&t, NULL);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT));
    CHECK(uv_loop_close(&loop));
    return dt;
}

/* libuv, one expiry per loop iteration: the timer callback only counts; a
 * prepare handle restarts the timer before each poll phase (so the poll does
 * not block, the timer being due), and stops itself after the last expiry. */
static uv_timer_t iter_timer;

static void uv_iter_timer_cb(uv_timer_t *h) {
    (void)h;
    fired++;
}

static void uv_iter_prepare_cb(uv_prepare_t *p) {
    if (fired < cycles) {
        if (!uv_is_active((uv_handle_t *)&iter_timer))
            CHECK(uv_timer_start(&iter_timer, uv_iter_timer_cb, 0, 0));
    } else {
        CHECK(uv_prepare_stop(p));
    }
}

static uint64_t uv_restart_iter(void) {
    uv_loop_t loop;
    uv_prepare_t prepare;
    CHECK(uv_loop_init(&loop));
    CHECK(uv_timer_init(&loop, &iter_timer));
    CHECK(uv_prepare_init(&loop, &prepare));
    fired = 0;
    CHECK(uv_timer_start(&iter_timer, uv_iter_timer_cb, 0, 0));
    CHECK(uv_prepare_start(&prepare, uv_iter_prepare_cb));
    uint64_t t0 = wall_ns();
    CHECK(uv_run(&loop, UV_RUN_DEFAULT));
    uint64_t dt = wall_ns() - t0;
    if (fired != cycles) abort();
    uv_close((uv_handle_t *)&iter_timer, NULL);
    uv_close((uv_handle_t *)&prepare, NULL);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT));
    CHECK(uv_loop_close(&loop));
    return dt;
}

/* ===== 2. 10 000 timers with random timeouts ===== */

#define HEAP_TIMERS 10000
#define MAX_TIMEOUT_NS 1000000 /* 1 ms */

static uint64_t heap_rng;

static uint64_t random_timeout_ns(void) { return rng_next(&heap_rng) % (MAX_TIMEOUT_NS + 1); }

/* Expiries go on until `cycles` in all; after that each timer fires once
 * more without restarting, and the loop ends when the last one did. */
static void cot_heap_cb(cot_loop *loop, cot_handle h, void *data) {
    (void)data;
    if (++fired < cycles) CHECK(cot_timer_start(loop, h, cot_heap_cb, random_timeout_ns(), 0));
}

static uint64_t cot_heap(void) {
    static cot_handle t[HEAP_TIMERS];
    cot_loop *loop = cot_loop_new();
    CHECK_PTR(loop);
    fired = 0;
    heap_rng = 42;
    for (int i = 0; i < HEAP_TIMERS; i++) {
        CHECK(cot_timer_init(loop, NULL, &t[i]));
        CHECK(cot_timer_start(loop, t[i], cot_heap_cb, random_timeout_ns(), 0));
    }
    uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    uint64_t dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    for (int i = 0; i < HEAP_TIMERS; i++) CHECK(cot_close(loop, t[i], NULL));
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    CHECK(cot_loop_close(loop));
    return dt;
}

/* libuv timeouts are whole ms: the same draw, rounded to the nearest ms. */
static uint64_t random_timeout_ms(void) {
    return (random_timeout_ns() + 500000) / 1000000;
}

static void uv_heap_cb(uv_timer_t *h) {
    if (++fired < cycles) CHECK(uv_timer_start(h, uv_heap_cb, random_timeout_ms(), 0));
}

static uint64_t uv_heap(void) {
    static uv_timer_t t[HEAP_TIMERS];
    uv_loop_t loop;
    CHECK(uv_loop_init(&loop));
    fired = 0;
    heap_rng = 42;
    for (int i = 0; i < HEAP_TIMERS; i++) {
        CHECK(uv_timer_init(&loop, &t[i]));
        CHECK(uv_timer_start(&t[i], uv_heap_cb, random_timeout_ms(), 0));
    }
    uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT));
    uint64_t dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    for (int i = 0; i < HEAP_TIMERS; i++) uv_close((uv_handle_t *)&t[i], NULL);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT));
    CHECK(uv_loop_close(&loop));
    return dt;
}

/* ===== 3. CYCLES timers started, then expired ===== */

static void cot_bulk_cb(cot_loop *loop, cot_handle h, void *data) {
    (void)loop, (void)h, (void)data;
    fired++;
}

static uint64_t cot_bulk(void) {
    cot_handle *t = malloc(cycles * sizeof *t);
    CHECK_PTR(t);
    cot_loop *loop = cot_loop_new();
    CHECK_PTR(loop);
    fired = 0;
    heap_rng = 42;
    for (uint64_t i = 0; i < cycles; i++) CHECK(cot_timer_init(loop, NULL, &t[i]));
    uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t i = 0; i < cycles; i++)
        CHECK(cot_timer_start(loop, t[i], cot_bulk_cb, random_timeout_ns(), 0));
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    uint64_t dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (fired != cycles) abort();
    for (uint64_t i = 0; i < cycles; i++) CHECK(cot_close(loop, t[i], NULL));
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    CHECK(cot_loop_close(loop));
    free(t);
    return dt;
}

static void uv_bulk_cb(uv_timer_t *h) {
    (void)h;
    fired++;
}

static uint64_t uv_bulk(void) {
    uv_timer_t *t = malloc(cycles * sizeof *t);
    CHECK_PTR(t);
    uv_loop_t loop;
    CHECK(uv_loop_init(&loop));
    fired = 0;
    heap_rng = 42;
    for (uint64_t i = 0; i < cycles; i++) CHECK(uv_timer_init(&loop, &t[i]));
    uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t i = 0; i < cycles; i++)
        CHECK(uv_timer_start(&t[i], uv_bulk_cb, random_timeout_ms(), 0));
    CHECK(uv_run(&loop, UV_RUN_DEFAULT));
    uint64_t dt = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (fired != cycles) abort();
    for (uint64_t i = 0; i < cycles; i++) uv_close((uv_handle_t *)&t[i], NULL);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT));
    CHECK(uv_loop_close(&loop));
    free(t);
    return dt;
}

/* ===== driver ===== */

typedef uint64_t (*measure_fn)(void);

/* Runs `ours` and `theirs` `rounds` times, alternating; keeps the best of
 * each, and the expiries of the best run (the heap test fires a few more
 * than `cycles`). */
static void compare(const char *what, const char *unit, int rounds, measure_fn ours,
                    measure_fn theirs) {
    uint64_t best_ours = UINT64_MAX, best_theirs = UINT64_MAX;
    uint64_t n_ours = 0, n_theirs = 0;
    for (int r = 0; r < rounds; r++) {
        uint64_t a = ours();
        if (a < best_ours) best_ours = a, n_ours = fired;
        uint64_t b = theirs();
        if (b < best_theirs) best_theirs = b, n_theirs = fired;
    }
    double per_ours = (double)best_ours / (double)n_ours;
    double per_theirs = (double)best_theirs / (double)n_theirs;
    printf("%-36s cothread %8.1f ms %7.1f ns/%s | libuv %8.1f ms %7.1f ns/%s | ratio %.2f\n",
           what, best_ours / 1e6, per_ours, unit, best_theirs / 1e6, per_theirs, unit,
           per_ours / per_theirs);
    fflush(stdout);
}

int main(void) {
    cycles = (uint64_t)env_num("COT_BENCH_CYCLES", 1000000);
    int rounds = (int)env_num("COT_BENCH_ROUNDS", 5);
    printf("cothread %u.%u.%u vs libuv %s: %llu expiries per run, best of %d\n",
           cot_version() >> 16, (cot_version() >> 8) & 0xff, cot_version() & 0xff,
           uv_version_string(), (unsigned long long)cycles, rounds);
    printf("(wall time for restart rows, loop-thread CPU time for the heap and bulk rows)\n");
    compare("restart (timeout 0, from callback)", "cycle", rounds, cot_restart, uv_restart);
    compare("restart, libuv 1 iteration/cycle", "cycle", rounds, cot_restart, uv_restart_iter);
    compare("heap (10 000 timers, 0..1 ms)", "expiry", rounds, cot_heap, uv_heap);
    compare("bulk (all started, then expired)", "timer", rounds, cot_bulk, uv_bulk);
    return 0;
}
