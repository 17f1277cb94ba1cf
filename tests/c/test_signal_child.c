/* Signal and child handles through the C ABI. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include "check.h"

static int signals_seen, last_signum;
static void on_signal(cot_loop *loop, cot_handle h, int signum, void *data) {
    (void)data;
    signals_seen++;
    last_signum = signum;
    CHECK_EQ(cot_close(loop, h, NULL), 0);
}

static void test_signal(void) {
    cot_loop *loop = cot_loop_new();
    cot_handle s;
    CHECK_EQ(cot_signal_init(loop, NULL, &s), 0);
    CHECK_EQ(cot_signal_start(loop, s, on_signal, SIGKILL), COT_EINVAL);
    CHECK_EQ(cot_signal_start(loop, s, on_signal, 0), COT_EINVAL);
    CHECK_EQ(cot_signal_start(loop, s, NULL, SIGUSR2), COT_EINVAL);
    CHECK_EQ(cot_signal_start(loop, s, on_signal, SIGUSR2), 0);
    CHECK_EQ(kill(getpid(), SIGUSR2), 0); /* blocked: queued for the loop */
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(signals_seen, 1);
    CHECK_EQ(last_signum, SIGUSR2);
    CHECK_EQ(cot_loop_close(loop), 0);
}

struct result {
    int calls, status, signal;
};

static void on_exit_cb(cot_loop *loop, cot_handle h, int status, int term_signal, void *data) {
    struct result *r = data;
    r->calls++;
    r->status = status;
    r->signal = term_signal;
    CHECK_EQ(cot_handle_is_active(loop, h), 0); /* stopped once reaped */
    CHECK_EQ(cot_close(loop, h, NULL), 0);
}

static pid_t spawn(int how) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (how == 0) _exit(7);
        pause(); /* wait to be killed */
        _exit(0);
    }
    return pid;
}

static void test_child(void) {
    cot_loop *loop = cot_loop_new();
    struct result exited = {0, -1, -1}, killed = {0, -1, -1};
    cot_handle a, b, bad;
    pid_t pa = spawn(0), pb = spawn(1);
    CHECK_EQ(cot_child_init(loop, pa, &exited, &a), 0);
    CHECK_EQ(cot_child_init(loop, pb, &killed, &b), 0);
    CHECK_EQ(cot_child_start(loop, a, on_exit_cb), 0);
    CHECK_EQ(cot_child_start(loop, b, on_exit_cb), 0);
    CHECK_EQ(kill(pb, SIGTERM), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(exited.calls, 1);
    CHECK_EQ(exited.status, 7);
    CHECK_EQ(exited.signal, 0);
    CHECK_EQ(killed.calls, 1);
    CHECK_EQ(killed.status, 0);
    CHECK_EQ(killed.signal, SIGTERM);
    CHECK_EQ(cot_child_init(loop, 0, NULL, &bad), COT_EINVAL);
    CHECK_EQ(cot_child_init(loop, 0x7fffffff, NULL, &bad), COT_ESRCH);
    /* Alive but not ours: the loop could never reap it, so no handle. */
    CHECK_EQ(cot_child_init(loop, getppid(), NULL, &bad), COT_ECHILD);
    CHECK_EQ(cot_child_init(loop, 1, NULL, &bad), COT_ECHILD);
    int reaped = cot_child_init(loop, pa, NULL, &bad); /* ECHILD if the pid was reused */
    CHECK(reaped == COT_ESRCH || reaped == COT_ECHILD);
    CHECK_EQ(cot_child_start(loop, a, on_exit_cb), COT_EINVAL); /* closed */
    CHECK_EQ(cot_loop_close(loop), 0);
}

int main(void) {
    test_signal();
    test_child();
    puts("test_signal_child ok");
    return 0;
}
