/*
 * Helpers shared by the event-loop benchmarks of bench/c: clocks, settings
 * from the environment or argv, error checks and the result lines.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CLOCK_MONOTONIC now, in ns: the wall time of a measurement. */
static inline uint64_t wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of a clock (CLOCK_THREAD_CPUTIME_ID, or a thread's clock from
 * pthread_getcpuclockid), in ns. */
static inline uint64_t clock_ns(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A positive number from the environment variable `name`, or `def`. */
static inline double env_num(const char *name, double def) {
    const char *s = getenv(name);
    if (!s || !*s) return def;
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v > 0)) {
        fprintf(stderr, "%s=%s: expected a positive number\n", name, s);
        exit(2);
    }
    return v;
}

/* Aborts with a message when a call returning 0 / a negative code fails. */
#define CHECK(expr)                                                               \
    do {                                                                          \
        long check_rc_ = (long)(expr);                                            \
        if (check_rc_ < 0) {                                                      \
            fprintf(stderr, "%s:%d: %s failed: %ld (errno %s)\n", __FILE__,      \
                    __LINE__, #expr, check_rc_, strerror(errno));                 \
            abort();                                                              \
        }                                                                         \
    } while (0)

/* Same for a pointer that must not be NULL. */
#define CHECK_PTR(expr)                                                           \
    do {                                                                          \
        if ((expr) == NULL) {                                                     \
            fprintf(stderr, "%s:%d: %s returned NULL\n", __FILE__, __LINE__,     \
                    #expr);                                                       \
            abort();                                                              \
        }                                                                         \
    } while (0)

/* A small deterministic PRNG (xorshift64*), so both sides draw the same
 * numbers. */
static inline uint64_t rng_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

#endif
