/* poco-compatible API (cothread): the platform, here Unix on cothread's core.
 *
 * poco has one platform header per port (Unix, Windows, Zephyr); this is the
 * port to cothread: stacks in machine words, one tick per millisecond of
 * CLOCK_MONOTONIC, and contexts that are cothread's raw contexts
 * (cot_context_make / cot_context_switch: the callee-saved registers, no
 * signal mask, no syscall). As in poco, any of the platform_* names may be a
 * macro or a function. See doc/compatibility.md, "poco". */
#ifndef POCO_PLATFORM_H
#define POCO_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- stacks ---- */

/** One element of a coroutine stack: stacks are counted in elements. A
 * machine word, so that an array of them is word aligned (poco's Unix port
 * uses uint32_t, its Zephyr port uint64_t). */
typedef uintptr_t PlatformStackElement;

/** The stack coro_create gives when asked for DEFAULT_STACK_SIZE: 64 KiB, in
 * elements (poco's Unix port: SIGSTKSZ bytes). */
#define DEFAULT_STACK_SIZE ((size_t)(64 * 1024) / sizeof(PlatformStackElement))

/** The smallest stack coro_create_static accepts: 4 KiB (the core's
 * COT_CORO_STACK_MIN), in elements (poco's Unix port: MINSIGSTKSZ bytes). */
#define MIN_STACK_SIZE ((size_t)4096 / sizeof(PlatformStackElement))

/** A stack for platform_make_context: where it starts and its length in
 * bytes (the name of poco's Windows and Zephyr ports). */
typedef struct stack_descriptor {
    void *ss_sp;    /**< the lowest address of the stack */
    size_t ss_size; /**< its length in bytes */
} StackDescriptor;

/* ---- contexts ---- */

typedef struct platform_context PlatformContext;

/** A context to switch to: a cothread raw context (cot_context). Coro keeps
 * two, as poco does: `resume_context` (the coroutine) and `suspend_context`
 * (whoever resumed it). The fields named as in ucontext_t are public; the
 * others are private. */
struct platform_context {
    /** Resumed when the function given to platform_make_context returns
     * (NULL: the process aborts, where ucontext would end the thread). */
    PlatformContext *uc_link;
    /** The stack platform_make_context runs the function on. */
    StackDescriptor uc_stack;

    /* Private. */
    void *ctx_;                      /* cot_context: where a switch here resumes */
    void (*entry_)(void *, void *);  /* platform_make_context's function */
    void *arg0_, *arg1_;             /* and its two arguments */
};

/** Prepares `context` for platform_make_context; returns 0. It does not
 * capture the running context (a cot_context is resumed once; there is no
 * getcontext that returns twice): a context gets saved by
 * platform_swap_context. */
int platform_get_context(PlatformContext *context);

/** Switches to `context` for good (the running context is not saved);
 * returns -1 only if `context` holds nothing to resume. */
int platform_set_context(PlatformContext *context);

/** Saves the running context into `old_context` and resumes `new_context`;
 * returns 0 once something resumes `old_context` (-1 at once if
 * `new_context` holds nothing to resume). */
int platform_swap_context(PlatformContext *old_context, PlatformContext *new_context);

/** Makes `context` run `entrypoint(coro, user_context)` on its `uc_stack`
 * (at least MIN_STACK_SIZE elements) when first resumed; returns 0, or -1
 * for a missing or too small stack. */
int platform_make_context(PlatformContext *context, void (*entrypoint)(void *, void *),
                          void *coro, void *user_context);

/** Forgets what `context` holds (its stack stays the caller's); returns 0. */
int platform_destroy_context(PlatformContext *context);

/* ---- time ---- */

/** A duration or a point in time, in ticks (milliseconds). */
typedef int64_t PlatformTick;
/** An older spelling of PlatformTick, kept for programs that use it. */
typedef PlatformTick PlatformTicks;

/** A timeout that waits forever, as in poco's Unix port. Any other negative
 * timeout waits forever too (poco's Windows port uses INT64_MAX: also
 * forever here). */
#define PLATFORM_TICKS_FOREVER (INT64_MIN)

/** Ticks per millisecond: 1. */
#define platform_get_ticks_per_ms() (1)

/** Now, in milliseconds of CLOCK_MONOTONIC. */
PlatformTick platform_get_monotonic_ticks(void);

/** Critical sections: empty, as in poco's Unix port. The primitives need
 * none (their _from_isr forms are lock-free or use try-locks). */
#define platform_enter_critical_section()
/** See platform_enter_critical_section. */
#define platform_exit_critical_section()

#ifdef __cplusplus
}
#endif

#endif /* POCO_PLATFORM_H */
