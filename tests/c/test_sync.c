/* The synchronization building blocks through the C ABI: chains (closed
 * marker, push order, four pushing threads), the per-thread resume queue,
 * parking, the FIFO-handoff mutex (order, four threads handing it over), the
 * thread pool (jobs from several threads, stop cancelling queued jobs, a loop
 * on a shared pool), the timer service (waits, cancels and interrupts from
 * other threads), and bad input everywhere. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "check.h"

/* ---- chains ---------------------------------------------------------- */

struct node {
    void *next;
    int thread, seq;
};

static const char closed_marker = 0;
#define CLOSED ((const void *)&closed_marker)

static void test_chain(void) {
    struct node n[5];
    for (int i = 0; i < 5; i++) n[i] = (struct node){NULL, 0, i};
    void *chain = NULL;
    for (int i = 0; i < 3; i++) CHECK(cot_chain_push(&chain, &n[i], CLOSED));
    struct node *list = cot_chain_take(&chain, NULL, CLOSED);
    for (int i = 0; i < 3; i++) { /* oldest first, NULL-terminated */
        CHECK(list == &n[i]);
        list = list->next;
    }
    CHECK(list == NULL);
    CHECK(chain == NULL);
    CHECK(cot_chain_take(&chain, NULL, CLOSED) == NULL); /* empty */

    CHECK(cot_chain_push(&chain, &n[3], CLOSED));
    list = cot_chain_take(&chain, CLOSED, CLOSED); /* take and close */
    CHECK(list == &n[3] && n[3].next == NULL);
    CHECK(chain == CLOSED);
    n[4].next = &n[0];
    CHECK(!cot_chain_push(&chain, &n[4], CLOSED)); /* refused ... */
    CHECK(n[4].next == &n[0]);                     /* ... and untouched */
    CHECK(cot_chain_take(&chain, CLOSED, CLOSED) == NULL); /* closed twice */
    CHECK(cot_chain_take(&chain, NULL, CLOSED) == NULL);   /* reopened */
    CHECK(chain == NULL);
    CHECK(cot_chain_push(&chain, &n[4], NULL)); /* NULL never refuses */
    CHECK(cot_chain_take(&chain, NULL, NULL) == &n[4] && n[4].next == NULL);

    CHECK(!cot_chain_push(NULL, &n[0], CLOSED));
    CHECK(!cot_chain_push(&chain, NULL, CLOSED));
    CHECK(cot_chain_take(NULL, NULL, CLOSED) == NULL);
}

#define CHAIN_THREADS 4
#define CHAIN_PER_THREAD 2000
static struct node chain_nodes[CHAIN_THREADS][CHAIN_PER_THREAD];
static void *shared_chain;
static atomic_int chain_refused;

static void *chain_pusher(void *arg) {
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < CHAIN_PER_THREAD; i++) {
        chain_nodes[t][i] = (struct node){NULL, t, i};
        if (!cot_chain_push(&shared_chain, &chain_nodes[t][i], CLOSED)) atomic_fetch_add(&chain_refused, 1);
    }
    return NULL;
}

static void test_chain_threads(void) {
    pthread_t th[CHAIN_THREADS];
    for (intptr_t t = 0; t < CHAIN_THREADS; t++) CHECK_EQ(pthread_create(&th[t], NULL, chain_pusher, (void *)t), 0);
    int last[CHAIN_THREADS], taken = 0;
    for (int t = 0; t < CHAIN_THREADS; t++) last[t] = -1;
    for (int round = 0; round < 40; round++) {
        struct node *n = cot_chain_take(&shared_chain, round == 39 ? CLOSED : NULL, CLOSED);
        for (; n; n = n->next, taken++) {
            CHECK(n->seq > last[n->thread]); /* each thread's nodes in push order */
            last[n->thread] = n->seq;
        }
        sched_yield();
    }
    for (int t = 0; t < CHAIN_THREADS; t++) CHECK_EQ(pthread_join(th[t], NULL), 0);
    CHECK(cot_chain_take(&shared_chain, CLOSED, CLOSED) == NULL); /* closed: nothing pushed */
    CHECK_EQ(taken + atomic_load(&chain_refused), CHAIN_THREADS * CHAIN_PER_THREAD);
}

/* ---- resume queue ------------------------------------------------------ */

static int items[5];

static void *resume_queue_thread(void *arg) {
    cot_resume_queue *mine = cot_resume_queue_current();
    CHECK(mine != NULL && mine != (cot_resume_queue *)arg); /* one queue per thread */
    CHECK(!cot_resume_queue_active(mine));
    CHECK(cot_resume_queue_len(mine) == 0);
    CHECK(cot_resume_queue_enter(mine));
    CHECK_EQ(cot_resume_queue_push(mine, &items[4]), 0); /* dropped at thread exit */
    return NULL;
}

static int ran_sum;

/* Runs an item: items[0] queues items[1] through run (coro mode: queued) and
 * pushes items[2]; each adds its index + 1 to ran_sum. */
static void run_item(void *item) {
    cot_resume_queue *q = cot_resume_queue_current();
    int i = (int)((int *)item - items);
    ran_sum += i + 1;
    if (i == 0) {
        CHECK_EQ(cot_resume_queue_run(q, &items[1], run_item), 0);
        CHECK_EQ(cot_resume_queue_push(q, &items[2]), 0);
    }
}

static void test_resume_queue(void) {
    cot_resume_queue *q = cot_resume_queue_current();
    CHECK(q != NULL && q == cot_resume_queue_current());
    CHECK(!cot_resume_queue_active(q));
    CHECK(cot_resume_queue_enter(q));
    CHECK(cot_resume_queue_active(q));
    CHECK(!cot_resume_queue_enter(q)); /* already in coro mode */
    CHECK(cot_resume_queue_pop(q) == NULL);
    CHECK(cot_resume_queue_yield(q, &items[0]) == &items[0]); /* empty: itself */
    CHECK(cot_resume_queue_yield(q, NULL) == NULL);
    CHECK_EQ(cot_resume_queue_push(q, NULL), COT_EINVAL);
    CHECK_EQ(cot_resume_queue_push(NULL, &items[0]), COT_EINVAL);
    for (int i = 0; i < 3; i++) CHECK_EQ(cot_resume_queue_push(q, &items[i]), 0);
    CHECK(cot_resume_queue_len(q) == 3);

    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, resume_queue_thread, q), 0);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK(cot_resume_queue_len(q) == 3); /* untouched by the other thread */

    CHECK(cot_resume_queue_yield(q, &items[3]) == &items[0]);
    CHECK(cot_resume_queue_yield(q, NULL) == &items[1]);
    CHECK(cot_resume_queue_pop(q) == &items[2]);
    CHECK(cot_resume_queue_pop(q) == &items[3]);
    CHECK(cot_resume_queue_pop(q) == NULL);
    cot_resume_queue_leave(q);
    CHECK(!cot_resume_queue_active(q));
    /* NULL queue: refused, harmless */
    CHECK(!cot_resume_queue_enter(NULL));
    CHECK(!cot_resume_queue_active(NULL));
    CHECK(cot_resume_queue_pop(NULL) == NULL);
    CHECK(cot_resume_queue_yield(NULL, &items[0]) == NULL);
    CHECK(cot_resume_queue_len(NULL) == 0);
    cot_resume_queue_leave(NULL);

    /* run: in normal mode it runs the item, then what was queued meanwhile */
    ran_sum = 0;
    CHECK_EQ(cot_resume_queue_run(q, &items[0], run_item), 1);
    CHECK_EQ(ran_sum, 1 + 2 + 3);
    CHECK(!cot_resume_queue_active(q) && cot_resume_queue_len(q) == 0);
    CHECK_EQ(cot_resume_queue_run(q, &items[0], NULL), COT_EINVAL);
    CHECK_EQ(cot_resume_queue_run(q, NULL, run_item), COT_EINVAL);
    CHECK_EQ(cot_resume_queue_run(NULL, &items[0], run_item), COT_EINVAL);
}

/* ---- parking ----------------------------------------------------------- */

static atomic_uint park_word;

static void *parker(void *arg) {
    (void)arg;
    while (atomic_load(&park_word) == 0) CHECK_EQ(cot_park((const uint32_t *)&park_word, 0, COT_FOREVER), 0);
    return NULL;
}

static void test_park(void) {
    CHECK_EQ(cot_park(NULL, 0, 0), COT_EINVAL);
    CHECK_EQ(cot_unpark_one(NULL), COT_EINVAL);
    CHECK_EQ(cot_unpark_all(NULL), COT_EINVAL);
    CHECK_EQ(cot_park((const uint32_t *)&park_word, 1, COT_FOREVER), 0); /* differs */
    uint64_t t0 = cot_monotonic_ns();
    CHECK_EQ(cot_park((const uint32_t *)&park_word, 0, 2000000), COT_ETIMEDOUT);
    CHECK(cot_monotonic_ns() - t0 >= 2000000);
    CHECK(strcmp(cot_err_name(COT_ETIMEDOUT), "COT_ETIMEDOUT") == 0);
    CHECK(strcmp(cot_strerror(COT_ETIMEDOUT), "timed out") == 0);

    pthread_t th[3];
    for (int i = 0; i < 3; i++) CHECK_EQ(pthread_create(&th[i], NULL, parker, NULL), 0);
    struct timespec ms = {0, 10000000};
    nanosleep(&ms, NULL);
    atomic_store(&park_word, 1);
    int woken = cot_unpark_all((const uint32_t *)&park_word);
    CHECK(woken >= 0 && woken <= 3);
    for (int i = 0; i < 3; i++) CHECK_EQ(pthread_join(th[i], NULL), 0);
    CHECK_EQ(cot_unpark_one((const uint32_t *)&park_word), 0); /* nobody parked */
}

/* ---- mutex ------------------------------------------------------------- */

struct waiter {
    void *next;
    int id;
    atomic_uint granted;
};

static int id_of(void *node) { return node ? ((struct waiter *)node)->id : -1; }

static void test_mutex(void) {
    cot_mutex m = {0};
    struct waiter w[5];
    for (int i = 0; i < 5; i++) {
        w[i].next = NULL;
        w[i].id = i;
        atomic_init(&w[i].granted, 0);
    }
    CHECK(!cot_mutex_is_locked(&m));
    CHECK(cot_mutex_unlock(&m) == NULL); /* unlocking an unlocked mutex: NULL, no change */
    CHECK(!cot_mutex_is_locked(&m));
    CHECK(cot_mutex_lock(&m, &w[0])); /* free: ours at once */
    CHECK(!cot_mutex_try_lock(&m));
    for (int i = 1; i < 4; i++) CHECK(!cot_mutex_lock(&m, &w[i])); /* queued */
    CHECK_EQ(id_of(cot_mutex_unlock(&m)), 1); /* FIFO handoff */
    CHECK_EQ(id_of(cot_mutex_unlock(&m)), 2);
    CHECK(!cot_mutex_lock(&m, &w[4]));
    CHECK_EQ(id_of(cot_mutex_unlock(&m)), 3);
    CHECK(w[3].next == NULL);
    CHECK_EQ(id_of(cot_mutex_unlock(&m)), 4);
    CHECK(cot_mutex_is_locked(&m)); /* owned by 4 */
    CHECK(cot_mutex_unlock(&m) == NULL);
    CHECK(!cot_mutex_is_locked(&m));
    CHECK(cot_mutex_try_lock(&m));
    CHECK(cot_mutex_unlock(&m) == NULL);

    CHECK(!cot_mutex_lock(NULL, &w[0]));
    CHECK(!cot_mutex_lock(&m, NULL));
    CHECK(!cot_mutex_is_locked(&m));
    CHECK(!cot_mutex_try_lock(NULL));
    CHECK(cot_mutex_unlock(NULL) == NULL);
    CHECK(!cot_mutex_is_locked(NULL));
}

#define MUTEX_THREADS 4
#define MUTEX_ROUNDS 5000
static cot_mutex shared_mutex; /* zero: unlocked */
static long protected_counter; /* plain data, guarded by shared_mutex */

static void hand_over(void *next) {
    if (!next) return;
    atomic_uint *granted = &((struct waiter *)next)->granted;
    atomic_store_explicit(granted, 1, memory_order_release);
    cot_unpark_one((const uint32_t *)granted); /* the waiter may be gone: harmless */
}

static void *mutex_worker(void *arg) {
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < MUTEX_ROUNDS; i++) {
        struct waiter me = {NULL, t * MUTEX_ROUNDS + i, 0};
        if (!cot_mutex_lock(&shared_mutex, &me))
            while (atomic_load_explicit(&me.granted, memory_order_acquire) == 0)
                cot_park((const uint32_t *)&me.granted, 0, COT_FOREVER);
        protected_counter++;
        hand_over(cot_mutex_unlock(&shared_mutex));
    }
    return NULL;
}

static void test_mutex_threads(void) {
    pthread_t th[MUTEX_THREADS];
    for (intptr_t t = 0; t < MUTEX_THREADS; t++) CHECK_EQ(pthread_create(&th[t], NULL, mutex_worker, (void *)t), 0);
    for (int t = 0; t < MUTEX_THREADS; t++) CHECK_EQ(pthread_join(th[t], NULL), 0);
    CHECK(!cot_mutex_is_locked(&shared_mutex));
    CHECK_EQ(protected_counter, (long)MUTEX_THREADS * MUTEX_ROUNDS);
}

/* ---- pool -------------------------------------------------------------- */

static cot_pool *counting_pool;
static atomic_int counted;

static void count_job(void *data, int status) {
    CHECK_EQ(status, 0);
    CHECK(cot_pool_is_current(data));
    atomic_fetch_add(&counted, 1);
}

static void *pool_submitter(void *arg) {
    (void)arg;
    for (int i = 0; i < 100; i++) CHECK_EQ(cot_pool_submit(counting_pool, count_job, counting_pool), 0);
    return NULL;
}

static atomic_int blocker_started, blocker_release;
static void blocker(void *data, int status) {
    (void)data;
    CHECK_EQ(status, 0);
    atomic_store(&blocker_started, 1);
    while (!atomic_load(&blocker_release)) sched_yield();
}

static int logged[8], logged_status[8], nlogged;
static void log_job(void *data, int status) {
    logged[nlogged] = (int)(intptr_t)data;
    logged_status[nlogged++] = status;
}

static void *stopper(void *pool) {
    CHECK_EQ(cot_pool_stop(pool), 0);
    return NULL;
}

static void test_pool(void) {
    counting_pool = cot_pool_new(2);
    CHECK(counting_pool);
    CHECK_EQ(cot_pool_size(counting_pool), 2);
    CHECK(!cot_pool_is_current(counting_pool));
    pthread_t th[4];
    for (int i = 0; i < 4; i++) CHECK_EQ(pthread_create(&th[i], NULL, pool_submitter, NULL), 0);
    for (int i = 0; i < 4; i++) CHECK_EQ(pthread_join(th[i], NULL), 0);
    while (atomic_load(&counted) < 400) sched_yield();
    CHECK(!cot_pool_any_enqueued(counting_pool));
    cot_pool_free(counting_pool);

    cot_pool *cores = cot_pool_new(0);
    CHECK(cot_pool_size(cores) >= 1);
    cot_pool_free(cores);

    /* One thread kept busy; three jobs queued behind it are cancelled by a
     * stop from another thread, in order, on that thread. */
    cot_pool *p = cot_pool_new(1);
    CHECK_EQ(cot_pool_submit(p, blocker, NULL), 0);
    while (!atomic_load(&blocker_started)) sched_yield();
    for (intptr_t i = 1; i <= 3; i++) CHECK_EQ(cot_pool_submit(p, log_job, (void *)i), 0);
    CHECK(cot_pool_any_enqueued(p));
    pthread_t st;
    CHECK_EQ(pthread_create(&st, NULL, stopper, p), 0);
    while (cot_pool_any_enqueued(p)) sched_yield();
    atomic_store(&blocker_release, 1);
    CHECK_EQ(pthread_join(st, NULL), 0);
    CHECK_EQ(nlogged, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(logged[i], i + 1);
        CHECK_EQ(logged_status[i], COT_ECANCELED);
    }
    CHECK_EQ(cot_pool_submit(p, log_job, NULL), COT_ECANCELED); /* refused, not called */
    CHECK_EQ(cot_pool_stop(p), 0);                              /* idempotent */
    CHECK_EQ(nlogged, 3);
    cot_pool_free(p);

    CHECK_EQ(cot_pool_submit(NULL, log_job, NULL), COT_EINVAL);
    p = cot_pool_new(1);
    CHECK_EQ(cot_pool_submit(p, NULL, NULL), COT_EINVAL);
    cot_pool_free(p);
    CHECK_EQ(cot_pool_stop(NULL), COT_EINVAL);
    CHECK(!cot_pool_any_enqueued(NULL));
    CHECK(!cot_pool_is_current(NULL));
    CHECK_EQ(cot_pool_size(NULL), 0);
    cot_pool_free(NULL);
}

/* cot_pool_submit_copy: the job gets its own copy of the bytes, made at the
 * submit, pointer-aligned; a cancelled job gets it too. */
struct copied {
    uintptr_t words[6]; /* COT_POOL_COPY_MAX bytes */
};
static struct copied copies_seen[4];
static int copy_status[4], copies;
static atomic_int copy_runs;
static void copy_job(void *data, int status) {
    CHECK_EQ((uintptr_t)data % sizeof(void *), 0);
    memcpy(&copies_seen[copies], data, sizeof(struct copied));
    copy_status[copies++] = status;
    atomic_fetch_add(&copy_runs, 1);
}

static void test_pool_copy(void) {
    CHECK_EQ(sizeof(struct copied), COT_POOL_COPY_MAX);
    cot_pool *p = cot_pool_new(1);
    struct copied c;
    for (int i = 0; i < 6; i++) c.words[i] = 100 + i;
    CHECK_EQ(cot_pool_submit_copy(p, copy_job, &c, sizeof c), 0);
    for (int i = 0; i < 6; i++) c.words[i] = 0; /* the job's copy is unaffected */
    while (atomic_load(&copy_runs) < 1) sched_yield();
    CHECK_EQ(copy_status[0], 0);
    for (int i = 0; i < 6; i++) CHECK_EQ(copies_seen[0].words[i], (uintptr_t)(100 + i));

    /* Fewer bytes: those are copied; no bytes, NULL data: allowed. */
    uint16_t small = 0xbeef;
    CHECK_EQ(cot_pool_submit_copy(p, copy_job, &small, sizeof small), 0);
    CHECK_EQ(cot_pool_submit_copy(p, copy_job, NULL, 0), 0);
    while (atomic_load(&copy_runs) < 3) sched_yield();
    uint16_t got;
    memcpy(&got, &copies_seen[1], sizeof got);
    CHECK_EQ(got, 0xbeef);

    /* Bad input: refused, nothing queued, nothing called. */
    CHECK_EQ(cot_pool_submit_copy(p, copy_job, &c, COT_POOL_COPY_MAX + 1), COT_EINVAL);
    CHECK_EQ(cot_pool_submit_copy(p, copy_job, NULL, 8), COT_EINVAL);
    CHECK_EQ(cot_pool_submit_copy(p, NULL, &c, 8), COT_EINVAL);
    CHECK_EQ(cot_pool_submit_copy(NULL, copy_job, &c, 8), COT_EINVAL);

    /* A stopped pool refuses; a queued copy cancelled by the stop is called
     * with COT_ECANCELED and its bytes. */
    atomic_store(&blocker_started, 0);
    atomic_store(&blocker_release, 0);
    CHECK_EQ(cot_pool_submit(p, blocker, NULL), 0);
    while (!atomic_load(&blocker_started)) sched_yield();
    c.words[0] = 7;
    CHECK_EQ(cot_pool_submit_copy(p, copy_job, &c, sizeof c), 0);
    pthread_t st;
    CHECK_EQ(pthread_create(&st, NULL, stopper, p), 0);
    while (cot_pool_any_enqueued(p)) sched_yield();
    atomic_store(&blocker_release, 1);
    CHECK_EQ(pthread_join(st, NULL), 0);
    CHECK_EQ(copies, 4);
    CHECK_EQ(copy_status[3], COT_ECANCELED);
    CHECK_EQ(copies_seen[3].words[0], 7u);
    CHECK_EQ(cot_pool_submit_copy(p, copy_job, &c, sizeof c), COT_ECANCELED);
    CHECK_EQ(copies, 4);
    cot_pool_free(p);
}

static atomic_int loop_work_ran;
static int loop_after_status[2], loop_after_calls;
static void loop_work(void *data) {
    (void)data;
    atomic_fetch_add(&loop_work_ran, 1);
}
static void loop_after(cot_loop *loop, cot_req req, int status, void *data) {
    (void)loop;
    (void)req;
    loop_after_status[(intptr_t)data] = status;
    loop_after_calls++;
}

static void test_loop_on_a_shared_pool(void) {
    cot_loop *loop = cot_loop_new();
    cot_pool *p = cot_pool_new(1);
    CHECK_EQ(cot_loop_set_pool(NULL, p), COT_EINVAL);
    CHECK_EQ(cot_loop_set_pool(loop, NULL), COT_EINVAL);
    CHECK_EQ(cot_loop_set_pool(loop, p), 0);
    CHECK_EQ(cot_loop_set_pool(loop, p), COT_EBUSY);
    CHECK_EQ(cot_loop_set_pool_size(loop, 2), COT_EBUSY);
    CHECK_EQ(cot_work_submit(loop, loop_work, loop_after, (void *)0, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(loop_after_status[0], 0);
    cot_pool_free(p); /* stopped and released; the loop keeps the pool's state */
    CHECK_EQ(cot_work_submit(loop, loop_work, loop_after, (void *)1, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(loop_after_calls, 2);
    CHECK_EQ(loop_after_status[1], COT_ECANCELED);
    CHECK_EQ(atomic_load(&loop_work_ran), 1);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ---- timers ------------------------------------------------------------ */

static cot_timers *timers;
static int entry[8];
static atomic_int adder_go;

static void *late_adder(void *arg) {
    (void)arg;
    while (!atomic_load(&adder_go)) sched_yield();
    CHECK_EQ(cot_timers_add(timers, cot_monotonic_ns() + 1000000, NULL, &entry[5]), 0);
    return NULL;
}

static void *interrupter(void *arg) {
    (void)arg;
    struct timespec ms = {0, 5000000};
    nanosleep(&ms, NULL);
    CHECK_EQ(cot_timers_interrupt(timers), 0);
    return NULL;
}

static void test_timers(void) {
    timers = cot_timers_new();
    CHECK(timers);
    uint64_t now = cot_monotonic_ns();
    const uint64_t hour = 3600ull * 1000000000ull;
    CHECK(cot_timers_next(timers) == UINT64_MAX);
    CHECK_EQ(cot_timers_add(timers, now - 10, NULL, &entry[0]), 0);
    CHECK_EQ(cot_timers_add(timers, now - 20, &entry, &entry[1]), 0);
    CHECK_EQ(cot_timers_add(timers, now - 10, NULL, &entry[2]), 0);
    CHECK_EQ(cot_timers_add(timers, now + hour, &entry, &entry[3]), 0);
    CHECK_EQ(cot_timers_add(timers, now + hour, &entry, &entry[4]), 0);
    CHECK(cot_timers_len(timers) == 5);
    CHECK(cot_timers_next(timers) == now - 20);
    CHECK_EQ(cot_timers_free(timers), COT_EBUSY);
    /* due ones: by deadline, then add order; then nothing due */
    CHECK(cot_timers_wait(timers, 0) == &entry[1]);
    CHECK(cot_timers_wait(timers, 0) == &entry[0]);
    CHECK(cot_timers_wait(timers, 0) == &entry[2]);
    CHECK(cot_timers_wait(timers, 0) == NULL);
    CHECK(cot_timers_wait(timers, cot_monotonic_ns() + 1000000) == NULL); /* times out */
    CHECK(cot_timers_next(timers) == now + hour);
    /* cancel by ident: the earliest first, same deadline in add order */
    CHECK(cot_timers_cancel(timers, &entry) == &entry[3]);
    CHECK(cot_timers_cancel(timers, &entry) == &entry[4]);
    CHECK(cot_timers_cancel(timers, &entry) == NULL);
    CHECK(cot_timers_cancel(timers, NULL) == NULL);
    CHECK(cot_timers_len(timers) == 0);

    /* another thread adds while this one waits without limit */
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, late_adder, NULL), 0);
    atomic_store(&adder_go, 1);
    CHECK(cot_timers_wait(timers, UINT64_MAX) == &entry[5]);
    CHECK_EQ(pthread_join(th, NULL), 0);
    /* another thread interrupts a wait; an hour-away entry stays */
    CHECK_EQ(cot_timers_add(timers, cot_monotonic_ns() + hour, &entry[6], &entry[6]), 0);
    CHECK_EQ(pthread_create(&th, NULL, interrupter, NULL), 0);
    CHECK(cot_timers_wait(timers, UINT64_MAX) == NULL);
    CHECK_EQ(pthread_join(th, NULL), 0);
    CHECK_EQ(cot_timers_interrupt(timers), 0);
    CHECK_EQ(cot_timers_interrupt(timers), 0);
    CHECK(cot_timers_wait(timers, 0) == NULL); /* the pending interrupt, once */
    CHECK(cot_timers_cancel(timers, &entry[6]) == &entry[6]);

    CHECK_EQ(cot_timers_add(timers, now, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_timers_add(NULL, now, NULL, &entry[0]), COT_EINVAL);
    CHECK(cot_timers_cancel(NULL, &entry) == NULL);
    CHECK(cot_timers_wait(NULL, 0) == NULL);
    CHECK_EQ(cot_timers_interrupt(NULL), COT_EINVAL);
    CHECK(cot_timers_next(NULL) == UINT64_MAX);
    CHECK(cot_timers_len(NULL) == 0);
    CHECK_EQ(cot_timers_free(NULL), COT_EINVAL);
    CHECK_EQ(cot_timers_free(timers), 0);
}

int main(void) {
    test_chain();
    test_chain_threads();
    test_resume_queue();
    test_park();
    test_mutex();
    test_mutex_threads();
    test_pool();
    test_pool_copy();
    test_loop_on_a_shared_pool();
    test_timers();
    puts("test_sync ok");
    return 0;
}
