/* A C program using the installed libcothread, built by tests/consumer (CMake,
 * shared and static) and by run.cmake with pkg-config flags. Prints "consumer ok". */
#include <cothread.h>

#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                 \
            return 1;                                                       \
        }                                                                   \
    } while (0)

#define CHECK_RC(expr)                                                      \
    do {                                                                    \
        int rc_ = (expr);                                                   \
        if (rc_ < 0) {                                                      \
            fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", __FILE__,        \
                    __LINE__, #expr, rc_, cot_strerror(rc_));               \
            return 1;                                                       \
        }                                                                   \
    } while (0)

int main(void) {
    unsigned expected = ((unsigned)COT_VERSION_MAJOR << 16) |
                        ((unsigned)COT_VERSION_MINOR << 8) |
                        (unsigned)COT_VERSION_PATCH;
    char expected_string[32];
    snprintf(expected_string, sizeof expected_string, "%d.%d.%d",
             (int)COT_VERSION_MAJOR, (int)COT_VERSION_MINOR, (int)COT_VERSION_PATCH);

    CHECK(cot_version() == expected);
    CHECK(cot_version_string() != NULL);
    CHECK(strncmp(cot_version_string(), expected_string, strlen(expected_string)) == 0);

    cot_sched *sched = cot_sched_new();
    CHECK(sched != NULL);
    CHECK(cot_sched_ready_head(sched) == 0);

    cot_task first = 0, second = 0;
    CHECK_RC(cot_task_new(sched, NULL, &first));
    CHECK_RC(cot_task_new(sched, NULL, &second));
    CHECK(first != 0 && second != 0 && first != second);

    CHECK(cot_sched_schedule(sched, first, COT_LATER) == 1);
    CHECK(cot_sched_schedule(sched, second, COT_LATER) == 1);
    CHECK(cot_sched_schedule(sched, first, COT_LATER) == 0); /* already scheduled */
    CHECK(cot_sched_ready_head(sched) == first);

    CHECK(cot_strerror(-22) != NULL);
    CHECK_RC(cot_sched_free(sched));

    printf("cothread %s\n", cot_version_string());
    printf("consumer ok\n");
    return 0;
}
