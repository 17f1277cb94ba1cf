/* Queues of fixed-size items in a ring buffer. The state is changed under the
 * subject's try-lock, which _from_isr forms only try (see internal.h). */
#include "internal.h"

#include <string.h>

/* How many times a _from_isr form tries the lock before giving up. */
#define ISR_TRIES 64

Queue *queue_create_static(Queue *queue, size_t num_items, size_t item_size,
                           uint8_t *item_buffer) {
    if (queue == NULL || num_items == 0 || item_size == 0 || item_buffer == NULL) {
        return NULL;
    }
    *queue = (Queue){.item_buffer = item_buffer, .item_size = item_size, .max_items = num_items};
    queue->subject_.owner = queue;
    return queue;
}

Queue *queue_create(size_t num_items, size_t item_size) {
    if (num_items == 0 || item_size == 0 || num_items > SIZE_MAX / item_size) {
        return NULL;
    }
    Queue *q = malloc(sizeof *q);
    uint8_t *buf = malloc(num_items * item_size);
    if (q == NULL || buf == NULL) {
        free(q);
        free(buf);
        return NULL;
    }
    queue_create_static(q, num_items, item_size, buf);
    q->owned_ = true;
    return q;
}

void queue_free(Queue *queue) {
    if (queue != NULL) {
        if (queue->owned_) {
            free(queue->item_buffer);
        }
        free(queue);
    }
}

size_t queue_item_count(Queue const *queue) {
    return queue != NULL ? __atomic_load_n(&queue->count, __ATOMIC_ACQUIRE) : 0;
}

bool queue_is_full(Queue const *queue) {
    return queue != NULL && queue_item_count(queue) == queue->max_items;
}

bool queue_is_empty(Queue const *queue) { return queue_item_count(queue) == 0; }

/* The raw operations, under the lock. */
static bool put(Queue *q, void const *item) {
    if (q->count == q->max_items) {
        return false;
    }
    memcpy(q->item_buffer + q->write_idx * q->item_size, item, q->item_size);
    q->write_idx = (q->write_idx + 1) % q->max_items;
    __atomic_store_n(&q->count, q->count + 1, __ATOMIC_RELEASE);
    return true;
}

static bool get(Queue *q, void *item) {
    if (q->count == 0) {
        return false;
    }
    memcpy(item, q->item_buffer + q->read_idx * q->item_size, q->item_size);
    q->read_idx = (q->read_idx + 1) % q->max_items;
    __atomic_store_n(&q->count, q->count - 1, __ATOMIC_RELEASE);
    return true;
}

static bool locked_put(Queue *q, void const *item) {
    poco_lock(&q->subject_);
    bool ok = put(q, item);
    poco_unlock(&q->subject_);
    return ok;
}

static bool locked_get(Queue *q, void *item) {
    poco_lock(&q->subject_);
    bool ok = get(q, item);
    poco_unlock(&q->subject_);
    return ok;
}

Result queue_raw_put(Queue *queue, void const *item) {
    if (queue == NULL || item == NULL) {
        return RES_INVALID_VALUE;
    }
    return locked_put(queue, item) ? RES_OK : RES_QUEUE_FULL;
}

Result queue_raw_get(Queue *queue, void *item) {
    if (queue == NULL || item == NULL) {
        return RES_INVALID_VALUE;
    }
    return locked_get(queue, item) ? RES_OK : RES_QUEUE_EMPTY;
}

Result queue_put_no_wait(Queue *queue, void const *item) {
    Result r = queue_raw_put(queue, item);
    if (r == RES_OK) {
        r = poco_changed(&queue->subject_, CORO_EVTSRC_QUEUE_PUT, false);
    }
    return r;
}

Result queue_get_no_wait(Queue *queue, void *item) {
    Result r = queue_raw_get(queue, item);
    if (r == RES_OK) {
        r = poco_changed(&queue->subject_, CORO_EVTSRC_QUEUE_GET, false);
    }
    return r;
}

/* Getters and putters share the subject: a putter's wakeup may reach a
 * putter, which rechecks and waits again. */
static Result wait_for(Queue *queue, void *item, bool putting, PlatformTick timeout) {
    if (queue == NULL || item == NULL) {
        return RES_INVALID_VALUE;
    }
    int64_t deadline = poco_deadline(timeout);
    for (int look = 0;; ++look) {
        if (look % 2 == 1) {
            poco_bind(&queue->subject_); /* then look again: see poco_bind */
        }
        bool done = putting ? locked_put(queue, item) : locked_get(queue, item);
        if (done) {
            if (look % 2 == 1) {
                poco_unbind_idle(&queue->subject_);
            }
            poco_changed(&queue->subject_, putting ? CORO_EVTSRC_QUEUE_PUT : CORO_EVTSRC_QUEUE_GET,
                         true);
            return RES_OK;
        }
        if (poco_current() == NULL) {
            return RES_TIMEOUT;
        }
        if (look % 2 == 0) {
            continue;
        }
        if (!poco_wait(&queue->subject_, deadline,
                       putting ? CORO_EVTSINK_QUEUE_NOT_FULL : CORO_EVTSINK_QUEUE_NOT_EMPTY)) {
            return RES_TIMEOUT;
        }
    }
}

Result queue_put(Queue *queue, void const *item, PlatformTick timeout) {
    return wait_for(queue, (void *)item, true, timeout);
}

Result queue_get(Queue *queue, void *item, PlatformTick timeout) {
    return wait_for(queue, item, false, timeout);
}

Result queue_put_from_isr(Queue *queue, void const *item) {
    if (queue == NULL || item == NULL) {
        return RES_INVALID_VALUE;
    }
    for (int i = 0; i < ISR_TRIES; ++i) {
        if (poco_try_lock(&queue->subject_)) {
            bool ok = put(queue, item);
            poco_unlock(&queue->subject_);
            return ok ? poco_isr_changed(&queue->subject_, CORO_EVTSRC_QUEUE_PUT) : RES_QUEUE_FULL;
        }
    }
    return RES_QUEUE_FULL;
}

Result queue_get_from_isr(Queue *queue, void *item) {
    if (queue == NULL || item == NULL) {
        return RES_INVALID_VALUE;
    }
    for (int i = 0; i < ISR_TRIES; ++i) {
        if (poco_try_lock(&queue->subject_)) {
            bool ok = get(queue, item);
            poco_unlock(&queue->subject_);
            return ok ? poco_isr_changed(&queue->subject_, CORO_EVTSRC_QUEUE_GET) : RES_QUEUE_EMPTY;
        }
    }
    return RES_QUEUE_EMPTY;
}
