/* poco-compatible API: the _from_isr forms, called from another thread and
 * from a signal handler while coroutines wait on the same primitives (the
 * scheduler sleeps in its event loop meanwhile and is woken through an
 * eventfd). Also run under ThreadSanitizer (scripts/tsan-c). */
#define _POSIX_C_SOURCE 200809L
#include <poco/poco.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "poco_log.h"

#define N 1000

static Semaphore sem;
static Queue queue;
static int queue_buf[16];
static Stream stream;
static uint8_t stream_buf[32];
static Event ev;
static Event sig_ev;

static void pause_us(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* RES_NOTIFY_FAILED (more than SCHEDULER_MAX_EXTERNAL_EVENT_COUNT external
 * events between two steps of the scheduler, which a fast producer thread
 * reaches) means, as in poco, that the change was made: it is not repeated.
 * Unlike poco, the waiters are woken all the same (the consumers below get
 * everything). */
static int failed_notifications;

static bool done(Result r) {
    if (r == RES_NOTIFY_FAILED) {
        ++failed_notifications;
        return true;
    }
    return r == RES_OK;
}

static void *producer_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < N; ++i) {
        while (!done(semaphore_release_from_isr(&sem))) {
            pause_us(10);
        }
    }
    for (int i = 0; i < N; ++i) {
        while (!done(queue_put_from_isr(&queue, &i))) {
            pause_us(10);
        }
    }
    for (int i = 0; i < N;) {
        uint8_t b[7];
        size_t n = 0;
        for (; n < sizeof b && i + (int)n < N; ++n) {
            b[n] = (uint8_t)('0' + (i + (int)n) % 10);
        }
        Result r = stream_send_from_isr(&stream, b, &n);
        if (done(r)) {
            i += (int)n;
        } else {
            CHECK_EQ(r, RES_STREAM_FULL);
            pause_us(10);
        }
    }
    for (int bit = 0; bit < 4; ++bit) {
        pause_us(1000); /* the scheduler drains its external events meanwhile */
        CHECK_EQ(event_set_from_isr(&ev, 1u << bit), RES_OK);
    }
    return NULL;
}

static void sem_consumer(void *ctx) {
    (void)ctx;
    int got = 0;
    while (got < N && semaphore_acquire(&sem, PLATFORM_TICKS_FOREVER) == RES_OK) {
        ++got;
    }
    LOG("semaphore: %d\n", got);
}

static void queue_consumer(void *ctx) {
    (void)ctx;
    int v = -1;
    for (int i = 0; i < N; ++i) {
        CHECK_EQ(queue_get(&queue, &v, PLATFORM_TICKS_FOREVER), RES_OK);
        CHECK_EQ(v, i);
    }
    LOG("queue: %d in order\n", N);
}

static void stream_consumer(void *ctx) {
    (void)ctx;
    static uint8_t buf[N];
    size_t n = N;
    CHECK_EQ(stream_receive(&stream, buf, &n, PLATFORM_TICKS_FOREVER), RES_OK);
    for (size_t i = 0; i < N; ++i) {
        CHECK_EQ(buf[i], '0' + i % 10);
    }
    LOG("stream: %zu bytes\n", n);
}

static void event_consumer(void *ctx) {
    (void)ctx;
    Flags f = event_get(&ev, 0xf, 0xf, true, PLATFORM_TICKS_FOREVER);
    LOG("event: %#x\n", (unsigned)f);
}

static void from_thread(void) {
    CHECK(semaphore_create_static(&sem, N) == &sem);
    for (int i = 0; i < N; ++i) {
        CHECK_EQ(semaphore_acquire_from_isr(&sem), RES_OK);
    }
    CHECK_EQ(semaphore_acquire_from_isr(&sem), RES_TIMEOUT);
    queue_create_static(&queue, 16, sizeof(int), (uint8_t *)queue_buf);
    stream_create_static(&stream, sizeof stream_buf, stream_buf);
    event_create_static(&ev, 0);
    Coro *t[] = {
        coro_create(sem_consumer, NULL, DEFAULT_STACK_SIZE),
        coro_create(queue_consumer, NULL, DEFAULT_STACK_SIZE),
        coro_create(stream_consumer, NULL, DEFAULT_STACK_SIZE),
        coro_create(event_consumer, NULL, DEFAULT_STACK_SIZE),
    };
    Scheduler *s = round_robin_scheduler_create(t, 4);
    scheduler_start(s);
    /* Let every coroutine wait first, so that the thread has to wake them. */
    for (int i = 0; i < 4; ++i) {
        scheduler_run_once(s);
    }
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, producer_thread, NULL), 0);
    scheduler_run(s);
    CHECK_EQ(pthread_join(th, NULL), 0);
    EXPECT_LOG("semaphore: 1000\nqueue: 1000 in order\nstream: 1000 bytes\nevent: 0xf\n");
    printf("from_thread: %d of the notifications found the scheduler's external events full\n",
           failed_notifications);
    CHECK_EQ(sem.slots_remaining, 0);
    /* Nobody waits now and the scheduler takes no more steps: each
     * notification takes one of its external events (it is the context's
     * scheduler, which scheduler_run set) until none is left, as in poco. */
    RoundRobinScheduler *rr = (RoundRobinScheduler *)s;
    CHECK(context_get_scheduler() == s);
    CHECK_EQ(queue_item_count(&rr->event_queue), 0);
    for (int i = 0; i < N; ++i) {
        CHECK_EQ(semaphore_release_from_isr(&sem),
                 i < SCHEDULER_MAX_EXTERNAL_EVENT_COUNT ? RES_OK : RES_NOTIFY_FAILED);
    }
    CHECK_EQ(sem.slots_remaining, N); /* released all the same */
    CHECK_EQ(queue_item_count(&rr->event_queue), SCHEDULER_MAX_EXTERNAL_EVENT_COUNT);
    CHECK_EQ(rr->external_events[0].type, CORO_EVTSRC_SEMAPHORE_RELEASE);
    CHECK(rr->external_events[0].params.subject == &sem);
    CHECK_EQ(semaphore_release_from_isr(&sem), RES_OVERFLOW);
    int v;
    CHECK_EQ(queue_get_from_isr(&queue, &v), RES_QUEUE_EMPTY);
    CHECK_EQ(queue_put_from_isr(&queue, &v), RES_NOTIFY_FAILED);
    CHECK_EQ(queue_item_count(&queue), 1);
    /* Without a scheduler to tell, there is nothing to fail. */
    context_set_scheduler(NULL);
    CHECK_EQ(queue_get_from_isr(&queue, &v), RES_OK);
    CHECK_EQ(queue_put_from_isr(&queue, &v), RES_OK);
    CHECK_EQ(queue_get_from_isr(&queue, &v), RES_OK);
    size_t n = 4;
    uint8_t b[4];
    CHECK_EQ(stream_receive_from_isr(&stream, b, &n), RES_STREAM_EMPTY);
    CHECK_EQ(event_get_from_isr(&ev, 0xf, 0), 0);
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    for (int i = 0; i < 4; ++i) {
        coro_free(t[i]);
    }
}

/* From a signal handler: the scheduler sleeps in epoll until the handler's
 * event_set_from_isr wakes it. */
static void on_signal(int signum) {
    (void)signum;
    event_set_from_isr(&sig_ev, 0x2);
}

static pthread_t main_thread;

static void *kill_thread(void *arg) {
    (void)arg;
    pause_us(20000);
    pthread_kill(main_thread, SIGUSR1);
    return NULL;
}

static void signal_waiter(void *ctx) {
    (void)ctx;
    Flags f = event_get(&sig_ev, 0x2, 0x2, false, 5000);
    LOG("signal: %#x\n", (unsigned)f);
}

static void from_signal(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
    event_create_static(&sig_ev, 0);
    main_thread = pthread_self();
    Coro *t[] = {coro_create(signal_waiter, NULL, DEFAULT_STACK_SIZE)};
    Scheduler *s = round_robin_scheduler_create(t, 1);
    pthread_t th;
    CHECK_EQ(pthread_create(&th, NULL, kill_thread, NULL), 0);
    scheduler_run(s);
    CHECK_EQ(pthread_join(th, NULL), 0);
    EXPECT_LOG("signal: 0x2\n");
    round_round_robin_scheduler_free((RoundRobinScheduler *)s);
    coro_free(t[0]);
}

int main(void) {
    from_thread();
    from_signal();
    printf("test_poco_isr: ok\n");
    return 0;
}
