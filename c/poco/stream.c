/* Byte streams: a ring buffer with free-running read and write counts
 * (used = write - read). The state is changed under the subject's try-lock,
 * which _from_isr forms only try (see internal.h). */
#include "internal.h"

#include <string.h>

#define ISR_TRIES 64

Stream *stream_create_static(Stream *stream, size_t buffer_size, uint8_t *buffer) {
    if (stream == NULL || buffer_size == 0 || buffer == NULL) {
        return NULL;
    }
    *stream = (Stream){.buffer = buffer, .max_size = buffer_size};
    stream->subject_.owner = stream;
    return stream;
}

Stream *stream_create(size_t buffer_size) {
    Stream *s = malloc(sizeof *s);
    uint8_t *buf = buffer_size > 0 ? malloc(buffer_size) : NULL;
    if (s == NULL || buf == NULL) {
        free(s);
        free(buf);
        return NULL;
    }
    stream_create_static(s, buffer_size, buf);
    s->owned_ = true;
    return s;
}

void stream_free(Stream *stream) {
    if (stream != NULL) {
        if (stream->owned_) {
            free(stream->buffer);
        }
        free(stream);
    }
}

size_t stream_bytes_used(Stream const *stream) {
    if (stream == NULL) {
        return 0;
    }
    return __atomic_load_n(&stream->write_idx, __ATOMIC_ACQUIRE) -
           __atomic_load_n(&stream->read_idx, __ATOMIC_ACQUIRE);
}

size_t stream_bytes_free(Stream const *stream) {
    return stream != NULL ? stream->max_size - stream_bytes_used(stream) : 0;
}

/* Copies in (or out) what fits, under the lock held by the caller. */
static size_t put(Stream *s, uint8_t const *data, size_t n) {
    size_t room = s->max_size - (s->write_idx - s->read_idx);
    n = n < room ? n : room;
    for (size_t i = 0; i < n; ++i) {
        s->buffer[(s->write_idx + i) % s->max_size] = data[i];
    }
    __atomic_store_n(&s->write_idx, s->write_idx + n, __ATOMIC_RELEASE);
    return n;
}

static size_t get(Stream *s, uint8_t *data, size_t n) {
    size_t used = s->write_idx - s->read_idx;
    n = n < used ? n : used;
    for (size_t i = 0; i < n; ++i) {
        data[i] = s->buffer[(s->read_idx + i) % s->max_size];
    }
    __atomic_store_n(&s->read_idx, s->read_idx + n, __ATOMIC_RELEASE);
    return n;
}

static size_t locked_put(Stream *s, uint8_t const *data, size_t n) {
    poco_lock(&s->subject_);
    n = put(s, data, n);
    poco_unlock(&s->subject_);
    return n;
}

static size_t locked_get(Stream *s, uint8_t *data, size_t n) {
    poco_lock(&s->subject_);
    n = get(s, data, n);
    poco_unlock(&s->subject_);
    return n;
}

Result stream_send(Stream *stream, uint8_t const *data, size_t *data_size,
                   PlatformTick timeout) {
    if (stream == NULL || data_size == NULL || (data == NULL && *data_size > 0)) {
        return RES_INVALID_VALUE;
    }
    int64_t deadline = poco_deadline(timeout);
    size_t want = *data_size, sent = 0;
    Result r = RES_OK;
    for (int look = 0;; ++look) {
        if (look % 2 == 1) {
            poco_bind(&stream->subject_); /* then look again: see poco_bind */
        }
        size_t n = locked_put(stream, data + sent, want - sent);
        sent += n;
        if (n > 0) {
            /* Also a part: the receiver may be waiting for it (poco's sender
             * waits without telling). */
            poco_changed(&stream->subject_, CORO_EVTSRC_STREAM_SEND, false);
        }
        if (sent == want) {
            if (look % 2 == 1) {
                poco_unbind_idle(&stream->subject_);
            }
            break;
        }
        if (poco_current() == NULL) {
            r = RES_TIMEOUT;
            break;
        }
        if (look % 2 == 0) {
            continue;
        }
        if (!poco_wait(&stream->subject_, deadline, CORO_EVTSINK_STREAM_NOT_FULL)) {
            r = RES_TIMEOUT;
            break;
        }
    }
    *data_size = sent;
    if (sent > 0) {
        poco_yield_event(CORO_EVTSRC_STREAM_SEND, stream);
    }
    return r;
}

static Result receive(Stream *stream, uint8_t *buffer, size_t *buffer_size,
                      PlatformTick timeout, bool all) {
    if (stream == NULL || buffer_size == NULL || (buffer == NULL && *buffer_size > 0)) {
        return RES_INVALID_VALUE;
    }
    int64_t deadline = poco_deadline(timeout);
    size_t want = *buffer_size, got = 0;
    Result r = RES_OK;
    for (int look = 0;; ++look) {
        if (look % 2 == 1) {
            poco_bind(&stream->subject_); /* then look again: see poco_bind */
        }
        size_t n = locked_get(stream, buffer + got, want - got);
        got += n;
        if (n > 0) {
            poco_changed(&stream->subject_, CORO_EVTSRC_STREAM_RECV, false);
        }
        if (got == want || (!all && got > 0)) {
            if (look % 2 == 1) {
                poco_unbind_idle(&stream->subject_);
            }
            break;
        }
        if (poco_current() == NULL) {
            r = RES_TIMEOUT;
            break;
        }
        if (look % 2 == 0) {
            continue;
        }
        if (!poco_wait(&stream->subject_, deadline, CORO_EVTSINK_STREAM_NOT_EMPTY)) {
            r = RES_TIMEOUT;
            break;
        }
    }
    *buffer_size = got;
    if (got > 0) {
        poco_yield_event(CORO_EVTSRC_STREAM_RECV, stream);
    }
    return r;
}

Result stream_receive(Stream *stream, uint8_t *buffer, size_t *buffer_size,
                      PlatformTick timeout) {
    return receive(stream, buffer, buffer_size, timeout, true);
}

Result stream_receive_up_to(Stream *stream, uint8_t *buffer, size_t *buffer_size,
                            PlatformTick timeout) {
    return receive(stream, buffer, buffer_size, timeout, false);
}

/* The bytes in the ring, looked at under the lock: after poco_bind a waiter
 * looks at the state with a seq_cst operation (the try-lock), which orders the
 * look against a _from_isr receive (see poco_bind); stream_bytes_used's
 * acquire loads would not. */
static size_t locked_used(Stream *s) {
    poco_lock(&s->subject_);
    size_t n = s->write_idx - s->read_idx;
    poco_unlock(&s->subject_);
    return n;
}

Result stream_flush(Stream *stream, PlatformTick timeout) {
    if (stream == NULL) {
        return RES_INVALID_VALUE;
    }
    int64_t deadline = poco_deadline(timeout);
    for (;;) {
        if (locked_used(stream) == 0) {
            return RES_OK;
        }
        if (poco_current() == NULL) {
            return RES_TIMEOUT;
        }
        poco_bind(&stream->subject_); /* then look again: see poco_bind */
        if (locked_used(stream) == 0) {
            poco_unbind_idle(&stream->subject_);
            return RES_OK;
        }
        if (!poco_wait(&stream->subject_, deadline, CORO_EVTSINK_STREAM_NOT_FULL)) {
            return RES_TIMEOUT; /* as poco */
        }
    }
}

Result stream_send_no_wait(Stream *stream, uint8_t const *data, size_t *data_size) {
    if (stream == NULL || data_size == NULL || (data == NULL && *data_size > 0)) {
        return RES_INVALID_VALUE;
    }
    size_t n = locked_put(stream, data, *data_size);
    if (n == 0 && *data_size > 0) {
        *data_size = 0;
        return RES_STREAM_FULL;
    }
    *data_size = n;
    return n > 0 ? poco_changed(&stream->subject_, CORO_EVTSRC_STREAM_SEND, false) : RES_OK;
}

Result stream_receive_no_wait(Stream *stream, uint8_t *buffer, size_t *buffer_size) {
    if (stream == NULL || buffer_size == NULL || (buffer == NULL && *buffer_size > 0)) {
        return RES_INVALID_VALUE;
    }
    size_t n = locked_get(stream, buffer, *buffer_size);
    *buffer_size = n;
    if (n == 0) {
        return RES_STREAM_EMPTY;
    }
    return poco_changed(&stream->subject_, CORO_EVTSRC_STREAM_RECV, false);
}

Result stream_send_from_isr(Stream *stream, uint8_t const *data, size_t *data_size) {
    if (stream == NULL || data_size == NULL || (data == NULL && *data_size > 0)) {
        return RES_INVALID_VALUE;
    }
    for (int i = 0; i < ISR_TRIES; ++i) {
        if (poco_try_lock(&stream->subject_)) {
            size_t n = put(stream, data, *data_size);
            poco_unlock(&stream->subject_);
            *data_size = n;
            return n > 0 ? poco_isr_changed(&stream->subject_, CORO_EVTSRC_STREAM_SEND)
                         : RES_STREAM_FULL;
        }
    }
    *data_size = 0;
    return RES_STREAM_FULL;
}

Result stream_receive_from_isr(Stream *stream, uint8_t *buffer, size_t *buffer_size) {
    if (stream == NULL || buffer_size == NULL || (buffer == NULL && *buffer_size > 0)) {
        return RES_INVALID_VALUE;
    }
    for (int i = 0; i < ISR_TRIES; ++i) {
        if (poco_try_lock(&stream->subject_)) {
            size_t n = get(stream, buffer, *buffer_size);
            poco_unlock(&stream->subject_);
            *buffer_size = n;
            return n > 0 ? poco_isr_changed(&stream->subject_, CORO_EVTSRC_STREAM_RECV)
                         : RES_STREAM_EMPTY;
        }
    }
    *buffer_size = 0;
    return RES_STREAM_EMPTY;
}
