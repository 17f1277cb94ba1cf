/* poco-compatible API (cothread): result codes, with poco's names and values.
 * See doc/c.md, "poco-compatible API". */
#ifndef POCO_RESULT_H
#define POCO_RESULT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t Result;

/** A code in poco's space: group in the high 16 bits, code in the low ones. */
#define RES_CODE(group, code) ((Result)(((uint32_t)(group) << 16) | (uint32_t)(code)))

enum ResultGroup {
    RES_GROUP_GENERAL = 0,
    RES_GROUP_CORE = 1,
    RES_GROUP_QUEUE = 2,
    RES_GROUP_EVENT = 3,
    RES_GROUP_MUTEX = 4,
    RES_GROUP_STREAM = 5,
    RES_GROUP_SEMAPHORE = 6,
};

enum ResultGeneral {
    RES_OK = RES_CODE(RES_GROUP_GENERAL, 0),
    RES_NO_MEM = RES_CODE(RES_GROUP_GENERAL, 1),
    RES_INVALID_STATE = RES_CODE(RES_GROUP_GENERAL, 2),
    RES_INVALID_VALUE = RES_CODE(RES_GROUP_GENERAL, 3),
    RES_OVERFLOW = RES_CODE(RES_GROUP_GENERAL, 4),
    RES_TIMEOUT = RES_CODE(RES_GROUP_GENERAL, 5),
};

enum ResultCore {
    /** The scheduler could not be told about an event (from an ISR). */
    RES_NOTIFY_FAILED = RES_CODE(RES_GROUP_CORE, 0),
};

#ifdef __cplusplus
}
#endif

#endif /* POCO_RESULT_H */
