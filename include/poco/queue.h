/* poco-compatible API (cothread): a queue of fixed-size items, copied in
 * and out. */
#ifndef POCO_QUEUE_H
#define POCO_QUEUE_H

#include <poco/coro.h>
#include <poco/platform.h>
#include <poco/result.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ResultQueue {
    RES_QUEUE_EMPTY = RES_CODE(RES_GROUP_QUEUE, 0),
    RES_QUEUE_FULL = RES_CODE(RES_GROUP_QUEUE, 1),
};

typedef struct queue {
    size_t count;
    size_t read_idx;
    size_t write_idx;
    uint8_t *item_buffer;
    size_t item_size;
    size_t max_items;
    PocoSubject subject_; /* private */
    bool owned_;          /* private: from queue_create */
} Queue;

Queue *queue_create_static(Queue *queue, size_t num_items, size_t item_size,
                           uint8_t *item_buffer);
Queue *queue_create(size_t num_items, size_t item_size);
void queue_free(Queue *queue);

size_t queue_item_count(Queue *queue);
bool queue_is_full(Queue *queue);
bool queue_is_empty(Queue *queue);

/** Waits for room, or `timeout` ticks: RES_OK or RES_TIMEOUT; yields after. */
Result queue_put(Queue *queue, void const *item, PlatformTick timeout);
/** Waits for an item, or `timeout` ticks: RES_OK or RES_TIMEOUT; yields after. */
Result queue_get(Queue *queue, void *item, PlatformTick timeout);
/** RES_OK or RES_QUEUE_FULL, never yields. */
Result queue_put_no_wait(Queue *queue, void const *item);
/** RES_OK or RES_QUEUE_EMPTY, never yields. */
Result queue_get_no_wait(Queue *queue, void *item);
/** From another thread or a signal handler: RES_OK, RES_QUEUE_FULL (also when
 * a coroutine is using the queue at that instant), RES_NOTIFY_FAILED. */
Result queue_put_from_isr(Queue *queue, void const *item);
/** RES_OK, RES_QUEUE_EMPTY (also when the queue is busy), RES_NOTIFY_FAILED. */
Result queue_get_from_isr(Queue *queue, void *item);
/** Without waking anybody (poco's raw forms). */
Result queue_raw_put(Queue *queue, void const *item);
Result queue_raw_get(Queue *queue, void *item);

#ifdef __cplusplus
}
#endif

#endif /* POCO_QUEUE_H */
