/*
 * hw_walk.c: the walk from exact registers: a signal context in the capture handler, or the
 * calling thread's own context (warm-up).
 *
 * Async-signal-safety checklist: what hw_rules.c and hw_libunwind.c promise (static memory,
 * sessions of checked reads, libunwind only for covered addresses), plus an atomic count of walks
 * in flight that keeps the published table from being replaced under the walk.
 */
#include "hw_internal.h"

int hw_unwind_walk(ucontext_t *uc, size_t uc_size, uintptr_t stack_low, uintptr_t stack_high,
                   uintptr_t *frames, int max_frames, int32_t *flags, uintptr_t *last_sp) {
    *flags = 0;
    *last_sp = hw_context_sp(uc);
    if (max_frames > HW_MAX_FRAMES) {
        max_frames = HW_MAX_FRAMES;
    }
    if (max_frames <= 0) {
        return 0;
    }
    int count = 0;
    hw_walk_begin();
    if (!hw_unwind_prepared()) {
        frames[count++] = hw_context_pc(uc);
        *flags = HW_UNWIND_BUSY;
    } else if (hw_rules_walk(uc, uc_size, stack_low, stack_high, frames, &count, max_frames, flags, last_sp) != 0) {
        /* No fast walk on this architecture, or no session free: libunwind's own loop. */
        if (hw_libunwind_walk(uc, uc_size, 1, stack_low, stack_high, frames, &count, max_frames, flags, last_sp) != 0) {
            frames[count++] = hw_context_pc(uc);
        }
    }
    hw_walk_end();
    return count;
}
