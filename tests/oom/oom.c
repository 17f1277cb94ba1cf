/* The Lua module out of memory: runs oom.lua in a fresh lua_State whose
 * allocator refuses every allocation after the first N (a growing realloc
 * counts as one), for N = 0, 1, 2, ... until a run needs no refusal.
 *
 *   oom DIR-OF-cothread.so SCRIPT.lua WORKDIR [--from A] [--to B]
 *
 * Each run opens the standard libraries, requires "cothread" and runs the
 * script, all under one lua_pcall, which must end in one of two ways: the
 * script returns "done", or the pcall fails with "not enough memory" (Lua's
 * own answer to a refused allocation; the script turns a function's
 * `nil, "not enough memory"` into that error too). Then memory comes back:
 * the module, if loaded, must work in the same state (`recovery`), and
 * lua_close must free every byte the state allocated and leave the process
 * as before the run: the same descriptors open, the same signal mask.
 * Under valgrind, no definite leak and no invalid access either.
 *
 * --from and --to run only N in [A, B], to study one failure. A first run,
 * unlimited, warms up what the module keeps per process (the thread pool,
 * the orphan list) before the baseline is taken. Exit status 0 when every
 * run was clean. */
#define _GNU_SOURCE
#include <dirent.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *dir, *script, *workdir;
/* Whether pidfd_open works: valgrind 3.19 lacks it, and child waits use it. */
static int has_pidfd;

/* The allocator's budget: `left` allocations still granted (SIZE_MAX: no
 * limit), how many it refused, and the bytes the state holds. */
struct budget {
    size_t left;
    size_t refused;
    size_t granted;
    size_t live;
};

static void *limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    struct budget *b = ud;
    size_t old = ptr ? osize : 0; /* with ptr NULL, osize is a type tag */
    if (nsize == 0) {
        free(ptr);
        b->live -= old;
        return NULL;
    }
    if (nsize > old) { /* a new block or a growing one */
        if (b->left == 0) {
            b->refused++;
            return NULL;
        }
        if (b->left != SIZE_MAX) b->left--;
        b->granted++;
    }
    void *p = realloc(ptr, nsize);
    if (p) b->live = b->live - old + nsize;
    return p;
}

static size_t current_n;

/* report(label, value): the script's account of a wrong result, printed
 * without allocating (the allocator may refuse everything by then). */
static int report(lua_State *L) {
    const char *label = lua_type(L, 1) == LUA_TSTRING ? lua_tostring(L, 1) : "?";
    fprintf(stderr, "oom: N=%zu: wrong result at %s: ", current_n, label);
    if (lua_type(L, 2) == LUA_TSTRING)
        fprintf(stderr, "\"%s\"\n", lua_tostring(L, 2));
    else if (lua_type(L, 2) == LUA_TNUMBER)
        fprintf(stderr, "%.17g\n", lua_tonumber(L, 2));
    else
        fprintf(stderr, "(%s)\n", luaL_typename(L, 2));
    return 0;
}

/* Inside the pcall: the libraries, the module, the script. */
static int body(lua_State *L) {
    luaL_openlibs(L);
    lua_getglobal(L, "package");
    lua_pushstring(L, dir);
    lua_pushstring(L, "/?.so");
    lua_concat(L, 2);
    lua_setfield(L, -2, "cpath");
    lua_pop(L, 1);
    lua_getglobal(L, "require");
    lua_pushstring(L, "cothread");
    lua_call(L, 1, 0);
    if (luaL_loadfile(L, script) != LUA_OK) return lua_error(L);
    lua_pushstring(L, workdir);
    lua_pushboolean(L, has_pidfd);
    lua_pushcfunction(L, report);
    lua_call(L, 3, 1);
    return 1;
}

/* How many descriptors are open; with `show`, prints what each one is. */
static int list_fds(int show) {
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        n++;
        if (!show || e->d_name[0] == '.') continue;
        char path[300], target[300];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        target[len < 0 ? 0 : len] = 0;
        fprintf(stderr, "  fd %s: %s\n", e->d_name, target);
    }
    closedir(d);
    return n;
}

static int open_fds(void) {
    return list_fds(0);
}

/* The descriptors open once `want` are, waiting up to 2 s: a pool job of a
 * closed state may still hold one, which it closes when it ends. */
static int settled_fds(int want) {
    int n = open_fds();
    for (int i = 0; i < 2000 && n != want; i++) {
        usleep(1000);
        n = open_fds();
    }
    return n;
}

static int same_mask(const sigset_t *a) {
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    for (int s = 1; s < NSIG; s++)
        if (sigismember(a, s) != sigismember(&now, s)) return 0;
    return 1;
}

static int failures;

#define BAD(n, ...)                                             \
    do {                                                        \
        fprintf(stderr, "oom: N=%zu: ", (size_t)(n));           \
        fprintf(stderr, __VA_ARGS__);                           \
        fputc('\n', stderr);                                    \
        failures++;                                             \
    } while (0)

enum outcome { NO_STATE, FINISHED, OUT_OF_MEMORY, WRONG };

/* After a failed run, with memory back: the module, if it was loaded,
 * works in the same state: the default scheduler runs nothing, and resumes
 * a new cothread placed first (the run's own cothreads stay where they
 * are: some wait up to 5 s); a new scheduler, a channel, a promise. */
static const char recovery[] =
    "local cothread = ...\n"
    "assert(cothread.running() == nil)\n"
    "local ran\n"
    "cothread.schedule(coroutine.create(function() ran = true end), 'next')\n"
    "cothread.step()\n"
    "assert(ran)\n"
    "local s, got = cothread.new()\n"
    "local tx, rx = cothread.channel.new()\n"
    "s.schedule(coroutine.create(function() got = rx:receive() end))\n"
    "s.schedule(coroutine.create(function() s.yield(); tx:send(40) end))\n"
    "s.run()\n"
    "local p, f = cothread.promise()\n"
    "p:set(2)\n"
    "local ok, two = f:value()\n"
    "assert(ok and got + two == 42)\n"
    "return 'recovered'\n";

/* In a pcall: "recovered", "skipped" if the run failed before the module
 * was loaded, or an error. */
static int recover_body(lua_State *L) {
    if (lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE) != LUA_TTABLE ||
        lua_getfield(L, -1, "cothread") != LUA_TTABLE) {
        lua_pushliteral(L, "skipped");
        return 1;
    }
    if (luaL_loadstring(L, recovery) != LUA_OK) return lua_error(L);
    lua_insert(L, -2);
    lua_call(L, 1, 1);
    return 1;
}

static void recover(lua_State *L, size_t n) {
    lua_pushcfunction(L, recover_body);
    int status = lua_pcall(L, 0, 1, 0);
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(not a string)";
    if (status != LUA_OK || (strcmp(msg, "recovered") != 0 && strcmp(msg, "skipped") != 0))
        BAD(n, "the module does not work once memory is back: %s", msg);
    lua_pop(L, 1);
}

/* One run with `limit` allocations granted. Sets *refused to how many it
 * refused (0: the run had all it asked for). */
static enum outcome run(size_t limit, size_t *refused, size_t *granted) {
    struct budget b = {limit, 0, 0, 0};
    current_n = limit;
    lua_State *L = lua_newstate(limited_alloc, &b);
    *refused = b.refused;
    *granted = b.granted;
    if (!L) {
        if (b.refused == 0) BAD(limit, "lua_newstate failed without a refusal");
        return b.refused ? NO_STATE : WRONG;
    }
    lua_pushcfunction(L, body);
    int status = lua_pcall(L, 0, 1, 0);
    enum outcome o = WRONG;
    size_t len = 0;
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    if (status == LUA_OK && msg && strcmp(msg, "done") == 0)
        o = FINISHED;
    else if (status != LUA_OK && msg && strcmp(msg, "not enough memory") == 0)
        o = OUT_OF_MEMORY;
    else
        BAD(limit, "status %d, %s: %s", status, luaL_typename(L, -1), msg ? msg : "(not a string)");
    if (o == OUT_OF_MEMORY && b.refused == 0) {
        BAD(limit, "\"not enough memory\" without a refused allocation");
        o = WRONG;
    }
    /* Memory comes back. (With the allocator still refusing, lua_close
     * could not call every finalizer: Lua needs a call frame for one.) */
    b.left = SIZE_MAX;
    if (o == OUT_OF_MEMORY) recover(L, limit);
    lua_close(L);
    if (b.live != 0) BAD(limit, "%zu bytes of the state not freed by lua_close", b.live);
    *refused = b.refused;
    *granted = b.granted;
    return o;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: oom DIR SCRIPT WORKDIR [--from A] [--to B]\n");
        return 2;
    }
    dir = argv[1], script = argv[2], workdir = argv[3];
    size_t from = 0, to = SIZE_MAX;
    for (int i = 4; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--from") == 0) from = strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--to") == 0) to = strtoul(argv[i + 1], NULL, 10);
    }
    /* A SIGUSR1 the script raises stays pending if a run fails before it is
     * read: ignored, it is dropped when unblocked instead of ending us. */
    signal(SIGUSR1, SIG_IGN);
    long pidfd = syscall(SYS_pidfd_open, getpid(), 0);
    has_pidfd = pidfd >= 0;
    if (has_pidfd) close((int)pidfd);

    double t0 = now();
    size_t refused, granted;
    if (run(SIZE_MAX, &refused, &granted) != FINISHED) {
        fprintf(stderr, "oom: FAILED: the script does not finish with unlimited memory\n");
        return 1;
    }
    size_t total = granted;
    int fds = open_fds();
    sigset_t mask;
    sigprocmask(SIG_BLOCK, NULL, &mask);

    size_t runs = 0, oom = 0, finished = 0, nostate = 0, n;
    for (n = from;; n++) {
        enum outcome o = run(n, &refused, &granted);
        runs++;
        if (o == OUT_OF_MEMORY) oom++;
        if (o == FINISHED) finished++;
        if (o == NO_STATE) nostate++;
        int f = settled_fds(fds);
        if (f != fds) {
            BAD(n, "%d descriptors open after lua_close, %d before:", f, fds);
            list_fds(1);
            fds = f;
        }
        if (!same_mask(&mask)) {
            BAD(n, "the signal mask changed");
            sigprocmask(SIG_SETMASK, &mask, NULL);
        }
        if (refused == 0 || n == to) break; /* the run had all it asked for */
        if (n > 4 * total + 1000) {
            fprintf(stderr, "oom: FAILED: no end by N=%zu (the unlimited run made %zu allocations)\n", n,
                    total);
            return 1;
        }
    }
    printf("oom: %zu runs (N = %zu..%zu): %zu out of memory, %zu finished, %zu without a state; "
           "the unlimited run made %zu allocations; %.1f s\n",
           runs, from, n, oom, finished, nostate, total, now() - t0);
    if (failures) {
        printf("oom: FAILED: %d problems\n", failures);
        return 1;
    }
    return 0;
}
