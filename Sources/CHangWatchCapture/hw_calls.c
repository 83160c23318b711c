/*
 * hw_calls.c: what the bytes of loaded code say about a link between two frames: is there a call
 * before this return address, and does it reach the function the walk came from.
 *
 * Async-signal-safety checklist: every byte read is inside a published readable range (checked
 * first); no allocation, no locks (the link cache is a static table of sequence-locked slots
 * written by compare-and-swap); the function-bounds lookups are hw_image_table.c's.
 *
 * x86_64 decoding is deliberately narrow: the call forms compilers emit here; the stubs a call goes
 * through on its way to a function and the tail jumps it may take are what hw_stack_depth.c decodes
 * (code that only jumps on; the jump the straight line from a function's start leaves by, or a
 * tail call through a function pointer, which leaves the link open). Anything else is "unknown",
 * never guessed.
 */
#include <stdatomic.h>
#include <string.h>

#include "hw_internal.h"

#if defined(__x86_64__)

/* The call instruction forms that can end right before a return address. */
typedef struct hw_call_forms {
    int direct;          /* E8 rel32 */
    uintptr_t direct_target;
    int rip_memory;      /* FF 15 disp32: call [rip + disp32] */
    uintptr_t slot;
    int indirect;        /* FF /2 through a register or another memory operand */
} hw_call_forms;

static int hw_decode_calls(const hw_table *table, uintptr_t return_address, hw_call_forms *forms) {
    memset(forms, 0, sizeof(*forms));
    unsigned char p[7];
    if (return_address < 7 || !hw_table_copy(table, return_address - 7, p, 7)) {
        return 0;
    }
    /* p[6] is the byte before the return address. */
    if (p[2] == 0xE8) {
        forms->direct = 1;
        forms->direct_target = return_address + (uintptr_t)(intptr_t)hw_rel32(&p[3]);
    }
    if (p[1] == 0xFF && p[2] == 0x15) {
        forms->rip_memory = 1;
        forms->slot = return_address + (uintptr_t)(intptr_t)hw_rel32(&p[3]);
    }
    /* call r/m64 is FF /2 (ModRM: mod, reg = 010, rm). A REX prefix before FF changes nothing here. */
    if (p[5] == 0xFF && (p[6] & 0xF8) == 0xD0) forms->indirect = 1;                              /* call reg */
    if (p[5] == 0xFF && (p[6] & 0xF8) == 0x10 && (p[6] & 7) != 4 && (p[6] & 7) != 5) forms->indirect = 1; /* call [reg] */
    if (p[4] == 0xFF && (p[5] & 0xF8) == 0x50 && (p[5] & 7) != 4) forms->indirect = 1;          /* call [reg+disp8] */
    if (p[4] == 0xFF && p[5] == 0x14 && (p[6] & 7) != 5) forms->indirect = 1;                   /* call [sib] */
    if (p[3] == 0xFF && p[4] == 0x54) forms->indirect = 1;                                      /* call [sib+disp8] */
    if (p[1] == 0xFF && (p[2] & 0xF8) == 0x90 && (p[2] & 7) != 4) forms->indirect = 1;          /* call [reg+disp32] */
    if (p[0] == 0xFF && p[1] == 0x94) forms->indirect = 1;                                      /* call [sib+disp32] */
    return forms->direct || forms->rip_memory || forms->indirect;
}

int hw_follows_call(const hw_table *table, uintptr_t return_address) {
    hw_call_forms forms;
    if (!hw_decode_calls(table, return_address, &forms)) {
        return 0;
    }
    /* A direct call's target must be code: otherwise those bytes were not a call. */
    if (forms.direct && hw_table_segment(table, forms.direct_target) != NULL) {
        return 1;
    }
    return forms.rip_memory || forms.indirect;
}

/* Follows the stubs a call goes through to reach a function: code that only jumps on, with the
 * stack as it found it and nothing called or branched on the way (`endbr64`, a PLT slot, a jump
 * thunk, a merged function's `push rbp; mov rbp, rsp; pop rbp; jmp`, an argument shuffle). Each
 * place on the way, target first, goes in `hops` (its count returned): the call enters each, not
 * only the last (`DispatchTime.now()`, reached by a PLT slot, jumps on to `dispatch_time`). */
static int hw_resolve_stubs(const hw_table *table, uintptr_t target, uintptr_t hops[5]) {
    int count = 0;
    hops[count++] = target;
    for (int hop = 0; hop < 4; hop++) {
        uintptr_t next = 0;
        int plain = 0;
        if (hw_straight_exit(table, target, &next, &plain) != HW_EXIT_JUMP || !plain || hw_table_segment(table, next) == NULL) {
            break;
        }
        target = next;
        hops[count++] = target;
    }
    return count;
}

/* What a call's target must reach: a known function start, or any function start in the stretch of
 * uncovered code that holds `address`. */
typedef struct hw_goal {
    uintptr_t callee;  /* nonzero: this exact start */
    uintptr_t address; /* else: a start in the uncovered stretch holding this address */
    uintptr_t reached; /* the start found */
    int stubs_only;    /* through stubs alone: no tail jump found by scanning code */
    int open;          /* a function on the way leaves through a function pointer: it may reach any */
} hw_goal;

static int hw_goal_met(const hw_table *table, void *arg, hw_goal *goal, uintptr_t start) {
    if (goal->callee != 0 ? start == goal->callee : hw_same_uncovered_stretch(table, arg, start, goal->address)) {
        goal->reached = start;
        return 1;
    }
    return 0;
}

/* Whether `target` (where a call goes) reaches the goal: directly, through stubs, or through up to
 * three tail jumps: the one the straight line from a function's start leaves by (decoded, so a
 * short `jmp rel8` too), or a `jmp rel32` found in the bytes of the functions on the way. A function with
 * call-frame information is scanned over its range (64 KiB at most); one without, over 256 bytes
 * (wrappers are short), never into the next covered function. At most 16 functions are looked at.
 * A byte pattern that happens to look like a jump can only let a link be checked further, never
 * make a stack longer on its own. */
static int hw_reaches(const hw_table *table, void *arg, uintptr_t target, hw_goal *goal) {
    uintptr_t queue[16];
    int depth[16];
    int head = 0, tail = 0;
    queue[tail] = target;
    depth[tail++] = 0;
    while (head < tail) {
        uintptr_t hops[5];
        const int count = hw_resolve_stubs(table, queue[head], hops);
        const uintptr_t resolved = hops[count - 1];
        const int level = depth[head++];
        /* Where the stubs lead first, then each stub on the way back to the target. */
        for (int hop = count - 1; hop >= 0; hop--) {
            if (hw_goal_met(table, arg, goal, hops[hop])) return 1;
        }
        if (goal->stubs_only) {
            continue;
        }
        uintptr_t function = 0, end = 0;
        if (hw_function_bounds(resolved, arg, &function, &end) && end > function) {
            if (end - function > 64 * 1024) {
                end = function + 64 * 1024;
            }
        } else {
            function = resolved;
            end = hw_uncovered_end(table, arg, resolved, 256);
        }
        if (end <= function || !hw_table_readable(table, function, end)) {
            continue;
        }
        /* How a function the call or a jump lands exactly on leaves: an indirect tail call (a C
         * dispatcher's `pop rbp; jmp rax`, a trampoline's `jmp rsi`) may reach any function. */
        uintptr_t exit_target = 0;
        int plain = 0, exit = HW_EXIT_NONE;
        if (function == resolved) {
            exit = hw_straight_exit(table, function, &exit_target, &plain);
        }
        goal->open |= exit == HW_EXIT_INDIRECT;
        if (exit == HW_EXIT_JUMP && hw_table_segment(table, exit_target) != NULL) {
            if (hw_goal_met(table, arg, goal, exit_target)) {
                return 1;
            }
            if (level < 3 && tail < 16) {
                queue[tail] = exit_target;
                depth[tail++] = level + 1;
            }
        }
        if (level == 3) {
            continue;
        }
        const unsigned char *code = (const unsigned char *)function;
        for (size_t i = 0; i + 5 <= end - function; i++) {
            uintptr_t jump = 0;
            if (code[i] == 0xE9) {
                jump = function + i + 5 + (uintptr_t)(intptr_t)hw_rel32(&code[i + 1]);
            } else if (code[i] == 0xFF && i + 6 <= end - function && code[i + 1] == 0x25) {
                uintptr_t slot = function + i + 6 + (uintptr_t)(intptr_t)hw_rel32(&code[i + 2]);
                if (!hw_table_copy(table, slot, &jump, sizeof(jump))) {
                    continue;
                }
            } else {
                continue;
            }
            if (hw_table_segment(table, jump) == NULL) {
                continue;
            }
            if (hw_goal_met(table, arg, goal, jump)) {
                return 1;
            }
            if (tail < 16) { /* a full queue still lets this function's own jumps be checked */
                queue[tail] = jump;
                depth[tail++] = level + 1;
            }
        }
    }
    return 0;
}

/* How the call before `return_address` relates to `goal`. */
static int hw_call_reaches(const hw_table *table, void *arg, uintptr_t return_address, hw_goal *goal) {
    hw_call_forms forms;
    if (!hw_decode_calls(table, return_address, &forms)) {
        return HW_LINK_NOT_A_CALL;
    }
    const int direct = forms.direct && hw_table_segment(table, forms.direct_target) != NULL;
    uintptr_t slot_target = 0;
    const int memory = forms.rip_memory && hw_table_copy(table, forms.slot, &slot_target, sizeof(slot_target));
    if ((direct && hw_reaches(table, arg, forms.direct_target, goal)) || (memory && hw_reaches(table, arg, slot_target, goal))) {
        return HW_LINK_MATCH;
    }
    /* The bytes may decode several ways; only when every way is a provable call elsewhere is the
     * link refuted. An indirect form, or a memory slot we cannot read, leaves it open. */
    if (forms.indirect || (forms.rip_memory && !memory) || goal->open) {
        return HW_LINK_UNKNOWN;
    }
    return direct || memory ? HW_LINK_MISMATCH : HW_LINK_NOT_A_CALL;
}

/* What the last search from a return address found (its call reaches function start `start`, in
 * an uncovered stretch), per image-table epoch: a later frame at the same return address, or an
 * interrupted instruction in the same function, needs one stretch check instead of the search. */
typedef struct hw_reach_slot {
    _Atomic uint64_t sequence; /* even: stable, odd: being written */
    uintptr_t return_address;
    uintptr_t start;
    uint32_t epoch;
} hw_reach_slot;

#define HW_REACH_SLOTS 1024 /* power of two */
static hw_reach_slot g_reaches[HW_REACH_SLOTS];

int hw_call_reaches_uncovered(const hw_table *table, void *arg, uintptr_t return_address, uintptr_t address,
                              uintptr_t *start) {
    const uint32_t epoch = hw_images_epoch();
    hw_reach_slot *slot = &g_reaches[(size_t)((return_address * 0x9e3779b97f4a7c15ull) >> 54) & (HW_REACH_SLOTS - 1)];
    uint64_t before = atomic_load_explicit(&slot->sequence, memory_order_acquire);
    if (before != 0 && (before & 1) == 0) {
        const uintptr_t cached_return = slot->return_address, cached_start = slot->start;
        const uint32_t cached_epoch = slot->epoch;
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&slot->sequence, memory_order_relaxed) == before && cached_return == return_address &&
            cached_epoch == epoch && hw_same_uncovered_stretch(table, arg, cached_start, address)) {
            *start = cached_start;
            return HW_LINK_MATCH;
        }
    }
    hw_goal goal = {0, address, 0, 0, 0};
    const int link = hw_call_reaches(table, arg, return_address, &goal);
    *start = goal.reached;
    uint64_t sequence = atomic_load_explicit(&slot->sequence, memory_order_acquire);
    if (link == HW_LINK_MATCH && (sequence & 1) == 0 &&
        atomic_compare_exchange_strong_explicit(&slot->sequence, &sequence, sequence + 1, memory_order_acquire,
                                                memory_order_relaxed)) {
        slot->return_address = return_address;
        slot->start = goal.reached;
        slot->epoch = epoch;
        atomic_store_explicit(&slot->sequence, sequence + 2, memory_order_release);
    }
    return link;
}

int hw_call_enters_uncovered(const hw_table *table, void *arg, uintptr_t return_address, uintptr_t address,
                             uintptr_t *start) {
    hw_goal goal = {0, address, 0, 1, 0};
    const int link = hw_call_reaches(table, arg, return_address, &goal);
    *start = goal.reached;
    return link == HW_LINK_MATCH ? HW_LINK_MATCH : HW_LINK_MISMATCH;
}

/* Links are facts about the code, asked again and again (every chain through the same frames):
 * cached like the unwind rules, per image-table epoch, in slots sequence-locked for readers in a
 * signal handler (a torn slot reads as a miss). */
typedef struct hw_link_slot {
    _Atomic uint64_t sequence; /* even: stable, odd: being written */
    uintptr_t return_address;
    uintptr_t callee;
    uint32_t epoch;
    int32_t link;
} hw_link_slot;

#define HW_LINK_SLOTS 2048 /* power of two */
static hw_link_slot g_links[HW_LINK_SLOTS];

static size_t hw_link_hash(uintptr_t return_address, uintptr_t callee) {
    return (size_t)(((return_address ^ (callee * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull) >> 53) & (HW_LINK_SLOTS - 1);
}

int hw_call_link(const hw_table *table, void *arg, uintptr_t return_address, uintptr_t callee_start) {
    const uint32_t epoch = hw_images_epoch();
    hw_link_slot *slot = &g_links[hw_link_hash(return_address, callee_start)];
    uint64_t before = atomic_load_explicit(&slot->sequence, memory_order_acquire);
    if (before != 0 && (before & 1) == 0) {
        const uintptr_t cached_return = slot->return_address, cached_callee = slot->callee;
        const uint32_t cached_epoch = slot->epoch;
        const int32_t cached = slot->link;
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&slot->sequence, memory_order_relaxed) == before && cached_return == return_address &&
            cached_callee == callee_start && cached_epoch == epoch) {
            return cached;
        }
    }
    hw_goal goal = {callee_start, 0, 0, 0, 0};
    const int link = hw_call_reaches(table, arg, return_address, &goal);
    uint64_t sequence = atomic_load_explicit(&slot->sequence, memory_order_acquire);
    if ((sequence & 1) == 0 && atomic_compare_exchange_strong_explicit(&slot->sequence, &sequence, sequence + 1,
                                                                       memory_order_acquire, memory_order_relaxed)) {
        slot->return_address = return_address;
        slot->callee = callee_start;
        slot->epoch = epoch;
        slot->link = link;
        atomic_store_explicit(&slot->sequence, sequence + 2, memory_order_release);
    }
    return link;
}

#elif defined(__aarch64__)

int hw_call_enters_uncovered(const hw_table *table, void *arg, uintptr_t return_address, uintptr_t address,
                             uintptr_t *start) {
    (void)table; (void)arg; (void)return_address; (void)address;
    *start = 0;
    return HW_LINK_MISMATCH;
}

int hw_follows_call(const hw_table *table, uintptr_t return_address) {
    uint32_t insn;
    if (return_address < 4 || !hw_table_copy(table, return_address - 4, &insn, sizeof(insn))) {
        return 0;
    }
    return (insn & 0xFC000000u) == 0x94000000u /* bl */ || (insn & 0xFFFFFC1Fu) == 0xD63F0000u /* blr */;
}

int hw_call_link(const hw_table *table, void *arg, uintptr_t return_address, uintptr_t callee_start) {
    (void)arg;
    (void)callee_start;
    return hw_follows_call(table, return_address) ? HW_LINK_UNKNOWN : HW_LINK_NOT_A_CALL;
}

int hw_call_reaches_uncovered(const hw_table *table, void *arg, uintptr_t return_address, uintptr_t address,
                              uintptr_t *start) {
    (void)arg;
    (void)address;
    *start = 0;
    return hw_follows_call(table, return_address) ? HW_LINK_UNKNOWN : HW_LINK_NOT_A_CALL;
}

#else
#error "HangWatch capture supports x86_64 and aarch64"
#endif

int hw_is_return_address(uintptr_t address) {
    const hw_table *table = hw_table_active();
    return hw_table_segment(table, address) != NULL && hw_follows_call(table, address);
}
