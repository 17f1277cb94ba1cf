/* The poco tests' output: a log compared exactly with the expected text. */
#ifndef POCO_TEST_LOG_H
#define POCO_TEST_LOG_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char poco_log_buf[16384];
static size_t poco_log_len;

__attribute__((format(printf, 1, 2))) static void LOG(char const *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(poco_log_buf + poco_log_len, sizeof poco_log_buf - poco_log_len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        poco_log_len += (size_t)n;
    }
}

/* Compares the log with `expected` and empties it. */
#define EXPECT_LOG(expected)                                                         \
    do {                                                                             \
        if (strcmp(poco_log_buf, (expected)) != 0) {                                 \
            fprintf(stderr, "%s:%d: log differs\n--- expected:\n%s--- got:\n%s---\n", \
                    __FILE__, __LINE__, (expected), poco_log_buf);                   \
            exit(1);                                                                 \
        }                                                                            \
        poco_log_len = 0;                                                            \
        poco_log_buf[0] = '\0';                                                      \
    } while (0)

#endif
