/*
 * Context switch benchmarks: cothread's switch and coroutines against
 * swapcontext (what poco uses on Unix) and boost.context's jump_fcontext
 * (the fastest known), measured in one run of one process.
 *
 * 1. "native switch": two raw contexts (cot_context_make / cot_context_switch)
 *    ping-pong; ns per switch (one direction).
 * 1b. "native peer ring": 4 raw contexts passing the CPU round a ring with
 *    cot_context_switch_peer, from one call site; ns per pass (the floor of
 *    a scheduler's direct yield, such as 6.).
 * 2. "jump_fcontext": the same ping-pong with boost.context's fcontext
 *    (libboost_context, declared below with boost 1.74+'s signatures).
 * 3. "swapcontext": the same ping-pong with <ucontext.h> (a sigprocmask
 *    system call per switch).
 * 4. "coroutine yield": 4 coroutines on a cot_loop, each calling
 *    cot_coro_yield() in a loop until YIELDS yields were made in all; ns per
 *    yield (one coroutine to the next: the switch to the loop, the ready
 *    queue, the switch to the next coroutine, and one loop iteration per
 *    round of 4).
 * 5. "resume + yield": poco's model, a caller resuming one coroutine
 *    (cot_coro_resume) that yields back (cot_coro_yield); ns per round trip
 *    (two switches).
 *
 * Each figure is the best of ROUNDS runs, the sides alternating. Ratios:
 * native / jump_fcontext (target <= 1.2) and swapcontext / yield (target
 * >= 20), the latter twice: against one swapcontext switch, and against a
 * swapcontext round trip, which is what a yield costs in poco (the
 * coroutine switches to the scheduler, the scheduler to the next
 * coroutine: two swapcontext calls).
 *
 * Run (after building the library, see bench/c/Makefile):
 *     make -C bench/c run-switch
 *     COT_BENCH_SWITCHES=10000000 COT_BENCH_ROUNDS=5 bench/c/bench-switch
 */
#include <cothread.h>
#include <poco/poco.h>
#include <ucontext.h>

#include "common.h"

/* boost.context's fcontext API (boost/context/detail/fcontext.hpp, 1.74+). */
typedef void *fcontext_t;
typedef struct {
    fcontext_t fctx;
    void *data;
} transfer_t;
transfer_t jump_fcontext(fcontext_t const to, void *vp);
fcontext_t make_fcontext(void *sp, size_t size, void (*fn)(transfer_t));

#define STACK_SIZE (64 * 1024)

static uint64_t switches; /* per measurement */
static char stack_a[STACK_SIZE] __attribute__((aligned(64)));

/* ===== 1. cothread raw contexts ===== */

static cot_context main_ctx, other_ctx;

static void cot_echo(void *arg) {
    for (;;) arg = cot_context_switch(&other_ctx, main_ctx, arg);
}

static uint64_t bench_native(void) {
    other_ctx = cot_context_make(stack_a, sizeof stack_a, cot_echo);
    CHECK_PTR(other_ctx);
    uint64_t n = switches / 2;
    uint64_t t0 = wall_ns();
    for (uint64_t i = 0; i < n; i++) cot_context_switch(&main_ctx, other_ctx, NULL);
    return wall_ns() - t0;
}

/* ===== 1b. raw contexts in a ring of peers ===== */

#define RING 4

static cot_context ring[RING];
static char ring_stacks[RING][STACK_SIZE] __attribute__((aligned(64)));
static uint64_t passes_left;

/* One call site for every pass, as in a scheduler's yield. */
__attribute__((noinline)) static void ring_pass(int me) {
    cot_context_switch_peer(&ring[me], ring[me + 1 == RING ? 0 : me + 1], (void *)(intptr_t)(me + 1));
}

static void ring_member(void *arg) {
    int me = (int)(intptr_t)arg;
    if (me + 1 < RING) { /* start the next member */
        cot_context_switch(&ring[me], ring[me + 1], (void *)(intptr_t)(me + 1));
    }
    while (passes_left > 0) {
        passes_left--;
        ring_pass(me);
    }
    cot_context_switch(&ring[me], main_ctx, NULL); /* never resumed */
}

static uint64_t bench_ring(void) {
    for (int i = 0; i < RING; i++) {
        ring[i] = cot_context_make(ring_stacks[i], sizeof ring_stacks[i], ring_member);
        CHECK_PTR(ring[i]);
    }
    passes_left = switches;
    uint64_t t0 = wall_ns();
    cot_context_switch(&main_ctx, ring[0], (void *)0);
    return wall_ns() - t0;
}

/* ===== 2. boost.context ===== */

static void fc_echo(transfer_t t) {
    for (;;) t = jump_fcontext(t.fctx, NULL);
}

static uint64_t bench_fcontext(void) {
    fcontext_t other = make_fcontext(stack_a + sizeof stack_a, sizeof stack_a, fc_echo);
    uint64_t n = switches / 2;
    uint64_t t0 = wall_ns();
    for (uint64_t i = 0; i < n; i++) other = jump_fcontext(other, NULL).fctx;
    return wall_ns() - t0;
}

/* ===== 3. swapcontext ===== */

static ucontext_t uc_main, uc_other;

static void uc_echo(void) {
    for (;;) swapcontext(&uc_other, &uc_main);
}

static uint64_t bench_swapcontext(void) {
    CHECK(getcontext(&uc_other));
    uc_other.uc_stack.ss_sp = stack_a;
    uc_other.uc_stack.ss_size = sizeof stack_a;
    uc_other.uc_link = NULL;
    makecontext(&uc_other, uc_echo, 0);
    /* A syscall per switch: fewer of them keep the run short. */
    uint64_t n = switches / 2 / 10;
    uint64_t t0 = wall_ns();
    for (uint64_t i = 0; i < n; i++) swapcontext(&uc_main, &uc_other);
    return (wall_ns() - t0) * 10;
}

/* ===== 4. coroutines yielding on a loop ===== */

#define CORO_COUNT 4

static uint64_t yields_left;

static void *yielder(void *arg) {
    (void)arg;
    while (yields_left > 0) {
        yields_left--;
        cot_coro_yield();
    }
    return NULL;
}

static uint64_t bench_yield(void) {
    cot_loop *loop = cot_loop_new();
    CHECK_PTR(loop);
    cot_coro *co[CORO_COUNT];
    for (int i = 0; i < CORO_COUNT; i++) {
        CHECK(cot_coro_new(loop, yielder, NULL, STACK_SIZE, &co[i]));
        CHECK(cot_coro_start(co[i]));
    }
    yields_left = switches;
    uint64_t t0 = wall_ns();
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    uint64_t dt = wall_ns() - t0;
    for (int i = 0; i < CORO_COUNT; i++) CHECK(cot_coro_free(co[i]));
    CHECK(cot_loop_close(loop));
    return dt;
}

/* ===== 5. resume from outside + yield back ===== */

static void *bouncer(void *arg) {
    (void)arg;
    for (;;) cot_coro_yield();
    return NULL;
}

static uint64_t bench_resume(void) {
    cot_loop *loop = cot_loop_new();
    CHECK_PTR(loop);
    cot_coro *co;
    CHECK(cot_coro_new(loop, bouncer, NULL, STACK_SIZE, &co));
    uint64_t n = switches / 2;
    uint64_t t0 = wall_ns();
    for (uint64_t i = 0; i < n; i++) cot_coro_resume(co);
    uint64_t dt = wall_ns() - t0;
    CHECK(cot_coro_free(co)); /* ready, not running: its frames are dropped */
    CHECK(cot_loop_run(loop, COT_RUN_DEFAULT));
    CHECK(cot_loop_close(loop));
    return dt;
}

/* ===== 6. poco's API: coro_yield among 4 coroutines, round robin ===== */

static void poco_yielder(void *arg) {
    (void)arg;
    while (yields_left > 0) {
        yields_left--;
        coro_yield();
    }
}

static uint64_t bench_poco_yield(void) {
    Coro *co[CORO_COUNT];
    for (int i = 0; i < CORO_COUNT; i++) {
        co[i] = coro_create(poco_yielder, NULL, STACK_SIZE / sizeof(PlatformStackElement));
        CHECK_PTR(co[i]);
    }
    Scheduler *sched = round_robin_scheduler_create(co, CORO_COUNT);
    CHECK_PTR(sched);
    yields_left = switches;
    uint64_t t0 = wall_ns();
    scheduler_run(sched);
    uint64_t dt = wall_ns() - t0;
    round_robin_scheduler_free((RoundRobinScheduler *)sched);
    for (int i = 0; i < CORO_COUNT; i++) coro_free(co[i]);
    return dt;
}

static uint64_t best(uint64_t a, uint64_t b) {
    return a < b ? a : b;
}

int main(void) {
    switches = (uint64_t)env_num("COT_BENCH_SWITCHES", 10000000);
    int rounds = (int)env_num("COT_BENCH_ROUNDS", 5);
    uint64_t native = UINT64_MAX, ring_ns = UINT64_MAX, fc = UINT64_MAX, uc = UINT64_MAX, yield = UINT64_MAX, resume = UINT64_MAX;
    uint64_t poco = UINT64_MAX;
    for (int r = 0; r < rounds; r++) {
        native = best(native, bench_native());
        ring_ns = best(ring_ns, bench_ring());
        fc = best(fc, bench_fcontext());
        uc = best(uc, bench_swapcontext());
        yield = best(yield, bench_yield());
        resume = best(resume, bench_resume());
        poco = best(poco, bench_poco_yield());
    }
    double n = (double)switches;
    double ns_ring = ring_ns / n;
    double ns_native = native / n, ns_fc = fc / n, ns_uc = uc / n, ns_yield = yield / n;
    double ns_resume = resume / (n / 2);
    double ns_poco = poco / n;
    printf("context switches, best of %d, %llu switches each\n", rounds, (unsigned long long)switches);
    printf("  %-44s %8.2f ns/switch\n", "native switch (cot_context_switch)", ns_native);
    printf("  %-44s %8.2f ns/pass\n", "peer ring of 4 (cot_context_switch_peer)", ns_ring);
    printf("  %-44s %8.2f ns/switch\n", "boost.context jump_fcontext", ns_fc);
    printf("  %-44s %8.2f ns/switch\n", "swapcontext", ns_uc);
    printf("  %-44s %8.2f ns/yield\n", "cot_coro_yield among 4 coroutines", ns_yield);
    printf("  %-44s %8.2f ns/round trip\n", "cot_coro_resume + cot_coro_yield", ns_resume);
    printf("  %-44s %8.2f ns/yield\n", "poco API: coro_yield among 4 (round robin)", ns_poco);
    printf("ratios\n");
    printf("  native / jump_fcontext      %6.2f   (target <= 1.2)\n", ns_native / ns_fc);
    printf("  swapcontext / yield         %6.1f\n", ns_uc / ns_yield);
    printf("  swapcontext round trip / yield %5.1f   (a poco yield: two swapcontext calls)\n", 2 * ns_uc / ns_yield);
    printf("  swapcontext round trip / resume+yield %5.1f\n", 2 * ns_uc / ns_resume);
    printf("  swapcontext / native        %6.1f\n", ns_uc / ns_native);
    printf("  swapcontext / poco coro_yield  %5.1f   (target >= 20)\n", ns_uc / ns_poco);
    printf("  swapcontext round trip / poco coro_yield %5.1f\n", 2 * ns_uc / ns_poco);
    return 0;
}
