/* poco-compatible API (cothread): a queue of fixed-size items, copied in
 * and out, for coroutines (waiting forms), any code of the scheduler's thread
 * (_no_wait forms) and interrupts (_from_isr forms: other threads, signal
 * handlers). The raw forms, which wake nobody, are in poco/queue_raw.h. */
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

/** The queue's result codes. */
enum res_code_queue {
    /** Nothing to get. */
    RES_QUEUE_EMPTY = RES_CODE(RES_GROUP_QUEUE, 0),
    /** No room to put. */
    RES_QUEUE_FULL = RES_CODE(RES_GROUP_QUEUE, 1),
};

/** A queue: a ring of `max_items` items of `item_size` bytes. The fields up
 * to `max_items` are poco's (read them); the rest is private. */
typedef struct queue {
    size_t count;         /**< the items in it */
    size_t read_idx;      /**< the next item to get */
    size_t write_idx;     /**< where the next item goes */
    uint8_t *item_buffer; /**< the ring */
    size_t item_size;     /**< bytes per item */
    size_t max_items;     /**< room, in items */
    PocoSubject subject_; /* private */
    bool owned_;          /* private: from queue_create */
} Queue;

/** Makes a queue in the caller's memory: `item_buffer` holds `num_items`
 * items of `item_size` bytes. Returns `queue`, or NULL for bad arguments. */
Queue *queue_create_static(Queue *queue, size_t num_items, size_t item_size,
                           uint8_t *item_buffer);

/** Makes a queue and its buffer; NULL if out of memory or for a size of 0. */
Queue *queue_create(size_t num_items, size_t item_size);

/** Frees a queue of queue_create (NULL is ignored). */
void queue_free(Queue *queue);

/** The items in the queue. */
size_t queue_item_count(Queue const *queue);

/** Whether the queue is full. */
bool queue_is_full(Queue const *queue);

/** Whether the queue is empty. */
bool queue_is_empty(Queue const *queue);

/** In a coroutine: copies `item` in, waiting for room at most `timeout`
 * ticks; then yields (CORO_SIG_NOTIFY). RES_OK or RES_TIMEOUT. */
Result queue_put(Queue *queue, void const *item, PlatformTick timeout);

/** Copies `item` in if there is room and wakes the getters, without
 * yielding: RES_OK or RES_QUEUE_FULL. */
Result queue_put_no_wait(Queue *queue, void const *item);

/** From another thread or a signal handler: RES_OK, RES_QUEUE_FULL (also
 * when a coroutine is using the queue at that instant), RES_NOTIFY_FAILED
 * (put, but the scheduler took too many external events since its last
 * step). */
Result queue_put_from_isr(Queue *queue, void const *item);

/** In a coroutine: copies the oldest item out into `item`, waiting for one at
 * most `timeout` ticks; then yields. RES_OK or RES_TIMEOUT. */
Result queue_get(Queue *queue, void *item, PlatformTick timeout);

/** Copies the oldest item out if there is one and wakes the putters, without
 * yielding: RES_OK or RES_QUEUE_EMPTY. */
Result queue_get_no_wait(Queue *queue, void *item);

/** From another thread or a signal handler: RES_OK, RES_QUEUE_EMPTY (also
 * when a coroutine is using the queue at that instant), RES_NOTIFY_FAILED. */
Result queue_get_from_isr(Queue *queue, void *item);

#ifdef __cplusplus
}
#endif

#endif /* POCO_QUEUE_H */
