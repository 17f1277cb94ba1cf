/* poco-compatible API (cothread): a byte stream (a ring buffer) from one
 * producer to one consumer, coroutines or interrupts (_from_isr forms). */
#ifndef POCO_STREAM_H
#define POCO_STREAM_H

#include <poco/coro.h>
#include <poco/platform.h>
#include <poco/result.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The stream's result codes. */
enum res_code_stream {
    /** No byte to receive. */
    RES_STREAM_EMPTY = RES_CODE(RES_GROUP_STREAM, 0),
    /** No room to send a byte. */
    RES_STREAM_FULL = RES_CODE(RES_GROUP_STREAM, 1),
};

/** A stream: poco's fields, then private ones. */
typedef struct stream {
    uint8_t *buffer;      /**< the ring */
    size_t max_size;      /**< its length in bytes */
    size_t read_idx;      /**< bytes received so far (the position is modulo max_size) */
    size_t write_idx;     /**< bytes sent so far */
    PocoSubject subject_; /* private */
    bool owned_;          /* private: from stream_create */
} Stream;

/** Makes a stream in the caller's memory over `buffer` of `buffer_size`
 * bytes (any size above 0; poco wants a power of 2). Returns `stream`, or
 * NULL for bad arguments. */
Stream *stream_create_static(Stream *stream, size_t buffer_size, uint8_t *buffer);

/** Makes a stream and its buffer; NULL if out of memory or for size 0. */
Stream *stream_create(size_t buffer_size);

/** Frees a stream of stream_create (NULL is ignored). */
void stream_free(Stream *stream);

/** The bytes in the stream now. */
size_t stream_bytes_used(Stream const *stream);

/** The room in the stream now, in bytes. */
size_t stream_bytes_free(Stream const *stream);

/** In a coroutine: sends all `*data_size` bytes, waiting for room at most
 * `timeout` ticks; stores the bytes sent in `*data_size`, and yields if it
 * sent any. RES_OK or RES_TIMEOUT. */
Result stream_send(Stream *stream, uint8_t const *data, size_t *data_size,
                   PlatformTick timeout);

/** Sends what fits now and wakes the receiver, without yielding; stores the
 * count in `*data_size`. RES_OK, or RES_STREAM_FULL (nothing sent). */
Result stream_send_no_wait(Stream *stream, uint8_t const *data, size_t *data_size);

/** stream_send_no_wait from another thread or a signal handler:
 * RES_STREAM_FULL also when a coroutine is using the stream at that
 * instant; RES_NOTIFY_FAILED (sent, but the scheduler took too many
 * external events since its last step). */
Result stream_send_from_isr(Stream *stream, uint8_t const *data, size_t *data_size);

/** In a coroutine: receives all `*buffer_size` bytes, waiting at most
 * `timeout` ticks; stores the count in `*buffer_size` (also on timeout), and
 * yields if it received any. RES_OK or RES_TIMEOUT. */
Result stream_receive(Stream *stream, uint8_t *buffer, size_t *buffer_size,
                      PlatformTick timeout);

/** In a coroutine: waits at most `timeout` ticks for at least one byte, then
 * takes up to `*buffer_size`; stores the count. RES_OK or RES_TIMEOUT. */
Result stream_receive_up_to(Stream *stream, uint8_t *buffer, size_t *buffer_size,
                            PlatformTick timeout);

/** Receives what is there now (up to `*buffer_size`) and wakes the sender,
 * without yielding; stores the count. RES_OK or RES_STREAM_EMPTY. */
Result stream_receive_no_wait(Stream *stream, uint8_t *buffer, size_t *buffer_size);

/** stream_receive_no_wait from another thread or a signal handler
 * (RES_STREAM_EMPTY also when a coroutine is using the stream at that
 * instant; RES_NOTIFY_FAILED as stream_send_from_isr). */
Result stream_receive_from_isr(Stream *stream, uint8_t *buffer, size_t *buffer_size);

/** In a coroutine: waits at most `timeout` ticks until the stream is empty
 * (everything sent was received). RES_OK or RES_TIMEOUT. */
Result stream_flush(Stream *stream, PlatformTick timeout);

#ifdef __cplusplus
}
#endif

#endif /* POCO_STREAM_H */
