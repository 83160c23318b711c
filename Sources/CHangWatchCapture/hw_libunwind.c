/*
 * hw_libunwind.c: libunwind's local unwinder, in a session of checked reads: one step (from which
 * hw_rules.c derives its cached rules) and libunwind's own step loop (for the frames no cached rule
 * can step: signal trampolines, CFA expressions, registers saved in registers).
 *
 * Async-signal-safety checklist: unw_init_local2, unw_step, unw_get_reg and unw_get_save_loc are
 * documented async-signal-safe for local unwinding; the locks inside libunwind are taken with every
 * signal blocked, so the thread holding one can never be interrupted by our signal. libunwind is
 * only ever asked to step from an address our published table covers (hw_unwind_info_covers): for
 * any other, its local unwinder would look the address up with dl_iterate_phdr, which takes the
 * loader's lock. Every read it makes goes through the session's range check.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <string.h>

#include "hw_internal.h"

/* A context for one step, with room for two fake frame records that stand in for an unknown frame
 * pointer (read through the session like the context itself). */
typedef struct hw_step_context {
    ucontext_t uc;
    uintptr_t fake[32];
} hw_step_context;

hw_step_result hw_libunwind_step(uintptr_t ip, uintptr_t sp, uintptr_t fp, int fp_known, int exact,
                                 uintptr_t stack_low, uintptr_t stack_high) {
    hw_step_result result;
    memset(&result, 0, sizeof(result));
    result.status = -1;
    hw_step_context context;
    memset(&context, 0, sizeof(context));
    if (!fp_known) {
        /* Two records 64 bytes apart whose return addresses are non-zero: libunwind steps through
         * either, and whether the CFA moves with them says which register it is based on. */
        const uintptr_t base = (uintptr_t)&context.fake[8];
        const uintptr_t stand_in = base + (fp == 0 ? 0 : 64);
        context.fake[8 + 1] = 1;
        context.fake[16 + 1] = 1;
        fp = stand_in;
    }
    result.fp_used = fp;
    hw_context_set(&context.uc, ip, sp, fp);
    void *session = hw_session_open(&context.uc, sizeof(context), stack_low, stack_high);
    if (session == NULL) {
        return result;
    }
    /* Without information in our table, libunwind would look the address up with dl_iterate_phdr. */
    if (!hw_unwind_info_covers(exact ? ip : ip - 1, &context.uc)) {
        hw_session_close(session);
        return result;
    }
    unw_cursor_t cursor;
    if (unw_init_local2(&cursor, (unw_context_t *)&context.uc, exact ? UNW_INIT_SIGNAL_FRAME : 0) == 0) {
        int step = unw_step(&cursor);
        if (step == 0) {
            result.status = 0;
        } else if (step > 0) {
            unw_word_t value = 0;
            unw_save_loc_t ip_location, fp_location;
            if (unw_get_reg(&cursor, UNW_REG_SP, &value) == 0) result.cfa = value;
            if (unw_get_reg(&cursor, UNW_REG_IP, &value) == 0) result.ip = value;
#if defined(__x86_64__)
            if (unw_get_reg(&cursor, UNW_X86_64_RBP, &value) == 0) result.fp = value;
            /* Where the caller's return address and frame pointer were found. */
            if (unw_get_save_loc(&cursor, UNW_X86_64_RIP, &ip_location) == 0 && ip_location.type == UNW_SLT_MEMORY) {
                result.ip_at_cfa_minus_8 = ip_location.u.addr == result.cfa - 8;
            }
            if (unw_get_save_loc(&cursor, UNW_X86_64_RBP, &fp_location) == 0 && fp_location.type == UNW_SLT_MEMORY) {
                /* Still pointing into our context: the frame did not save it (unchanged). */
                uintptr_t address = fp_location.u.addr;
                result.fp_saved = !(address >= (uintptr_t)&context.uc && address < (uintptr_t)&context.uc + sizeof(context.uc));
                result.fp_slot = address;
            } else {
                result.fp_saved = -1; /* saved in a register, or unknown: not a standard frame */
            }
#else
            (void)ip_location;
            (void)fp_location;
            result.fp_saved = -1;
#endif
            result.status = 1;
        }
    }
    hw_session_close(session);
    return result;
}

/* libunwind's own loop: unw_step until the end, an error, the cap or a stack pointer that does not
 * go up. Appends to frames[*count]. */
static void hw_libunwind_steps(ucontext_t *uc, int signal_frame, uintptr_t *frames, int *count, int max_frames,
                               int32_t *flags, uintptr_t *last_sp) {
    unw_cursor_t cursor;
    if (unw_init_local2(&cursor, (unw_context_t *)uc, signal_frame ? UNW_INIT_SIGNAL_FRAME : 0) < 0) {
        if (*count == 0) {
            frames[(*count)++] = hw_context_pc(uc);
        }
        *flags |= HW_UNWIND_INIT_FAILED;
        return;
    }
    unw_word_t previous_sp = 0, previous_ip = 0;
    int first = 1;
    for (;;) {
        unw_word_t ip = 0, sp = 0;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || unw_get_reg(&cursor, UNW_REG_SP, &sp) < 0) {
            *flags |= HW_UNWIND_ERROR;
            return;
        }
        if (ip == 0) {
            *flags |= HW_UNWIND_END_OF_STACK;
            return;
        }
        if (!first && (sp < previous_sp || (sp == previous_sp && ip == previous_ip))) {
            *flags |= HW_UNWIND_NO_PROGRESS;
            return;
        }
        const int exact = first && signal_frame;
        first = 0;
        frames[(*count)++] = (uintptr_t)ip;
        *last_sp = (uintptr_t)sp;
        previous_sp = sp;
        previous_ip = ip;
        if (*count >= max_frames) {
            *flags |= HW_UNWIND_TRUNCATED;
            return;
        }
        /* Outside our table libunwind would look the address up with dl_iterate_phdr: stop here. */
        if (!hw_unwind_info_covers((uintptr_t)(exact ? ip : ip - 1), uc)) {
            *flags |= HW_UNWIND_ERROR | HW_UNWIND_NO_UNWIND_INFO;
            return;
        }
        int step = unw_step(&cursor);
        if (step == 0) {
            *flags |= HW_UNWIND_END_OF_STACK;
            return;
        }
        if (step < 0) {
            *flags |= HW_UNWIND_ERROR;
            return;
        }
    }
}

int hw_libunwind_walk(ucontext_t *uc, size_t uc_size, int signal_frame, uintptr_t stack_low, uintptr_t stack_high,
                      uintptr_t *frames, int *count, int max_frames, int32_t *flags, uintptr_t *last_sp) {
    void *session = hw_session_open(uc, uc_size, stack_low, stack_high);
    if (session == NULL) {
        *flags |= HW_UNWIND_BUSY;
        return -1;
    }
    hw_libunwind_steps(uc, signal_frame, frames, count, max_frames, flags, last_sp);
    if (hw_session_close(session) > 0) {
        *flags |= HW_UNWIND_READS_REJECTED;
    }
    return 0;
}
