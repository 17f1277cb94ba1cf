/*
 * The load generator of the Lua TCP echo benchmark (bench/lua/echo.sh,
 * bench/lua/idle.sh): one C process, the same for every server measured.
 *
 *   echo_client [-c conns] [-s size] [-d depth] [-t seconds] [-p pid] [-n name] port
 *   echo_client -i [-c conns] [-s size] [-P pending] [-t seconds] [-p pid] [-n name] port
 *   echo_client -T cafile [-c conns] [-s size] [-d depth] [-t seconds] [-p pid] [-n name] port
 *
 * Load (default): `conns` connections to 127.0.0.1:port (default 64), each
 * keeping `depth` messages of `size` bytes in flight (defaults 1 and 4096):
 * when a message's echo is complete, the next is sent. Each connection sends
 * its own window of a random pattern as one continuous stream, and every
 * echoed byte is checked against it, so a lost, duplicated or reordered byte
 * fails the run. One epoll loop, non-blocking sockets, TCP_NODELAY. After
 * `seconds` (default 3) nothing new is sent; the echoes in flight are awaited,
 * then the connections are closed.
 *
 * TLS (-T): the same load over TLS (OpenSSL's defaults: TLS 1.3 where the
 * server has it). Each connection's handshake is done before the clock starts
 * (blocking, one after the other), verifying the server's certificate against
 * `cafile` and the name "localhost"; then the load runs on non-blocking
 * sockets, SSL_read and SSL_write waiting for the direction OpenSSL asks.
 * The report ends with the protocol and cipher of the first connection.
 *
 * Idle (-i): opens `conns` connections (default 10000), echoes one message of
 * `size` bytes on each (so the server has accepted every one and waits in a
 * receive on it). With -P, each connection then sends the first `pending`
 * bytes of a next message (< size), in two writes 0.2 s apart (one byte, then
 * the rest), so the server holds a partial message that grew once. It waits
 * 0.5 s, then measures the server's CPU time over
 * `seconds` while nothing happens, and how often it woke up (context
 * switches of all its threads, from /proc/<pid>/task/<tid>/status).
 *
 * `pid` is the server process: its CPU time (utime + stime from
 * /proc/<pid>/stat) over the measurement is reported. Output: one line,
 * starting with `name` and (load) the echoed MiB/s, one direction.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PATTERN 65536 /* the random pattern the streams are windows of */
#define BUF 65536     /* bytes read or written at most per call */

static unsigned char pattern[PATTERN + BUF]; /* pattern[i] == pattern[i % PATTERN] */

static void die(const char *what) {
    fprintf(stderr, "echo_client: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* For OpenSSL's failures: its error queue says why, errno may not. */
static void die_tls(const char *what) {
    fprintf(stderr, "echo_client: %s failed\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static double now_s(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU seconds (user + system) of process `pid` so far; 0 without a pid. */
static double proc_cpu(int pid) {
    if (pid <= 0) return 0;
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) die(path);
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = 0;
    /* Fields after the command (which may hold spaces): state is field 3,
     * utime field 14, stime field 15. */
    char *p = strrchr(line, ')');
    unsigned long utime = 0, stime = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) {
        fprintf(stderr, "echo_client: cannot parse %s\n", path);
        exit(1);
    }
    return (double)(utime + stime) / sysconf(_SC_CLK_TCK);
}

/* Context switches (voluntary + not) of every thread of process `pid` so far:
 * how often it went to sleep or was preempted, so over an idle window how
 * often anything woke it. */
static long proc_switches(int pid) {
    char path[64], line[256];
    long total = 0, n;
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d) die(path);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/%d/task/%.16s/status", pid, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue; /* a thread that just ended */
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1 ||
                sscanf(line, "nonvoluntary_ctxt_switches: %ld", &n) == 1)
                total += n;
        fclose(f);
    }
    closedir(d);
    return total;
}

/* Resident memory of process `pid` in KiB (VmRSS), or 0. */
static long proc_rss_kib(int pid) {
    char path[64], line[256];
    long kib = 0;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1) break;
    fclose(f);
    return kib;
}

static int connect_loopback(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) die("setsockopt");
    return fd;
}

/* ===== load ===== */

struct conn {
    int fd;
    SSL *ssl;        /* NULL without -T */
    size_t start;    /* where its stream starts in the pattern */
    uint64_t sent;   /* bytes of the stream sent */
    uint64_t got;    /* bytes echoed back and checked */
    uint64_t limit;  /* bytes of the messages started so far */
    size_t retry;    /* TLS: the length an unfinished SSL_write must be retried with, or 0 */
    int write_wait;  /* what the unsent part waits for: EPOLLOUT, EPOLLIN (TLS), or 0 */
    int read_wait;   /* EPOLLOUT when a TLS read must wait to write, else 0 */
    int watched;     /* the events epoll watches */
};

struct settings {
    int conns, size, depth, pid, idle, pending;
    double seconds;
    const char *name, *cafile;
};

/* The result of one non-blocking read or write: the bytes moved, 0 when the
 * peer closed (read), or -1 when the call must wait for `*wait` (EPOLLIN or
 * EPOLLOUT) and be made again. Other errors end the run. */
static ssize_t tls_result(SSL *ssl, int r, int *wait, const char *what) {
    if (r > 0) return r;
    switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ: *wait = EPOLLIN; return -1;
    case SSL_ERROR_WANT_WRITE: *wait = EPOLLOUT; return -1;
    case SSL_ERROR_ZERO_RETURN: return 0;
    case SSL_ERROR_SYSCALL:
        if (errno == 0 || errno == ECONNRESET) return 0;
        die(what);
    }
    die_tls(what);
    return -1;
}

static ssize_t conn_read(struct conn *c, void *buf, size_t n, int *wait) {
    if (c->ssl) return tls_result(c->ssl, SSL_read(c->ssl, buf, (int)n), wait, "SSL_read");
    ssize_t r = read(c->fd, buf, n);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) *wait = EPOLLIN;
    else if (r < 0) die("read");
    return r;
}

/* OpenSSL wants an unfinished SSL_write retried with the same length, so a
 * retry keeps the length of the first try (the bytes at that place of the
 * stream are the same). */
static ssize_t conn_write(struct conn *c, const void *buf, size_t n, int *wait) {
    if (c->ssl) {
        if (c->retry) n = c->retry;
        ssize_t w = tls_result(c->ssl, SSL_write(c->ssl, buf, (int)n), wait, "SSL_write");
        if (w == 0) {
            fprintf(stderr, "echo_client: SSL_write: closed by the server\n");
            exit(1);
        }
        c->retry = w < 0 ? n : 0;
        return w;
    }
    ssize_t w = write(c->fd, buf, n);
    if (w < 0 && (errno == EAGAIN || errno == EINTR)) *wait = EPOLLOUT;
    else if (w < 0) die("write");
    return w;
}

/* Watches for what the connection waits on: always its input, and
 * writability while a write (or a TLS read) waits for it. */
static void watch(int ep, struct conn *c) {
    int events = EPOLLIN | ((c->write_wait | c->read_wait) & EPOLLOUT);
    if (events != c->watched) {
        struct epoll_event ev = {.events = (uint32_t)events, .data.ptr = c};
        if (epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl");
        c->watched = events;
    }
}

/* Sends what the socket takes of the messages started; watches for
 * writability while some is left. */
static void pump(int ep, struct conn *c) {
    c->write_wait = 0;
    while (c->sent < c->limit) {
        size_t n = c->limit - c->sent;
        if (n > BUF) n = BUF;
        ssize_t w = conn_write(c, pattern + (c->start + c->sent) % PATTERN, n, &c->write_wait);
        if (w < 0) break;
        c->sent += (uint64_t)w;
    }
    watch(ep, c);
}

/* A TLS session on connected socket `fd`, its handshake done (blocking). */
static SSL *tls_connect(SSL_CTX *ctx, int fd) {
    SSL *ssl = SSL_new(ctx);
    if (!ssl || !SSL_set_fd(ssl, fd) || !SSL_set_tlsext_host_name(ssl, "localhost") ||
        !SSL_set1_host(ssl, "localhost"))
        die_tls("SSL_new");
    if (SSL_connect(ssl) != 1) die_tls("the TLS handshake");
    return ssl;
}

static SSL_CTX *tls_context(const char *cafile) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx || SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1) die_tls(cafile);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE);
    return ctx;
}

static int load(const struct settings *s, int port) {
    struct conn *conns = calloc(s->conns, sizeof *conns);
    struct epoll_event *evs = calloc(s->conns, sizeof *evs);
    static unsigned char in[BUF];
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (!conns || !evs || ep < 0) die("setup");
    SSL_CTX *ctx = s->cafile ? tls_context(s->cafile) : NULL;
    for (int i = 0; i < s->conns; i++) {
        struct conn *c = &conns[i];
        c->fd = connect_loopback(port);
        if (ctx) c->ssl = tls_connect(ctx, c->fd);
        if (fcntl(c->fd, F_SETFL, O_NONBLOCK) < 0) die("fcntl");
        c->start = (size_t)i * 4099 % PATTERN;
        c->watched = EPOLLIN;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) die("epoll_ctl");
    }
    const uint64_t size = (uint64_t)s->size, window = size * (uint64_t)s->depth;
    double cpu0 = proc_cpu(s->pid), me0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    double t0 = now_s(CLOCK_MONOTONIC), last = t0;
    uint64_t in_flight = 0;
    for (int i = 0; i < s->conns; i++) {
        conns[i].limit = window;
        in_flight += window;
        pump(ep, &conns[i]);
    }
    int sending = 1;
    uint64_t echoed = 0;
    while (in_flight > 0) {
        int n = epoll_wait(ep, evs, s->conns, 100);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait");
        double now = now_s(CLOCK_MONOTONIC);
        if (sending && now - t0 >= s->seconds) sending = 0; /* drain what is in flight */
        if (n > 0) last = now;
        else if (now - last > 5) {
            fprintf(stderr, "echo_client: %s: no echo for 5 s\n", s->name);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            int ready = (int)evs[i].events;
            if (ready & (EPOLLERR | EPOLLHUP)) ready |= EPOLLIN | EPOLLOUT; /* the next call says why */
            if (c->write_wait & ready) pump(ep, c);
            if (!(ready & (c->read_wait ? c->read_wait : EPOLLIN))) continue;
            /* TLS reads go on while OpenSSL holds decrypted bytes: epoll
             * cannot see those. */
            do {
                c->read_wait = 0;
                ssize_t r = conn_read(c, in, BUF, &c->read_wait);
                if (r < 0) break;
                if (r == 0) {
                    fprintf(stderr, "echo_client: %s: connection %d: closed by the server\n", s->name,
                            (int)(c - conns));
                    return 1;
                }
                if (c->got + (uint64_t)r > c->sent ||
                    memcmp(in, pattern + (c->start + c->got) % PATTERN, (size_t)r) != 0) {
                    fprintf(stderr, "echo_client: %s: connection %d: the echo differs from what was sent\n",
                            s->name, (int)(c - conns));
                    return 1;
                }
                /* Each completed message lets the next one start. */
                uint64_t done = (c->got + (uint64_t)r) / size - c->got / size;
                c->got += (uint64_t)r;
                echoed += (uint64_t)r;
                in_flight -= (uint64_t)r;
                if (sending && done > 0) {
                    c->limit += done * size;
                    in_flight += done * size;
                    pump(ep, c);
                }
            } while (c->ssl && SSL_has_pending(c->ssl));
            watch(ep, c);
        }
    }
    double secs = now_s(CLOCK_MONOTONIC) - t0;
    double server = proc_cpu(s->pid) - cpu0, me = now_s(CLOCK_PROCESS_CPUTIME_ID) - me0;
    double msgs = (double)echoed / size;
    printf("%-9s %8.1f MiB/s %9.0f msg/s", s->name, echoed / secs / (1024.0 * 1024.0), msgs / secs);
    if (s->pid > 0) printf(" | server CPU %6.2f us/msg (%3.0f %%)", server * 1e6 / msgs, 100 * server / secs);
    printf(" | client busy %3.0f %% | %d conns x %d in flight x %d B, %.2f s", 100 * me / secs, s->conns,
           s->depth, s->size, secs);
    if (ctx) printf(" | %s %s", SSL_get_version(conns[0].ssl), SSL_get_cipher_name(conns[0].ssl));
    printf("\n");
    for (int i = 0; i < s->conns; i++) {
        SSL_free(conns[i].ssl);
        close(conns[i].fd);
    }
    SSL_CTX_free(ctx);
    close(ep);
    free(conns);
    free(evs);
    return 0;
}

/* ===== idle ===== */

static int idle(const struct settings *s, int port) {
    int *fds = calloc(s->conns, sizeof *fds);
    unsigned char *in = malloc(s->size);
    if (!fds || !in) die("malloc");
    for (int i = 0; i < s->conns; i++) fds[i] = connect_loopback(port);
    /* One echo each: the server has accepted every connection and is
     * waiting on it again. */
    for (int i = 0; i < s->conns; i++) {
        const unsigned char *msg = pattern + (size_t)i * 4099 % PATTERN;
        if (write(fds[i], msg, s->size) != s->size) die("write");
        for (int got = 0; got < s->size;) {
            ssize_t r = read(fds[i], in + got, s->size - got);
            if (r <= 0) die(r == 0 ? "read: closed by the server" : "read");
            got += (int)r;
        }
        if (memcmp(in, msg, s->size) != 0) {
            fprintf(stderr, "echo_client: %s: connection %d: the echo differs\n", s->name, i);
            return 1;
        }
    }
    struct timespec apart = {0, 200000000}, settle = {0, 500000000};
    for (int part = 0; part < 2 && s->pending > 0; part++) {
        int from = part ? 1 : 0, to = part ? s->pending : 1;
        for (int i = 0; i < s->conns; i++)
            if (to > from && write(fds[i], pattern + from, to - from) != to - from) die("write");
        nanosleep(&apart, NULL);
    }
    nanosleep(&settle, NULL);
    double cpu0 = proc_cpu(s->pid), t0 = now_s(CLOCK_MONOTONIC);
    long sw0 = s->pid > 0 ? proc_switches(s->pid) : 0;
    struct timespec wait = {(time_t)s->seconds, (long)((s->seconds - (time_t)s->seconds) * 1e9)};
    while (nanosleep(&wait, &wait) < 0 && errno == EINTR) {}
    double secs = now_s(CLOCK_MONOTONIC) - t0, cpu = proc_cpu(s->pid) - cpu0;
    long wakeups = s->pid > 0 ? proc_switches(s->pid) - sw0 : 0;
    long rss = s->pid > 0 ? proc_rss_kib(s->pid) : 0;
    printf("%-9s %d idle connections (%d bytes pending each): server CPU %.0f ms over %.2f s (in %ld ms ticks), "
           "%ld wakeups, RSS %.1f MiB (%.1f KiB per connection)\n",
           s->name, s->conns, s->pending, cpu * 1e3, secs, 1000 / sysconf(_SC_CLK_TCK), wakeups, rss / 1024.0,
           (double)rss / s->conns);
    for (int i = 0; i < s->conns; i++) close(fds[i]);
    free(fds);
    free(in);
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: echo_client [-i | -T cafile] [-c conns] [-s size] [-P pending] [-d depth] [-t seconds] "
                    "[-p pid] [-n name] port\n");
    exit(2);
}

int main(int argc, char **argv) {
    struct settings s = {.conns = 0, .size = 4096, .depth = 1, .pid = 0, .seconds = 3, .name = "server"};
    int opt;
    while ((opt = getopt(argc, argv, "iT:c:s:P:d:t:p:n:")) != -1) {
        switch (opt) {
        case 'i': s.idle = 1; break;
        case 'T': s.cafile = optarg; break;
        case 'c': s.conns = atoi(optarg); break;
        case 's': s.size = atoi(optarg); break;
        case 'P': s.pending = atoi(optarg); break;
        case 'd': s.depth = atoi(optarg); break;
        case 't': s.seconds = atof(optarg); break;
        case 'p': s.pid = atoi(optarg); break;
        case 'n': s.name = optarg; break;
        default: usage();
        }
    }
    if (optind != argc - 1) usage();
    int port = atoi(argv[optind]);
    if (s.conns == 0) s.conns = s.idle ? 10000 : 64;
    if (port <= 0 || s.conns <= 0 || s.size <= 0 || s.depth <= 0 || !(s.seconds > 0) || s.pending < 0 ||
        s.pending >= s.size || (s.idle && s.cafile))
        usage();
    srand(7);
    for (int i = 0; i < PATTERN; i++) pattern[i] = (unsigned char)(rand() >> 7);
    memcpy(pattern + PATTERN, pattern, BUF);
    return s.idle ? idle(&s, port) : load(&s, port);
}
