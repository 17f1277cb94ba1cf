/* poco-compatible API (cothread): the platform, here Unix on cothread's core.
 * One tick is one millisecond of CLOCK_MONOTONIC. */
#ifndef POCO_PLATFORM_H
#define POCO_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A duration or a point in time, in ticks (milliseconds). */
typedef int64_t PlatformTick;
/** poco's older spelling. */
typedef PlatformTick PlatformTicks;

/** Wait forever (any negative timeout waits forever too). */
#define PLATFORM_TICKS_FOREVER (INT64_MAX)

/** One element of a coroutine stack: stacks are counted in elements. */
typedef uintptr_t PlatformStackElement;

/** A stack of 64 KiB, in elements. */
#define DEFAULT_STACK_SIZE ((size_t)(64 * 1024) / sizeof(PlatformStackElement))

/** The smallest stack (4 KiB, the core's COT_CORO_STACK_MIN), in elements. */
#define MIN_STACK_SIZE ((size_t)4096 / sizeof(PlatformStackElement))

#define platform_get_ticks_per_ms() (1)

/** Milliseconds of CLOCK_MONOTONIC. */
PlatformTick platform_get_monotonic_ticks(void);

/* Kept for programs that bracket their own code: the primitives need no
 * critical sections here (their _from_isr forms are lock-free). */
#define platform_enter_critical_section()
#define platform_exit_critical_section()

#ifdef __cplusplus
}
#endif

#endif /* POCO_PLATFORM_H */
