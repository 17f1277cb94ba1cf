/* Name resolution and file requests on the loop's pool, through the C ABI. */
#define _POSIX_C_SOURCE 200809L
#include <cothread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int gai_status = 1;
static int gai_found;
static void on_resolved(cot_loop *loop, cot_req req, int status, struct addrinfo *res, void *data) {
    (void)loop;
    (void)req;
    *(int *)data = status;
    for (struct addrinfo *a = res; a; a = a->ai_next) gai_found++;
    if (res) freeaddrinfo(res);
}

static void test_getaddrinfo(void) {
    cot_loop *loop = cot_loop_new();
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    int bad_status = 1;
    CHECK_EQ(cot_getaddrinfo(loop, "localhost", "80", &hints, on_resolved, &gai_status, NULL), 0);
    CHECK_EQ(cot_getaddrinfo(loop, "no-such-host.invalid", NULL, NULL, on_resolved, &bad_status, NULL), 0);
    CHECK_EQ(cot_getaddrinfo(loop, NULL, NULL, NULL, on_resolved, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_getaddrinfo(loop, "localhost", NULL, NULL, NULL, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(gai_status, 0);
    CHECK(gai_found >= 1);
    CHECK(bad_status < 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* A small state machine: open, write, read back, stat, close. */
struct file_test {
    char path[64];
    int fd, step;
    char buf[16];
    struct stat st;
};

static void next(cot_loop *loop, cot_req req, int64_t result, void *data);

static void next(cot_loop *loop, cot_req req, int64_t result, void *data) {
    struct file_test *t = data;
    (void)req;
    switch (t->step++) {
    case 0: /* opened */
        CHECK(result >= 0);
        t->fd = (int)result;
        CHECK_EQ(cot_fs_write(loop, t->fd, "hello", 5, 0, next, t, NULL), 0);
        break;
    case 1: /* written */
        CHECK_EQ(result, 5);
        CHECK_EQ(cot_fs_read(loop, t->fd, t->buf, sizeof t->buf, 0, next, t, NULL), 0);
        break;
    case 2: /* read */
        CHECK_EQ(result, 5);
        CHECK(memcmp(t->buf, "hello", 5) == 0);
        CHECK_EQ(cot_fs_stat(loop, t->path, &t->st, next, t, NULL), 0);
        break;
    case 3: /* stat */
        CHECK_EQ(result, 0);
        CHECK_EQ(t->st.st_size, 5);
        CHECK_EQ(cot_fs_close(loop, t->fd, next, t, NULL), 0);
        break;
    case 4: /* closed */
        CHECK_EQ(result, 0);
        CHECK_EQ(cot_fs_open(loop, "/nonexistent/dir/file", O_RDONLY, 0, next, t, NULL), 0);
        break;
    case 5:
        CHECK_EQ(result, -ENOENT);
        break;
    }
}

static void test_files(void) {
    cot_loop *loop = cot_loop_new();
    struct file_test t = {.fd = -1};
    snprintf(t.path, sizeof t.path, "/tmp/cothread-fs-%d", (int)getpid());
    CHECK_EQ(cot_fs_open(loop, t.path, O_CREAT | O_TRUNC | O_RDWR, 0600, next, &t, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(t.step, 6);
    unlink(t.path);
    CHECK_EQ(cot_fs_open(loop, NULL, O_RDONLY, 0, next, &t, NULL), COT_EINVAL);
    CHECK_EQ(cot_fs_read(loop, 0, NULL, 4, 0, next, &t, NULL), COT_EINVAL);
    CHECK_EQ(cot_fs_stat(loop, t.path, NULL, next, &t, NULL), COT_EINVAL);
    CHECK_EQ(cot_fs_close(loop, 0, NULL, NULL, NULL), COT_EINVAL);
    CHECK_EQ(cot_loop_close(loop), 0);
}

int main(void) {
    test_getaddrinfo();
    test_files();
    puts("test_fs ok");
    return 0;
}
