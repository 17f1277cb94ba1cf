/* poco-compatible API (cothread): a byte stream (ring buffer), one producer
 * and one consumer. */
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

enum ResultStream {
    RES_STREAM_EMPTY = RES_CODE(RES_GROUP_STREAM, 0),
    RES_STREAM_FULL = RES_CODE(RES_GROUP_STREAM, 1),
};

typedef struct stream {
    uint8_t *buffer;
    size_t max_size;
    size_t read_idx;  /* bytes read so far (the position is modulo max_size) */
    size_t write_idx; /* bytes written so far */
    PocoSubject subject_; /* private */
    bool owned_;          /* private: from stream_create */
} Stream;

Stream *stream_create_static(Stream *stream, size_t buffer_size, uint8_t *buffer);
Stream *stream_create(size_t buffer_size);
void stream_free(Stream *stream);

size_t stream_bytes_used(Stream *stream);
size_t stream_bytes_free(Stream *stream);

/** Sends all `*data_size` bytes, waiting for room, or `timeout` ticks; stores
 * the bytes sent in `*data_size`. RES_OK or RES_TIMEOUT; yields after. */
Result stream_send(Stream *stream, uint8_t const *data, size_t *data_size,
                   PlatformTick timeout);
/** Receives all `*buffer_size` bytes, or what came before `timeout` ticks
 * (RES_TIMEOUT); stores the count in `*buffer_size`. */
Result stream_receive(Stream *stream, uint8_t *buffer, size_t *buffer_size,
                      PlatformTick timeout);
/** Waits for at least one byte, then takes up to `*buffer_size`. */
Result stream_receive_up_to(Stream *stream, uint8_t *buffer, size_t *buffer_size,
                            PlatformTick timeout);
/** Waits until the stream is empty (everything sent was received). */
Result stream_flush(Stream *stream, PlatformTick timeout);
/** What fits now: RES_OK or RES_STREAM_FULL (nothing sent); never yields. */
Result stream_send_no_wait(Stream *stream, uint8_t const *data, size_t *data_size);
/** What is there now: RES_OK or RES_STREAM_EMPTY; never yields. */
Result stream_receive_no_wait(Stream *stream, uint8_t *buffer, size_t *buffer_size);
/** From another thread or a signal handler (RES_STREAM_FULL/EMPTY also when
 * a coroutine is using the stream at that instant). */
Result stream_send_from_isr(Stream *stream, uint8_t const *data, size_t *data_size);
Result stream_receive_from_isr(Stream *stream, uint8_t *buffer, size_t *buffer_size);

#ifdef __cplusplus
}
#endif

#endif /* POCO_STREAM_H */
