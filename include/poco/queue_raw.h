/* poco-compatible API (cothread): the raw queue operations, which wake
 * nobody: for queues that no coroutine waits on (a waiter would not learn
 * of the change). */
#ifndef POCO_QUEUE_RAW_H
#define POCO_QUEUE_RAW_H

#include <poco/queue.h>
#include <poco/result.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Copies `item` in if there is room: RES_OK or RES_QUEUE_FULL. */
Result queue_raw_put(Queue *queue, void const *item);

/** Copies the oldest item out into `item`: RES_OK or RES_QUEUE_EMPTY. */
Result queue_raw_get(Queue *queue, void *item);

#ifdef __cplusplus
}
#endif

#endif /* POCO_QUEUE_RAW_H */
