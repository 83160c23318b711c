/*
 * Internal to CHangWatchCapture: what hw_capture_signal.c needs from hw_unwind.c.
 */
#ifndef HW_INTERNAL_H
#define HW_INTERNAL_H

#include <stdint.h>
#include <ucontext.h>

/* Prepare libunwind once (patch the local address space's accessors). Not async-signal-safe. */
int hw_unwind_prepare(void);

/*
 * Walk the stack described by `uc` (a signal context or a synthesized one) into `frames`.
 * Reads are allowed in [stack_low, stack_high), in [uc, uc + uc_size) and in the published image
 * ranges. Async-signal-safe. Returns the number of frames written; *last_sp receives the stack
 * pointer of the last frame written.
 */
int hw_unwind_walk(ucontext_t *uc, size_t uc_size, uintptr_t stack_low, uintptr_t stack_high,
                   uintptr_t *frames, int max_frames, int32_t *flags, uintptr_t *last_sp);

/* Program counter and stack pointer held in a context. Async-signal-safe. */
uintptr_t hw_context_pc(const ucontext_t *uc);
uintptr_t hw_context_sp(const ucontext_t *uc);

/* Bytes of a kernel-provided signal context that may be read (up to the end of uc_mcontext). */
#define HW_SIGNAL_CONTEXT_SIZE (offsetof(ucontext_t, uc_mcontext) + sizeof(mcontext_t))

/* The x86_64 and aarch64 ABIs let leaf code use 128 bytes below the stack pointer (the red zone),
 * and unwind rules in function epilogues point there (the slot a frame pointer was just popped
 * from). Signal frames are never placed in it, so it may be read. */
#define HW_RED_ZONE 128

/* The lowest stack address a walk from stack pointer `sp` may read. */
static inline uintptr_t hw_stack_floor(uintptr_t sp, uintptr_t stack_low) {
    uintptr_t floor = sp > HW_RED_ZONE ? sp - HW_RED_ZONE : 0;
    return floor > stack_low ? floor : stack_low;
}

/* CLOCK_MONOTONIC in nanoseconds. Async-signal-safe. */
int64_t hw_now_ns(void);

#endif
