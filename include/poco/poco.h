/* poco-compatible API (cothread): everything. Programs written for poco
 * ("Pocket Coroutines") build unchanged against these headers and link
 * libcothread. See doc/c.md, "poco-compatible API". */
#ifndef POCO_POCO_H
#define POCO_POCO_H

#include <poco/coro.h>
#include <poco/event.h>
#include <poco/mutex.h>
#include <poco/platform.h>
#include <poco/queue.h>
#include <poco/result.h>
#include <poco/scheduler.h>
#include <poco/schedulers/round_robin.h>
#include <poco/semaphore.h>
#include <poco/stream.h>

#endif /* POCO_POCO_H */
