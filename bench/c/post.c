/*
 * Posts between loops (cot_group_post), against baselines in the same
 * process:
 *
 * 1. ping-pong, the target asleep: a message goes from loop 0 to loop 1 and
 *    back, each side idle in between, so every post wakes a sleeping
 *    thread. Baseline: two threads, each blocked in epoll_wait on its own
 *    eventfd, writing the other's (the least any eventfd wakeup costs).
 * 2. one-way stream, the target busy: this thread posts messages to a loop
 *    as fast as it can. Baseline: libuv's way, a mutex-protected queue and a
 *    uv_async_send per message. Both print messages per second and the
 *    eventfd writes per message (write(2) calls of 8 bytes, counted by
 *    interposing write).
 *
 * Settings: COT_BENCH_TRIPS (round trips, default 100000),
 * COT_BENCH_MESSAGES (stream, default 2000000), COT_BENCH_ROUNDS (best of,
 * default 3).
 */
#include <cothread.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <uv.h>

#include "common.h"

/* ---- counting eventfd writes ---- */

static atomic_long writes8;

/* Every write(2) of the process comes here (the library's and libuv's
 * calls resolve to the program's own symbol); 8-byte writes are eventfd
 * rings in this program. */
ssize_t write(int fd, const void *buf, size_t n) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (n == 8) atomic_fetch_add_explicit(&writes8, 1, memory_order_relaxed);
    return real(fd, buf, n);
}

/* ---- a one-shot event the main thread blocks on ---- */

struct done {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int set;
};

static void done_init(struct done *d) {
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    d->set = 0;
}

static void done_signal(struct done *d) {
    pthread_mutex_lock(&d->mu);
    d->set = 1;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static void done_wait(struct done *d) {
    pthread_mutex_lock(&d->mu);
    while (!d->set) pthread_cond_wait(&d->cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
}

/* ---- 1. ping-pong ---- */

struct pp {
    cot_group *g;
    long left;
    struct done done;
};

static void on_loop0(cot_loop *loop, void *data);

static void on_loop1(cot_loop *loop, void *data) {
    (void)loop;
    struct pp *p = data;
    CHECK(cot_group_post(p->g, 0, on_loop0, p));
}

static void on_loop0(cot_loop *loop, void *data) {
    (void)loop;
    struct pp *p = data;
    if (p->left-- == 0) {
        done_signal(&p->done);
        return;
    }
    CHECK(cot_group_post(p->g, 1, on_loop1, p));
}

/* ns per round trip through two cothread loops. */
static double pingpong_cothread(cot_group *g, long trips) {
    struct pp p = {.g = g, .left = trips};
    done_init(&p.done);
    uint64_t t0 = wall_ns();
    CHECK(cot_group_post(g, 0, on_loop0, &p));
    done_wait(&p.done);
    return (double)(wall_ns() - t0) / (double)trips;
}

struct side {
    int epfd, efd;
    struct side *other;
    long trips; /* the first side counts; the other answers forever */
    int first;
};

static void *side_run(void *arg) {
    struct side *s = arg;
    uint64_t one = 1, got;
    if (s->first) CHECK(write(s->other->efd, &one, 8));
    for (;;) {
        struct epoll_event ev;
        while (epoll_wait(s->epfd, &ev, 1, -1) < 1) {
        }
        CHECK(read(s->efd, &got, 8));
        if (s->first && --s->trips == 0) {
            uint64_t stop = 2; /* tells the other side to end */
            CHECK(write(s->other->efd, &stop, 8));
            return NULL;
        }
        if (!s->first && got >= 2) return NULL;
        CHECK(write(s->other->efd, &one, 8));
    }
}

/* ns per round trip between two threads blocked in epoll_wait. */
static double pingpong_eventfd(long trips) {
    struct side a = {.first = 1, .trips = trips}, b = {0};
    a.other = &b;
    b.other = &a;
    struct side *both[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        both[i]->epfd = epoll_create1(EPOLL_CLOEXEC);
        both[i]->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        struct epoll_event ev = {.events = EPOLLIN};
        CHECK(epoll_ctl(both[i]->epfd, EPOLL_CTL_ADD, both[i]->efd, &ev));
    }
    pthread_t tb, ta;
    uint64_t t0 = wall_ns();
    pthread_create(&tb, NULL, side_run, &b);
    pthread_create(&ta, NULL, side_run, &a);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    double ns = (double)(wall_ns() - t0) / (double)trips;
    for (int i = 0; i < 2; i++) {
        close(both[i]->epfd);
        close(both[i]->efd);
    }
    return ns;
}

/* ---- 2. stream ---- */

struct stream {
    long got, want;
    struct done done;
};

static void on_message(cot_loop *loop, void *data) {
    (void)loop;
    struct stream *s = data;
    if (++s->got == s->want) done_signal(&s->done);
}

struct result {
    double per_sec, writes_per_msg;
};

static struct result stream_cothread(cot_group *g, long messages) {
    struct stream s = {.want = messages};
    done_init(&s.done);
    long w0 = atomic_load(&writes8);
    uint64_t t0 = wall_ns();
    for (long i = 0; i < messages; i++) CHECK(cot_group_post(g, 0, on_message, &s));
    done_wait(&s.done);
    double secs = (double)(wall_ns() - t0) / 1e9;
    return (struct result){messages / secs, (double)(atomic_load(&writes8) - w0) / (double)messages};
}

/* libuv: posting a function as its users do, a queue of (function, data)
 * under a mutex and one uv_async_send per message (it writes the eventfd
 * only when no send is pending); the loop calls each function. */
struct job {
    void (*fn)(void *);
    void *data;
};

struct uv_stream {
    uv_loop_t loop;
    uv_async_t async;
    pthread_mutex_t mu;
    struct job *queue;
    long head, tail;
    long got, want;
    struct done done;
};

static void uv_count(void *data) {
    struct uv_stream *s = data;
    s->got++;
}

static void uv_on_async(uv_async_t *a) {
    struct uv_stream *s = a->data;
    pthread_mutex_lock(&s->mu);
    long from = s->head, to = s->tail;
    s->head = to;
    pthread_mutex_unlock(&s->mu);
    for (long i = from; i < to; i++) s->queue[i].fn(s->queue[i].data);
    if (s->got == s->want) {
        uv_close((uv_handle_t *)&s->async, NULL);
        done_signal(&s->done);
    }
}

static void *uv_thread(void *arg) {
    struct uv_stream *s = arg;
    uv_run(&s->loop, UV_RUN_DEFAULT);
    return NULL;
}

static struct result stream_libuv(long messages) {
    struct uv_stream s = {.want = messages};
    s.queue = calloc((size_t)messages, sizeof *s.queue);
    done_init(&s.done);
    pthread_mutex_init(&s.mu, NULL);
    CHECK(uv_loop_init(&s.loop));
    CHECK(uv_async_init(&s.loop, &s.async, uv_on_async));
    s.async.data = &s;
    pthread_t t;
    pthread_create(&t, NULL, uv_thread, &s);
    long w0 = atomic_load(&writes8);
    uint64_t t0 = wall_ns();
    for (long i = 0; i < messages; i++) {
        pthread_mutex_lock(&s.mu);
        s.queue[s.tail++] = (struct job){uv_count, &s};
        pthread_mutex_unlock(&s.mu);
        CHECK(uv_async_send(&s.async));
    }
    done_wait(&s.done);
    double secs = (double)(wall_ns() - t0) / 1e9;
    struct result r = {messages / secs, (double)(atomic_load(&writes8) - w0) / (double)messages};
    pthread_join(t, NULL);
    uv_loop_close(&s.loop);
    free(s.queue);
    return r;
}

int main(void) {
    long trips = (long)env_num("COT_BENCH_TRIPS", 100000);
    long messages = (long)env_num("COT_BENCH_MESSAGES", 2000000);
    int rounds = (int)env_num("COT_BENCH_ROUNDS", 3);

    cot_group *g2, *g1;
    cot_group_options o2 = {.loops = 2}, o1 = {.loops = 1};
    CHECK(cot_group_new(&o2, &g2));
    CHECK(cot_group_new(&o1, &g1));

    double best_pp = 1e18, best_efd = 1e18;
    struct result best_s = {0}, best_uv = {0};
    for (int r = 0; r < rounds; r++) {
        double a = pingpong_cothread(g2, trips), b = pingpong_eventfd(trips);
        struct result s = stream_cothread(g1, messages), u = stream_libuv(messages);
        printf("round %d: ping-pong %.0f ns (eventfd %.0f ns); stream %.0f msg/s, %.4f writes/msg"
               " (libuv %.0f msg/s, %.4f writes/msg)\n",
               r + 1, a, b, s.per_sec, s.writes_per_msg, u.per_sec, u.writes_per_msg);
        if (a < best_pp) best_pp = a;
        if (b < best_efd) best_efd = b;
        if (s.per_sec > best_s.per_sec) best_s = s;
        if (u.per_sec > best_uv.per_sec) best_uv = u;
    }
    CHECK(cot_group_free(g2));
    CHECK(cot_group_free(g1));

    printf("ping-pong round trip, target asleep: cothread %.0f ns, eventfd+epoll %.0f ns: ratio %.2f (target <= 1.2)\n",
           best_pp, best_efd, best_pp / best_efd);
    printf("one-way stream, target busy: cothread %.0f msg/s at %.4f eventfd writes/msg (target < 0.1); "
           "libuv queue+uv_async %.0f msg/s at %.4f: ratio %.2f\n",
           best_s.per_sec, best_s.writes_per_msg, best_uv.per_sec, best_uv.writes_per_msg,
           best_s.per_sec / best_uv.per_sec);
    return 0;
}
