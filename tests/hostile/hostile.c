/* The hostile-client test: the manual's Lua echo server (server.lua) under
 * attack on loopback, each attack bounded in time. After each one the server
 * must still be up and echo correctly; at the end its RSS must be under
 * RSS_BOUND_KIB.
 *
 *   hostile LUA DIR-OF-cothread.so SERVER.lua [--fd-limit]
 *
 * Attacks: connections reset mid-line, slowloris clients, garbage bytes, a
 * client that sends and never reads. With --fd-limit, descriptor exhaustion
 * instead: the server runs under `ulimit -n 128` and clients connect until
 * its descriptors are all taken and its queue is full; it must use under
 * 10 % CPU then, and serve a new client within 1 s after the others leave. Both acceptor
 * styles of server.lua: the manual's `assert(server:accept())`, and one
 * that retries at once on an error. */
#include <dirent.h>
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RSS_BOUND_KIB (16 * 1024)

static const char *lua, *dir, *script;
/* The server running, killed at exit: it shares our stderr, so ctest would
 * wait for it after a failure. */
static pid_t running;

#define FAIL(...) (fprintf(stderr, "hostile: FAILED: " __VA_ARGS__), fputc('\n', stderr), exit(1))

static void kill_running(void) {
    if (running > 0) kill(running, SIGKILL);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

struct server {
    pid_t pid;
    int port;
};

/* Starts server.lua with `style`, under `nofile` descriptors (0: unchanged). */
static struct server start(const char *style, int nofile) {
    int out[2];
    if (pipe(out) != 0) FAIL("pipe");
    pid_t pid = fork();
    if (pid < 0) FAIL("fork");
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        if (nofile) {
            struct rlimit r = {nofile, nofile};
            if (setrlimit(RLIMIT_NOFILE, &r) != 0) _exit(126);
        }
        execlp(lua, lua, script, dir, style, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    running = pid;
    FILE *f = fdopen(out[0], "r");
    struct server s = {pid, 0};
    if (!f || fscanf(f, "port %d", &s.port) != 1) FAIL("the server (%s) did not start", style);
    fclose(f);
    return s;
}

static void stop(struct server s) {
    kill(s.pid, SIGKILL);
    waitpid(s.pid, NULL, 0);
    running = 0;
}

static void alive(struct server s, const char *after) {
    int status;
    if (waitpid(s.pid, &status, WNOHANG) != 0) FAIL("the server died after %s (status %#x)", after, status);
}

static void set_nonblocking(int fd);

/* A non-blocking socket connecting to `port` (the connection may still be
 * in progress), or -1. */
static int dial_start(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A connected socket (blocking), or -1 if the connection failed or took
 * over `ms` (a full accept queue drops the SYN, and the kernel retries it
 * after 1, 3, 7 s...). */
static int dial_within(int port, int ms) {
    int fd = dial_start(port), err = 0;
    socklen_t len = sizeof err;
    struct pollfd p = {fd, POLLOUT, 0};
    if (fd < 0) return -1;
    if (poll(&p, 1, ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
        close(fd);
        return -1;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

static int dial(int port) { return dial_within(port, 10000); }

static void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

/* Whether the connected client `fd` gets "HELLO n" back for "hello n"
 * within `limit` s. Closes `fd`. */
static int echo_on(int fd, double limit) {
    static int n;
    double end = now() + limit;
    char line[64], want[64], got[64] = {0};
    int len = snprintf(line, sizeof line, "hello %d\n", ++n);
    snprintf(want, sizeof want, "HELLO %d\n", n);
    if (send(fd, line, len, MSG_NOSIGNAL) != len) return close(fd), 0;
    set_nonblocking(fd);
    size_t have = 0;
    while (have < (size_t)len && now() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        poll(&p, 1, 20);
        ssize_t r = recv(fd, got + have, sizeof got - 1 - have, 0);
        if (r == 0) break;
        if (r > 0) have += r;
    }
    close(fd);
    return have == (size_t)len && memcmp(got, want, len) == 0;
}

/* Whether a new client gets its echo within `limit` s (its connection may
 * take up to 10 s). */
static int echoes(int port, double limit) {
    int fd = dial(port);
    return fd >= 0 && echo_on(fd, limit);
}

static void must_echo(struct server s, const char *after, double limit) {
    alive(s, after);
    if (!echoes(s.port, limit)) FAIL("no correct echo within %.1f s after %s", limit, after);
    printf("  %s: still echoes\n", after);
}

static long proc_field(pid_t pid, const char *file, const char *key) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
    FILE *f = fopen(path, "r");
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0) v = atol(line + strlen(key));
    if (f) fclose(f);
    return v;
}

/* CPU time of `pid` in clock ticks (utime + stime). */
static long cpu_ticks(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f || !fgets(buf, sizeof buf, f)) FAIL("read %s", path);
    fclose(f);
    char *p = strrchr(buf, ')');
    long utime = 0, stime = 0;
    /* fields after the name: state(3) ... utime(14) stime(15) */
    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &utime, &stime);
    return utime + stime;
}

static void linger0_close(int fd) {
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
}

/* 500 connections send half a line, then reset. */
static void resets(struct server s) {
    for (int i = 0; i < 500; i++) {
        int fd = dial(s.port);
        if (fd < 0) FAIL("connect %d", i);
        send(fd, "half a line", 11, MSG_NOSIGNAL);
        linger0_close(fd);
        /* An echo every 16 connections: the server accepted those before it
         * (its queue is first in, first out), so its backlog never fills. */
        if (i % 16 == 15 && !echoes(s.port, 10.0)) FAIL("no echo after %d resets", i + 1);
    }
    must_echo(s, "500 resets mid-line", 1.0);
}

/* 100 clients trickle one byte each every 50 ms for 2 s; a fair client is
 * served meanwhile. */
static void slowloris(struct server s) {
    enum { N = 100 };
    int fds[N];
    for (int i = 0; i < N; i++) {
        if ((fds[i] = dial(s.port)) < 0) FAIL("slowloris connect %d", i);
        if (i % 16 == 15 && !echoes(s.port, 10.0)) FAIL("no echo after %d slowloris connections", i + 1);
    }
    double end = now() + 2;
    int checked = 0;
    while (now() < end) {
        for (int i = 0; i < N; i++) send(fds[i], "x", 1, MSG_NOSIGNAL);
        if (!checked++ && !echoes(s.port, 1.0)) FAIL("no echo during slowloris");
        usleep(50 * 1000);
    }
    for (int i = 0; i < N; i++) close(fds[i]);
    must_echo(s, "100 slowloris clients", 1.0);
}

/* Random bytes (newlines among them, so some lines are echoed): 4 MiB, with
 * the replies read and dropped; then 1 MiB more, never read, and a reset. */
static void garbage(struct server s) {
    int fd = dial(s.port);
    if (fd < 0) FAIL("garbage connect");
    set_nonblocking(fd);
    unsigned seed = 7;
    char buf[16384], sink[65536];
    size_t sent = 0;
    double end = now() + 10;
    while (sent < (4u << 20) && now() < end) {
        for (size_t i = 0; i < sizeof buf; i++) buf[i] = (char)(rand_r(&seed) & 0xff);
        struct pollfd p = {fd, POLLIN | POLLOUT, 0};
        poll(&p, 1, 50);
        while (recv(fd, sink, sizeof sink, 0) > 0) {}
        ssize_t w = send(fd, buf, sizeof buf, MSG_NOSIGNAL);
        if (w > 0) sent += w;
        else if (w < 0 && errno != EAGAIN) break;
    }
    for (int i = 0; i < 64; i++) send(fd, buf, sizeof buf, MSG_NOSIGNAL);
    linger0_close(fd);
    must_echo(s, "4 MiB of garbage", 1.0);
}

/* A client sends lines for 2 s and never reads: the server's sends to it
 * block that client's cothread only. */
static void never_reads(struct server s) {
    int fd = dial(s.port);
    if (fd < 0) FAIL("never-reads connect");
    set_nonblocking(fd);
    char line[4096];
    memset(line, 'a', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    double end = now() + 2;
    while (now() < end) {
        send(fd, line, sizeof line, MSG_NOSIGNAL);
        usleep(1000);
    }
    must_echo(s, "a client that never reads (still connected)", 1.0);
    close(fd);
}

/* How many descriptors `pid` has open. */
static int open_fds(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", pid);
    DIR *d = opendir(path);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* Under 128 descriptors, clients connect one after the other (up to 300)
 * and stay, until the server's descriptors are all taken and its queue is
 * full (three connections in a row time out). It must not spin then; once
 * the clients leave, a new one must be served within 1 s. */
static void fd_exhaustion(const char *style) {
    enum { N = 300, NOFILE = 128 };
    struct server s = start(style, NOFILE);
    int fds[N], n = 0, misses = 0;
    double t = now();
    while (n < N && misses < 3) {
        alive(s, "its descriptors ran out");
        if (now() - t > 10.0) FAIL("the clients took over 10 s to connect (%d connected)", n);
        int fd = dial_within(s.port, 100);
        if (fd >= 0) fds[n++] = fd, misses = 0;
        else if (open_fds(s.pid) >= NOFILE) misses++;
    }
    if (open_fds(s.pid) < NOFILE) FAIL("the server holds %d descriptors of %d", open_fds(s.pid), NOFILE);
    printf("  %s acceptor: all %d descriptors taken, %d clients connected, after %.2f s\n", style, NOFILE, n,
           now() - t);
    usleep(200 * 1000); /* its accept fails by now */
    long t0 = cpu_ticks(s.pid);
    double w0 = now();
    usleep(2000 * 1000);
    double cpu = (cpu_ticks(s.pid) - t0) / (double)sysconf(_SC_CLK_TCK) / (now() - w0);
    printf("  %s acceptor, descriptors exhausted: %.1f %% CPU over %.1f s\n", style, 100 * cpu, now() - w0);
    if (cpu >= 0.10) FAIL("the server used %.0f %% CPU while out of descriptors (%s acceptor)", 100 * cpu, style);
    alive(s, "fd exhaustion");
    for (int i = 0; i < n; i++) close(fds[i]);
    /* Short connection attempts, again and again: a SYN the full queue drops
     * is tried again by a new client, not by the kernel a second later. */
    t = now();
    for (;;) {
        alive(s, "the clients left");
        int fd = dial_within(s.port, 100);
        if (fd >= 0 && echo_on(fd, 1.0 - (now() - t))) break;
        if (now() - t > 1.0) FAIL("no echo within 1 s after the descriptors freed up (%s acceptor)", style);
    }
    printf("  %s acceptor: echoes again %.2f s after the clients left\n", style, now() - t);
    stop(s);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: hostile LUA DIR SERVER.lua [--fd-limit]\n");
        return 2;
    }
    lua = argv[1], dir = argv[2], script = argv[3];
    signal(SIGPIPE, SIG_IGN);
    atexit(kill_running);
    if (argc > 4 && strcmp(argv[4], "--fd-limit") == 0) {
        fd_exhaustion("assert");
        fd_exhaustion("retry");
        printf("hostile: the server survived descriptor exhaustion\n");
        return 0;
    }
    struct server s = start("assert", 0);
    must_echo(s, "start", 2.0);
    resets(s);
    slowloris(s);
    garbage(s);
    never_reads(s);
    long rss = proc_field(s.pid, "status", "VmRSS:");
    printf("  server RSS after the attacks: %ld KiB (bound %d KiB)\n", rss, RSS_BOUND_KIB);
    if (rss < 0 || rss > RSS_BOUND_KIB) FAIL("RSS %ld KiB over the bound", rss);
    stop(s);
    printf("hostile: the server survived every attack\n");
    return 0;
}
