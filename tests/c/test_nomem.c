/* Out of memory through the C ABI: every COT_ENOMEM path, each hit by a real
 * refusal of the system in a forked child (no failure injected into the
 * library), then recovery once memory is back.
 *
 * - Stacks: the mapping count at vm.max_map_count (on Linux 6.x the mapping
 *   succeeds and the guard page's mprotect is refused; one more mapping and
 *   the mmap itself is refused), and the address space under RLIMIT_AS.
 * - Pool threads under RLIMIT_AS: cot_pool_submit returns COT_ENOMEM; work
 *   on a loop (a request, a name lookup, a coroutine's or a loop task's
 *   work) completes with COT_ENOMEM without running.
 * - The heap: an allocation the system refuses ends the process (abort),
 *   as doc/c.md says; nothing returns half made. */
#define _GNU_SOURCE
#include <cothread.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static size_t page;

/* Lines of /proc/self/maps: the process's mapping count. Read with plain
 * system calls into a static buffer, so that counting maps nothing. */
static long map_count(void) {
    static char buf[1 << 16];
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    long lines = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
    close(fd);
    return lines;
}

static long read_number(const char *path, const char *field) {
    static char buf[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    CHECK(n > 0);
    buf[n] = 0;
    const char *at = field ? strstr(buf, field) : buf;
    CHECK(at != NULL);
    return strtol(at + (field ? strlen(field) : 0), NULL, 10);
}

/* Runs `scenario` in a forked child; returns how the child ended. */
static int in_child(void (*scenario)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        scenario();
        _exit(0);
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    return status;
}

static void *return_arg(void *arg) { return arg; }

static atomic_int job_ran; /* jobs run on a pool thread */
static void job(void *data, int status) {
    (void)data;
    if (status == 0) job_ran++;
}

static int work_ran, after_status = 1;
static void work(void *data) {
    (void)data;
    work_ran++;
}
static void after(cot_loop *loop, cot_req req, int status, void *data) {
    (void)loop, (void)req, (void)data;
    after_status = status;
}

/* A coroutine and a loop task that await work; what they got back. */
static int coro_work_rc = 1;
static void *coro_working(void *arg) {
    (void)arg;
    coro_work_rc = cot_coro_work(work, NULL);
    return NULL;
}

static int task_wake = -1, task_events = 1;
static void task_working(cot_loop *loop, cot_handle task, int wake, int events, void *data) {
    (void)data;
    if (wake == COT_WAKE_RESUMED && task_wake == -1) { /* first run: await the work */
        task_wake = -2;
        CHECK_EQ(cot_loop_task_work(loop, task, work, NULL), 0);
        return;
    }
    task_wake = wake;
    task_events = events;
}

static int lookup_status = 1;
static void looked_up(cot_loop *loop, cot_req req, int status, struct addrinfo *res, void *data) {
    (void)loop, (void)req, (void)data;
    lookup_status = status;
    if (res) freeaddrinfo(res);
}

/* ===== the mapping count ===== */

/* Filler mappings: a PROT_NONE region split page by page. */
static char *filler;
static size_t filler_pages, filler_next;

/* Adds one mapping to the process, or returns 0 when the system refuses. */
static int add_one_map(void) {
    long before = map_count();
    /* Unmapping a page inside the PROT_NONE tail splits it in two. */
    if (filler_next + 2 < filler_pages && munmap(filler + filler_next * page, page) == 0) {
        filler_next += 2;
    } else {
        /* At the limit splits are refused; a new mapping may still pass
         * (R+X: it merges with no neighbour). */
        void *p = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return 0;
    }
    CHECK_EQ(map_count(), before + 1);
    return 1;
}

static void stacks_at_the_mapping_limit(void) {
    long max = read_number("/proc/sys/vm/max_map_count", NULL);
    cot_loop *loop = cot_loop_new();
    CHECK(loop != NULL);
    static cot_coro_block block;
    cot_coro *co = NULL;
    /* Warm up what a coroutine allocates, so that no heap mapping is needed
     * near the limit. */
    CHECK_EQ(cot_coro_new(loop, return_arg, NULL, 4096, &co), 0);
    CHECK_EQ(cot_coro_free(co), 0);

    /* Up to one mapping below the limit, two pages a split. (Not closer to
     * it with stacks that fit: AddressSanitizer's allocator would need
     * mappings of its own there, and dies.) */
    filler_pages = 2 * (size_t)max + 16;
    filler = mmap(NULL, filler_pages * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(filler != MAP_FAILED);
    filler_next = 1;
    for (long n = map_count(); n + 2 <= max - 1; n += 2) { /* counted once: reading it is O(n) */
        CHECK_EQ(mprotect(filler + filler_next * page, page, PROT_READ), 0);
        filler_next += 2;
    }
    while (map_count() < max - 1) CHECK(add_one_map());

    /* One mapping more each round until the system refuses even that:
     * cot_coro_new fails with COT_ENOMEM and leaves the mapping count as it
     * was (below the limit the stack maps and its guard page is refused; at
     * it, the mapping is). */
    int refused = 0;
    do {
        long before = map_count();
        int rc = cot_coro_new(loop, return_arg, NULL, 4096, &co);
        if (rc == 0) { /* fits (a kernel counting otherwise): refusals come later */
            CHECK(!refused);
            CHECK_EQ(cot_coro_free(co), 0);
        } else {
            CHECK_EQ(rc, COT_ENOMEM);
            CHECK_EQ(cot_coro_init(loop, &block, NULL, 4096, return_arg, NULL, NULL), COT_ENOMEM);
            CHECK_EQ(cot_coro_status((cot_coro *)&block), COT_EINVAL); /* holds none */
            refused++;
        }
        CHECK_EQ(map_count(), before);
    } while (add_one_map());
    CHECK(refused >= 2); /* one below the limit and at it, at least */
    printf("mapping limit %ld: cot_coro_new refused %d times, nothing leaked\n", max, refused);

    /* Mappings back: stacks again. */
    CHECK_EQ(munmap(filler, filler_pages * page), 0);
    CHECK_EQ(cot_coro_new(loop, return_arg, (void *)7, 4096, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    void *r = NULL;
    CHECK_EQ(cot_coro_result(co, &r), 0);
    CHECK_EQ((intptr_t)r, 7);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
}

/* ===== the address space ===== */

static void limit_address_space(size_t extra) {
    rlim_t now = (rlim_t)read_number("/proc/self/status", "VmSize:") * 1024;
    struct rlimit r = {now + extra, RLIM_INFINITY};
    CHECK_EQ(setrlimit(RLIMIT_AS, &r), 0);
}

static void unlimit_address_space(void) {
    struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
    CHECK_EQ(setrlimit(RLIMIT_AS, &r), 0);
}

static void stacks_and_threads_in_a_small_address_space(void) {
    cot_loop *loop = cot_loop_new();
    cot_pool *pool = cot_pool_new(1); /* its thread starts with the first job */
    CHECK(loop != NULL && pool != NULL);
    static cot_coro_block block;
    cot_coro *co = NULL, *worker = NULL;
    cot_handle task;
    const size_t big = 8 << 20; /* a stack, and a thread's 2 MiB stack, exceed the margin */
    CHECK_EQ(cot_coro_new(loop, coro_working, NULL, 64 * 1024, &worker), 0); /* mapped now */
    CHECK_EQ(cot_loop_task_init(loop, task_working, NULL, &task), 0);

    limit_address_space(1 << 20);
    CHECK_EQ(cot_coro_new(loop, return_arg, NULL, big, &co), COT_ENOMEM);
    CHECK_EQ(cot_coro_init(loop, &block, NULL, big, return_arg, NULL, NULL), COT_ENOMEM);
    CHECK_EQ(cot_pool_submit(pool, job, NULL), COT_ENOMEM);
    int copied = 5;
    CHECK_EQ(cot_pool_submit_copy(pool, job, &copied, sizeof copied), COT_ENOMEM);
    CHECK_EQ(cot_work_submit(loop, work, after, NULL, NULL), 0);
    CHECK_EQ(cot_getaddrinfo(loop, "127.0.0.1", NULL, NULL, looked_up, NULL, NULL), 0);
    CHECK_EQ(cot_coro_start(worker), 0);
    CHECK_EQ(cot_loop_task_schedule(loop, task, COT_LATER), 1);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(after_status, COT_ENOMEM); /* completed on the loop, without running */
    CHECK_EQ(lookup_status, COT_ENOMEM);
    CHECK_EQ(coro_work_rc, COT_ENOMEM);
    CHECK_EQ(task_wake, COT_WAKE_FAILED);
    CHECK_EQ(task_events, COT_ENOMEM);
    CHECK_EQ(work_ran, 0);
    CHECK_EQ(job_ran, 0);
    CHECK_EQ(cot_coro_free(worker), 0);
    CHECK_EQ(cot_close(loop, task, NULL), 0);
    CHECK_EQ(cot_loop_close(loop), 0); /* nothing left pending */

    /* Memory back: everything works again. */
    unlimit_address_space();
    loop = cot_loop_new();
    CHECK_EQ(cot_coro_new(loop, return_arg, NULL, big, &co), 0);
    CHECK_EQ(cot_coro_start(co), 0);
    CHECK_EQ(cot_work_submit(loop, work, after, NULL, NULL), 0);
    CHECK_EQ(cot_loop_run(loop, COT_RUN_DEFAULT), 0);
    CHECK_EQ(after_status, 0);
    CHECK_EQ(work_ran, 1);
    CHECK_EQ(cot_coro_status(co), COT_CORO_FINISHED);
    CHECK_EQ(cot_coro_free(co), 0);
    CHECK_EQ(cot_loop_close(loop), 0);
    CHECK_EQ(cot_pool_submit(pool, job, NULL), 0);
    for (int i = 0; i < 5000 && job_ran == 0; i++) nanosleep(&(struct timespec){0, 1000000}, NULL);
    CHECK_EQ(job_ran, 1);
    cot_pool_free(pool);
}

/* ===== the heap ===== */

static void heap_exhausted(void) {
    /* No core file: the death is quick wherever core dumps are on. */
    struct rlimit no_core = {0, 0};
    CHECK_EQ(setrlimit(RLIMIT_CORE, &no_core), 0);
    CHECK_EQ(prctl(PR_SET_DUMPABLE, 0), 0);
    cot_sched *s = cot_sched_new();
    limit_address_space(0);
    for (;;) { /* the task arena grows until an allocation is refused */
        cot_task t;
        CHECK_EQ(cot_task_new(s, NULL, &t), 0);
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    page = (size_t)sysconf(_SC_PAGESIZE);

    CHECK_EQ(in_child(stacks_at_the_mapping_limit), 0);
    CHECK_EQ(in_child(stacks_and_threads_in_a_small_address_space), 0);

    /* The process ends by abort (AddressSanitizer's allocator reports and
     * exits instead); never a fault, never a half-made object. */
    int status = in_child(heap_exhausted);
    if (UNDER_ASAN) {
        CHECK(WIFEXITED(status) ? WEXITSTATUS(status) != 0 : WTERMSIG(status) == SIGABRT);
    } else {
        CHECK(WIFSIGNALED(status));
        CHECK_EQ(WTERMSIG(status), SIGABRT);
    }
    puts("test_nomem ok");
    return 0;
}
