/* poco's platform contexts on cothread's raw contexts: a PlatformContext
 * holds a cot_context, made on its uc_stack with a trampoline that calls the
 * function with its two arguments, and switched with cot_context_switch. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

int platform_get_context(PlatformContext *context) {
    (void)context; /* nothing to capture: see poco/platform.h */
    return 0;
}

/* The first function on the stack of a made context. The first switch into
 * it hands over the PlatformContext (platform_swap_context,
 * platform_set_context). */
static void platform_trampoline(void *arg) {
    PlatformContext *c = arg;
    c->entry_(c->arg0_, c->arg1_);
    if (c->uc_link != NULL) {
        platform_set_context(c->uc_link);
    }
    fputs("poco platform: a context's function returned with no uc_link\n", stderr);
    abort();
}

int platform_make_context(PlatformContext *context, void (*entrypoint)(void *, void *),
                          void *coro, void *user_context) {
    if (context == NULL || entrypoint == NULL || context->uc_stack.ss_sp == NULL ||
        context->uc_stack.ss_size < MIN_STACK_SIZE * sizeof(PlatformStackElement)) {
        return -1;
    }
    context->entry_ = entrypoint;
    context->arg0_ = coro;
    context->arg1_ = user_context;
    context->ctx_ = cot_context_make(context->uc_stack.ss_sp, context->uc_stack.ss_size,
                                     platform_trampoline);
    return context->ctx_ != NULL ? 0 : -1;
}

int platform_swap_context(PlatformContext *old_context, PlatformContext *new_context) {
    if (old_context == NULL || new_context == NULL || new_context->ctx_ == NULL) {
        return -1;
    }
    void *to = new_context->ctx_;
    new_context->ctx_ = NULL; /* resumed: what it holds is spent */
    cot_context_switch((cot_context *)&old_context->ctx_, (cot_context)to, new_context);
    return 0;
}

int platform_set_context(PlatformContext *context) {
    if (context == NULL || context->ctx_ == NULL) {
        return -1;
    }
    void *to = context->ctx_;
    context->ctx_ = NULL;
    cot_context abandoned; /* never resumed */
    cot_context_switch(&abandoned, (cot_context)to, context);
    return -1; /* not reached */
}

int platform_destroy_context(PlatformContext *context) {
    if (context != NULL) {
        context->ctx_ = NULL;
        context->entry_ = NULL;
    }
    return 0;
}
