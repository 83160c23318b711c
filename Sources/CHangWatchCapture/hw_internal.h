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

/* Sessions: the read limits of a walk, keyed by the context pointer libunwind passes back to our
 * accessors. Open returns NULL when every session is taken. Async-signal-safe. */
void *hw_session_open(const ucontext_t *uc, size_t uc_size, uintptr_t stack_low, uintptr_t stack_high);
/* Closes a session; returns how many reads it refused. */
int hw_session_close(void *session);
/* A checked read inside a session's limits: 1 and *value, or 0 (refused). */
int hw_session_read(void *session, uintptr_t address, uintptr_t *value);

/* libunwind's own step loop over `uc` in a session of its own, appending to frames[*count].
 * Returns -1 (nothing done) when no session is free. */
int hw_libunwind_walk(ucontext_t *uc, size_t uc_size, int signal_frame, uintptr_t stack_low, uintptr_t stack_high,
                      uintptr_t *frames, int *count, int max_frames, int32_t *flags, uintptr_t *last_sp);

/* The fast walk (hw_unwind_rules.c): cached per-address rules applied with checked reads, rules
 * derived by libunwind on a miss. Returns -1 when it cannot run (architecture, no session). */
int hw_rules_walk(ucontext_t *uc, size_t uc_size, uintptr_t stack_low, uintptr_t stack_high, uintptr_t *frames,
                  int *count, int max_frames, int32_t *flags, uintptr_t *last_sp);

/* Whether the published table has call-frame information covering `lookup_ip` (the interrupted
 * address of an exact frame, the return address less one of a caller). Reads through the session
 * keyed by `arg`. Only for such an address may libunwind be asked to step: for any other, its
 * local unwinder would call dl_iterate_phdr. Async-signal-safe. */
int hw_unwind_info_covers(uintptr_t lookup_ip, void *arg);

/* Whether `address` lies in a published executable segment just after a call instruction. */
int hw_is_return_address(uintptr_t address);

/* Changes whenever a new image table is published. */
uint32_t hw_images_epoch(void);

/* Program counter and stack pointer held in a context. Async-signal-safe. */
uintptr_t hw_context_pc(const ucontext_t *uc);
uintptr_t hw_context_sp(const ucontext_t *uc);
uintptr_t hw_context_fp(const ucontext_t *uc);
void hw_context_set(ucontext_t *uc, uintptr_t pc, uintptr_t sp, uintptr_t fp);

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

/*
 * For the few functions that read stack words on an unwinder's behalf (hw_access_mem,
 * hw_session_read, the frame-record scan). They read a thread's stack on purpose, after the range
 * check: saved registers, return addresses, and, while a rule is derived or a frame record is
 * looked for, words that belong to no variable. Under AddressSanitizer those words may be the
 * redzones it keeps between a frame's variables; such a read is by design, not an overflow.
 * Everything else in the target stays instrumented.
 */
#define HW_READS_FOREIGN_STACK __attribute__((no_sanitize("address")))

/* CLOCK_MONOTONIC in nanoseconds. Async-signal-safe. */
int64_t hw_now_ns(void);

#endif
