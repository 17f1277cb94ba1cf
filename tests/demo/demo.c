/* cothread demo: a tiny run loop over the core scheduler.
 *
 * The core never runs tasks: it keeps them in queues and says which one is
 * next. Here a task is a C function with some state; the loop takes the ready
 * head, runs it, and the task places itself again (later, on a signal, after
 * a delay). A ticker notifies a signal every 20 ms; two listeners wait on it;
 * a reporter waits until both "left" and "right" were notified (onall).
 */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <stdio.h>
#include <time.h>

typedef struct job job;
struct job {
    const char *name;
    void (*step)(cot_sched *s, cot_task self, job *j);
    int count;
};

static int tick, left, right; /* signal keys: addresses we own */
static const void *both;      /* onall(left, right) */

static void ticker(cot_sched *s, cot_task self, job *j) {
    printf("%-8s tick %d\n", j->name, ++j->count);
    cot_sched_notify(s, &tick, COT_LATER); /* wake every listener, in order */
    if (j->count < 3)
        cot_sched_delay(s, self, 20 * 1000 * 1000); /* again in 20 ms */
}

static void listener(cot_sched *s, cot_task self, job *j) {
    if (j->count++ > 0) {
        printf("%-8s heard tick %d\n", j->name, j->count - 1);
        cot_sched_notify(s, j->name[0] == 'l' ? (void *)&left : (void *)&right, COT_LATER);
    }
    if (j->count <= 3) cot_sched_wait(s, self, &tick);
}

static void reporter(cot_sched *s, cot_task self, job *j) {
    if (j->count++ > 0) printf("%-8s both listeners answered (%d)\n", j->name, j->count - 1);
    if (j->count <= 3) cot_sched_wait(s, self, both);
}

/* Runs ready tasks; sleeps until the next wake time when none is ready. */
static void run(cot_sched *s) {
    for (;;) {
        cot_sched_take_due(s);
        cot_task t = cot_sched_ready_head(s);
        if (t == 0) {
            uint64_t wake;
            if (cot_sched_next_wake(s, &wake) == 0) return; /* nothing left */
            uint64_t now = cot_sched_now(s);
            if (wake > now) {
                struct timespec d = {(time_t)((wake - now) / 1000000000u), (long)((wake - now) % 1000000000u)};
                nanosleep(&d, NULL);
            }
            continue;
        }
        void *data;
        cot_task_data(s, t, &data);
        cot_sched_unschedule(s, t); /* the task places itself again */
        job *j = data;
        j->step(s, t, j);
    }
}

int main(void) {
    printf("cothread %s\n", cot_version_string());
    cot_sched *s = cot_sched_new();
    const void *parts[] = {&left, &right};
    if (cot_sched_onall(s, parts, 2, &both) != 0) return 1;

    job jobs[] = {
        {"reporter", reporter, 0},
        {"left", listener, 0},
        {"right", listener, 0},
        {"ticker", ticker, 0},
    };
    for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) {
        cot_task t;
        cot_task_new(s, &jobs[i], &t);
        cot_sched_schedule(s, t, COT_LATER);
    }
    run(s);
    cot_sched_free(s); /* frees the tasks and the combined signal too */
    return 0;
}
