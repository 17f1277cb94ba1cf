/* poco-compatible API (cothread): everything an application uses. Programs
 * written for poco ("Pocket Coroutines") build unchanged against these
 * headers and link libcothread. The raw operations are in poco/coro_raw.h
 * and poco/queue_raw.h, included separately as in poco. See doc/c.md,
 * "poco-compatible API", and doc/compatibility.md, "poco". */
#ifndef POCO_POCO_H
#define POCO_POCO_H

#include <poco/context.h>
#include <poco/coro.h>
#include <poco/event.h>
#include <poco/intracoro.h>
#include <poco/mutex.h>
#include <poco/platform.h>
#include <poco/queue.h>
#include <poco/result.h>
#include <poco/scheduler.h>
#include <poco/schedulers/round_robin.h>
#include <poco/semaphore.h>
#include <poco/stream.h>

#endif /* POCO_POCO_H */
