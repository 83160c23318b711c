/*
 * hw_uncovered.c: how to step a frame in code without call-frame information (7 in 20 functions of
 * the Swift runtime and Foundation libraries have none: compiler-merged functions, the wrappers
 * that tail-jump into them, thunks of the Swift overlays), where the code and the stack prove one:
 *
 *  - a frameless leaf (the interrupted instruction only): the word at the stack pointer is a return
 *    address whose call reaches this stretch of code, or is indirect. libunwind's fallback would
 *    follow the frame-pointer chain instead and skip the leaf's caller.
 *  - interrupted right after the prologue's `push rbp`: the return address is just above it.
 *  - a function that keeps a frame pointer: the record at the frame pointer holds a return address
 *    whose call reaches a function start T in this stretch of code (so T is this function's start:
 *    no function with call-frame information lies between), T begins with push rbp; mov rbp, rsp
 *    (done, for an interrupted instruction), and T's stack-protector slot holds the canary.
 *  - straight-line code (hw_stack_depth.c): from a start T to this frame's address the code pushes and
 *    reserves a known depth, so its return address is at sp + depth; taken when that very word is a
 *    return address whose call enters T through stubs alone (a direct call, a PLT slot, a jump
 *    thunk: `DispatchSemaphore.wait(timeout:)` jumps to `wait(wallTimeout:)`, which pushes one word
 *    and calls libdispatch). The frame pointer needs no knowing: the code saved it, or kept it.
 *
 * Anything else proves nothing: the walk stops.
 *
 * Async-signal-safety checklist: reads through the session (range-checked) and the published
 * table; no allocation, no locks; the link and prologue readers are hw_calls.c's and hw_prologue.c's.
 */
#include "hw_internal.h"

#if defined(__x86_64__)

/* How far above the stack pointer a straight-line frame's return address is looked for. */
#define HW_STRAIGHT_SEARCH 512

static int hw_set_rule(hw_frame_rule *rule, int base, int32_t cfa_offset, int32_t fp_offset) {
    rule->base = base;
    rule->cfa_offset = cfa_offset;
    rule->fp_offset = fp_offset;
    return 1;
}

/* The straight-line proof: the lowest slot whose word proves itself. */
static int hw_straight_rule(void *session, const hw_table *table, const hw_frame *frame, uintptr_t address,
                            hw_frame_rule *rule) {
    void *key = hw_session_key(session);
    for (uintptr_t slot = frame->sp; slot < frame->sp + HW_STRAIGHT_SEARCH; slot += 8) {
        uintptr_t candidate = 0, start = 0;
        if (!hw_session_read(session, slot, &candidate)) {
            return 0;
        }
        hw_straight code;
        if (!hw_is_return_address(candidate) ||
            hw_call_enters_uncovered(table, key, candidate, address, &start) != HW_LINK_MATCH ||
            !hw_straight_line(table, start, frame->ip, !frame->exact, &code) || frame->sp + code.depth != slot) {
            continue;
        }
        const int32_t cfa_offset = (int32_t)(slot + 8 - frame->sp);
        return hw_set_rule(rule, HW_BASE_SP, cfa_offset, code.fp_pushed ? -(int32_t)(8 + code.fp_slot_depth) : HW_FP_UNCHANGED);
    }
    return 0;
}

int hw_uncovered_rule(void *session, const hw_frame *frame, hw_frame_rule *rule) {
    const hw_table *table = hw_table_active();
    void *key = hw_session_key(session);
    const uintptr_t address = frame->exact ? frame->ip : frame->ip - 1;
    uintptr_t candidate = 0, start = 0;
    if (frame->exact && hw_session_read(session, frame->sp, &candidate) && hw_is_return_address(candidate)) {
        const int link = hw_call_reaches_uncovered(table, key, candidate, address, &start);
        if (link == HW_LINK_MATCH || link == HW_LINK_UNKNOWN) {
            return hw_set_rule(rule, HW_BASE_SP, 8, HW_FP_UNCHANGED);
        }
    }
    /* Interrupted right after the prologue's push rbp (before mov rbp, rsp): the return address is
     * just above the pushed frame pointer. */
    if (frame->exact && hw_session_read(session, frame->sp + 8, &candidate) && hw_is_return_address(candidate) &&
        hw_call_reaches_uncovered(table, key, candidate, address, &start) == HW_LINK_MATCH) {
        hw_prologue prologue;
        if (hw_prologue_read(table, start, &prologue) && address + 3 == start + prologue.frame_set) {
            return hw_set_rule(rule, HW_BASE_SP, 16, -16);
        }
    }
    if (frame->fp_known && frame->fp >= frame->sp && (frame->fp & 15) == 0 &&
        hw_session_read(session, frame->fp + 8, &candidate) && hw_is_return_address(candidate) &&
        hw_call_reaches_uncovered(table, key, candidate, address, &start) == HW_LINK_MATCH) {
        hw_prologue prologue;
        int proven = hw_prologue_read(table, start, &prologue) && !(frame->exact && address < start + prologue.frame_set);
        if (proven && prologue.has_canary && (!frame->exact || address >= start + prologue.canary_set)) {
            uintptr_t canary = 0;
            proven = hw_session_read(session, frame->fp + (uintptr_t)prologue.canary_offset, &canary) &&
                     canary == hw_stack_guard();
        }
        if (proven) {
            return hw_set_rule(rule, HW_BASE_FP, 16, -16);
        }
    }
    return hw_straight_rule(session, table, frame, address, rule);
}

#else

int hw_uncovered_rule(void *session, const hw_frame *frame, hw_frame_rule *rule) {
    (void)session; (void)frame; (void)rule;
    return 0;
}

#endif
