/* Bad input through the C ABI: every call answers with an error code, none
 * crashes, and a failed call changes nothing. Each kind of input the header
 * says is checked has a case here (the scheduler's in main, the loop's in
 * bad_loop_input); object pointers used after their free are the caller's
 * duty and are not tried. */
#include <cothread.h>

#include "check.h"

static int key;
#define K ((const void *)&key)

static int reentered, waited;
static void on_timer(cot_loop *loop, cot_handle h, void *data) {
    (void)h;
    (void)data;
    /* Closing or running a loop from its own callback is refused. */
    CHECK_EQ(cot_loop_close(loop), COT_EBUSY);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_NOWAIT), COT_EBUSY);
    reentered++;
}
static void on_future(cot_loop *loop, cot_req req, const cot_future *f, int status, void *data) {
    (void)loop, (void)req, (void)f, (void)data;
    CHECK_EQ(status, 0);
    waited++;
}

/* Handles and requests that are not the loop's: of another loop, closed, one
 * kind for the other, made up. Each gives COT_EINVAL and changes nothing. */
static void bad_loop_input(void) {
    cot_loop *loop = cot_loop_new(), *other = cot_loop_new();
    cot_handle mine, theirs, closed;
    CHECK_EQ(cot_timer_init(loop, NULL, &mine), 0);
    CHECK_EQ(cot_timer_init(other, NULL, &theirs), 0);
    CHECK_EQ(cot_timer_init(loop, NULL, &closed), 0);
    CHECK_EQ(cot_close(loop, closed, NULL), 0);
    cot_promise *p;
    cot_future *f;
    CHECK_EQ(cot_promise_new(&p, &f), 0);
    cot_req req, their_req;
    CHECK_EQ(cot_loop_future_wait(loop, f, on_future, NULL, &req), 0);
    CHECK_EQ(cot_loop_future_wait(other, f, on_future, NULL, &their_req), 0);

    const cot_handle one = 1, high = (cot_handle)1 << 32;
    cot_handle bad[] = {0, one, ~(cot_handle)0, theirs, closed, (cot_handle)req, mine ^ high, mine + one};
    void *d;
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_EQ(cot_handle_data(loop, bad[i], &d), COT_EINVAL);
        CHECK_EQ(cot_handle_set_data(loop, bad[i], &d), COT_EINVAL);
        CHECK_EQ(cot_handle_is_active(loop, bad[i]), COT_EINVAL);
        CHECK_EQ(cot_timer_start(loop, bad[i], on_timer, 0, 0), COT_EINVAL);
        CHECK_EQ(cot_timer_stop(loop, bad[i]), COT_EINVAL);
        CHECK_EQ(cot_async_send(loop, bad[i]), COT_EINVAL);
        CHECK_EQ(cot_poll_stop(loop, bad[i]), COT_EINVAL);
        CHECK_EQ(cot_close(loop, bad[i], NULL), COT_EINVAL);
    }
    cot_req bad_req[] = {0, 1, ~(cot_req)0, their_req, (cot_req)mine, req ^ high};
    for (unsigned i = 0; i < sizeof bad_req / sizeof *bad_req; i++) {
        CHECK_EQ(cot_req_cancel(loop, bad_req[i]), COT_EINVAL);
        CHECK_EQ(cot_work_cancel(loop, bad_req[i]), COT_EINVAL);
    }

    /* Nothing changed: the real ones still work, and re-entry is refused. */
    CHECK_EQ(cot_handle_is_active(loop, mine), 0);
    CHECK_EQ(cot_handle_is_active(other, theirs), 0);
    CHECK_EQ(cot_timer_start(loop, mine, on_timer, 0, 0), 0);
    CHECK_EQ(cot_promise_set(p, NULL, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(cot_loop_run(other, COT_RUN_DEFAULT), 0);
    CHECK_EQ(reentered, 1);
    CHECK_EQ(waited, 2);
    CHECK_EQ(cot_req_cancel(loop, req), COT_EINVAL); /* completed: gone */
    CHECK_EQ(cot_close(loop, mine, NULL), 0);
    CHECK_EQ(cot_close(other, theirs, NULL), 0);
    cot_promise_free(p);
    cot_future_free(f);
    CHECK_EQ(cot_loop_close(loop), 0);
    CHECK_EQ(cot_loop_close(other), 0);
}

int main(void) {
    cot_sched *s = cot_sched_new(), *other = cot_sched_new();
    cot_task t = 0, foreign = 0, freed = 0;
    CHECK_EQ(cot_task_new(s, NULL, &t), 0);
    CHECK_EQ(cot_task_new(other, NULL, &foreign), 0);
    CHECK_EQ(cot_task_new(s, NULL, &freed), 0);
    CHECK_EQ(cot_sched_schedule(s, freed, COT_LATER), 1);
    CHECK_EQ(cot_task_free(s, freed), 0);
    CHECK_EQ(cot_sched_ready_head(s), 0); /* freeing unscheduled it */

    /* NULL scheduler. */
    CHECK_EQ(cot_sched_free(NULL), 0);
    CHECK_EQ(cot_task_new(NULL, NULL, &t), COT_EINVAL);
    CHECK_EQ(cot_sched_schedule(NULL, t, COT_LATER), COT_EINVAL);
    CHECK_EQ(cot_sched_wait(NULL, t, K), COT_EINVAL);
    CHECK_EQ(cot_sched_postpone(NULL, t, 1), COT_EINVAL);
    CHECK_EQ(cot_sched_delay(NULL, t, 1), COT_EINVAL);
    CHECK_EQ(cot_sched_unschedule(NULL, t), COT_EINVAL);
    CHECK_EQ(cot_sched_is_scheduled(NULL, t), COT_EINVAL);
    CHECK_EQ(cot_sched_notify(NULL, K, COT_LATER), COT_EINVAL);
    CHECK_EQ(cot_sched_notify_wait(NULL, K, K), COT_EINVAL);
    CHECK_EQ(cot_sched_notify_postpone(NULL, K, 1), COT_EINVAL);
    CHECK_EQ(cot_sched_notify_delay(NULL, K, 1), COT_EINVAL);
    CHECK_EQ(cot_sched_waiting(NULL, K), COT_EINVAL);
    CHECK_EQ(cot_sched_ready_head(NULL), 0);
    CHECK_EQ(cot_sched_signal_head(NULL, K), 0);
    CHECK_EQ(cot_task_next(NULL, t), 0);
    CHECK_EQ(cot_sched_take_due(NULL), COT_EINVAL);
    uint64_t wake;
    CHECK_EQ(cot_sched_next_wake(NULL, &wake), COT_EINVAL);
    CHECK_EQ(cot_sched_now(NULL), 0);
    CHECK_EQ(cot_sched_set_clock(NULL, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_sched_set_signal_hook(NULL, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_task_free(NULL, t), COT_EINVAL);
    void *d;
    CHECK_EQ(cot_task_data(NULL, t, &d), COT_EINVAL);
    CHECK_EQ(cot_task_set_data(NULL, t, NULL), COT_EINVAL);
    const void *sig;
    const void *parts[] = {K};
    CHECK_EQ(cot_sched_onall(NULL, parts, 1, &sig), COT_EINVAL);
    CHECK_EQ(cot_sched_reset(NULL, K), COT_EINVAL);
    CHECK_EQ(cot_sched_combined_free(NULL, K), COT_EINVAL);

    /* NULL out-parameters and NULL signals. */
    CHECK_EQ(cot_task_new(s, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_task_data(s, t, NULL), COT_EINVAL);
    CHECK_EQ(cot_sched_next_wake(s, NULL), COT_EINVAL);
    CHECK_EQ(cot_sched_wait(s, t, NULL), COT_EINVAL);
    CHECK_EQ(cot_sched_notify(s, NULL, COT_LATER), COT_EINVAL);
    CHECK_EQ(cot_sched_notify_wait(s, K, NULL), COT_EINVAL);
    CHECK_EQ(cot_sched_waiting(s, NULL), COT_EINVAL);
    CHECK_EQ(cot_sched_onall(s, parts, 1, NULL), COT_EINVAL);
    CHECK_EQ(cot_sched_onany(s, NULL, 1, &sig), COT_EINVAL);
    const void *null_part[] = {K, NULL};
    CHECK_EQ(cot_sched_onany(s, null_part, 2, &sig), COT_EINVAL);
    CHECK_EQ(cot_sched_reset(s, K), COT_EINVAL);         /* not combined */
    CHECK_EQ(cot_sched_combined_free(s, K), COT_EINVAL); /* not combined */

    /* Bad `when`, task 0, freed tasks, tasks of another scheduler. */
    CHECK_EQ(cot_sched_schedule(s, t, 7), COT_EINVAL);
    CHECK_EQ(cot_sched_schedule(s, t, -1), COT_EINVAL);
    CHECK_EQ(cot_sched_notify(s, K, 2), COT_EINVAL);
    cot_task bad[] = {0, freed, foreign, ~(cot_task)0};
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_EQ(cot_sched_schedule(s, bad[i], COT_LATER), COT_EINVAL);
        CHECK_EQ(cot_sched_wait(s, bad[i], K), COT_EINVAL);
        CHECK_EQ(cot_sched_postpone(s, bad[i], 0), COT_EINVAL);
        CHECK_EQ(cot_sched_delay(s, bad[i], 0), COT_EINVAL);
        CHECK_EQ(cot_sched_unschedule(s, bad[i]), COT_EINVAL);
        CHECK_EQ(cot_sched_is_scheduled(s, bad[i]), COT_EINVAL);
        CHECK_EQ(cot_task_free(s, bad[i]), COT_EINVAL);
        CHECK_EQ(cot_task_data(s, bad[i], &d), COT_EINVAL);
        CHECK_EQ(cot_task_set_data(s, bad[i], NULL), COT_EINVAL);
        CHECK_EQ(cot_task_next(s, bad[i]), 0);
    }

    /* Nothing changed. */
    CHECK_EQ(cot_sched_ready_head(s), 0);
    CHECK_EQ(cot_sched_is_scheduled(s, t), 0);
    CHECK_EQ(cot_sched_is_scheduled(other, foreign), 0);
    CHECK_EQ(cot_sched_waiting(s, K), 0);
    CHECK_EQ(cot_sched_next_wake(s, &wake), 0);
    CHECK_EQ(cot_sched_schedule(s, t, COT_LATER), 1);
    CHECK_EQ(cot_sched_ready_head(s), t);

    CHECK_EQ(cot_sched_free(other), 0);
    CHECK_EQ(cot_sched_free(s), 0);

    bad_loop_input();
    puts("test_bad_input ok");
    return 0;
}
