/* A minimal assertion helper for the C tests: no framework, a clear message. */
#ifndef COT_TEST_CHECK_H
#define COT_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define CHECK_EQ(a, b)                                                      \
    do {                                                                    \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);     \
        if (check_a_ != check_b_) {                                         \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n",     \
                    __FILE__, __LINE__, #a, check_a_, #b, check_b_);        \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

#endif
