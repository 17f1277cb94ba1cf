/* The monotonic clock in ns, for the C tests that time a wait. Include it
 * after a feature macro that declares clock_gettime (_POSIX_C_SOURCE). */
#ifndef COT_TEST_NOW_H
#define COT_TEST_NOW_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
