/* poco-compatible API (cothread): result codes, with poco's names and values.
 * Each primitive's header adds its own group's codes. See doc/c.md,
 * "poco-compatible API". */
#ifndef POCO_RESULT_H
#define POCO_RESULT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What the poco functions return: RES_OK (0) or a code below. */
typedef uint32_t Result;

/** A code in poco's space: the group in the high 16 bits, the code within the
 * group in the low ones. */
#define RES_CODE(group, code) ((Result)(((uint32_t)(group) << 16) | (uint32_t)(code)))

/** The groups (fixed once given out, as in poco; 6 is unused there too). */
enum result_category {
    RES_GROUP_GENERAL = 0,   /**< codes any function may return */
    RES_GROUP_CORE = 1,      /**< reserved for the core (no code in it) */
    RES_GROUP_QUEUE = 2,     /**< poco/queue.h */
    RES_GROUP_EVENT = 3,     /**< poco/event.h (no code in it) */
    RES_GROUP_MUTEX = 4,     /**< poco/mutex.h */
    RES_GROUP_STREAM = 5,    /**< poco/stream.h */
    RES_GROUP_SEMAPHORE = 7, /**< poco/semaphore.h */
};

/** The general codes. */
enum res_codes_general {
    /** Success. */
    RES_OK = RES_CODE(RES_GROUP_GENERAL, 0),
    /** Out of memory, or no free slot (round_robin_scheduler_add_coro). */
    RES_NO_MEM = RES_CODE(RES_GROUP_GENERAL, 1),
    /** Not possible in the current state (here: adding a coroutine that is in
     * a scheduler already). */
    RES_INVALID_STATE = RES_CODE(RES_GROUP_GENERAL, 2),
    /** A bad argument (here: a NULL pointer; poco does not check). */
    RES_INVALID_VALUE = RES_CODE(RES_GROUP_GENERAL, 3),
    /** The operation would overflow (a semaphore released once too often). */
    RES_OVERFLOW = RES_CODE(RES_GROUP_GENERAL, 4),
    /** The wait's time ran out. */
    RES_TIMEOUT = RES_CODE(RES_GROUP_GENERAL, 5),
    /** The scheduler could not be told: more than
     * SCHEDULER_MAX_EXTERNAL_EVENT_COUNT external events (_from_isr forms,
     * scheduler_notify_from_isr) between two of its steps. */
    RES_NOTIFY_FAILED = RES_CODE(RES_GROUP_GENERAL, 6),
};

#ifdef __cplusplus
}
#endif

#endif /* POCO_RESULT_H */
