/*
 * hw_rules.c: the fast walk. libunwind decides how to unwind each code address; we cache its
 * decision as a small rule and apply cached rules ourselves, with checked memory reads.
 *
 * Why: libunwind 1.6.2's register-state cache is guarded by a lock whose acquire and release each
 * call sigprocmask (Debian builds it with CONFIG_BLOCK_SIGNALS and without a per-thread cache):
 * two system calls per frame, most of a capture's cost. libunwind's own fast path (unw_backtrace)
 * avoids them but reads memory unchecked, so a corrupt frame pointer would fault inside the signal
 * handler. Here, a frame whose rule is cached costs a hash lookup and two checked reads.
 *
 * A rule, for one code address (x86_64): the canonical frame address (CFA) is the stack pointer
 * or the frame pointer plus a constant; the return address is at CFA - 8; the caller's frame
 * pointer is either unchanged or saved at CFA + a constant. On a miss the rule is derived from
 * libunwind's own step: run it from the frame's registers, then again with the frame pointer moved;
 * whether the CFA moves with it says which register it is based on. A rule depends on the address
 * only, so it can be derived without knowing the frame pointer (hw_libunwind_step's stand-in):
 * that is how a blocked thread's walk learns that a frame needs the frame pointer it lacks
 * (HW_STEP_NEEDS_FP). Anything that does not fit (a signal trampoline, a CFA expression, a register
 * saved in another register) is "unsupported": the walk hands the rest to libunwind's own loop.
 *
 * Async-signal-safety: static memory only (the rule table is per-slot sequence-locked, written by
 * compare-and-swap, readers retry nothing and treat a torn slot as a miss); libunwind is reached
 * only through hw_libunwind.c; every read goes through a session's range checks.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "hw_internal.h"

#if defined(__x86_64__)

/* FAILED is never cached: libunwind could not step from these registers, which says nothing about
 * the code address (the blocked-thread walk starts without a frame pointer, for one). */
enum { HW_RULE_STANDARD = 1, HW_RULE_END = 2, HW_RULE_SLOW = 3, HW_RULE_FAILED = 4, HW_RULE_UNCOVERED = 5 };

typedef struct hw_rule {
    uint8_t kind;
    uint8_t base;
    int32_t cfa_offset;
    int32_t fp_offset;
} hw_rule;

typedef struct hw_rule_slot {
    _Atomic uint64_t sequence; /* even: stable, odd: being written */
    uintptr_t key;             /* address << 1 | exact (the interrupted instruction, not a return address) */
    uint32_t epoch;
    hw_rule rule;
} hw_rule_slot;

#define HW_RULE_SLOTS 4096 /* power of two */
#define HW_RULE_PROBES 8
static hw_rule_slot g_rules[HW_RULE_SLOTS];

static inline size_t hw_rule_hash(uintptr_t key) {
    return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 52) & (HW_RULE_SLOTS - 1);
}

static int hw_rule_lookup(uintptr_t key, uint32_t epoch, hw_rule *out) {
    size_t index = hw_rule_hash(key);
    for (int probe = 0; probe < HW_RULE_PROBES; probe++, index = (index + 1) & (HW_RULE_SLOTS - 1)) {
        hw_rule_slot *slot = &g_rules[index];
        uint64_t before = atomic_load_explicit(&slot->sequence, memory_order_acquire);
        if (before & 1) {
            continue;
        }
        uintptr_t slot_key = slot->key;
        uint32_t slot_epoch = slot->epoch;
        hw_rule rule = slot->rule;
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&slot->sequence, memory_order_relaxed) != before) {
            continue;
        }
        if (before == 0) {
            return 0; /* never written: the key is not further along */
        }
        if (slot_key == key && slot_epoch == epoch) {
            *out = rule;
            return 1;
        }
    }
    return 0;
}

static void hw_rule_store(uintptr_t key, uint32_t epoch, hw_rule rule) {
    size_t index = hw_rule_hash(key);
    size_t victim = index;
    for (int probe = 0; probe < HW_RULE_PROBES; probe++, index = (index + 1) & (HW_RULE_SLOTS - 1)) {
        hw_rule_slot *slot = &g_rules[index];
        uint64_t sequence = atomic_load_explicit(&slot->sequence, memory_order_acquire);
        if (sequence == 0 || slot->key == key || slot->epoch != epoch) {
            victim = index;
            break;
        }
    }
    hw_rule_slot *slot = &g_rules[victim];
    uint64_t sequence = atomic_load_explicit(&slot->sequence, memory_order_acquire);
    if ((sequence & 1) ||
        !atomic_compare_exchange_strong_explicit(&slot->sequence, &sequence, sequence + 1, memory_order_acquire,
                                                 memory_order_relaxed)) {
        return; /* another walk is writing this slot: leave it */
    }
    slot->key = key;
    slot->epoch = epoch;
    slot->rule = rule;
    atomic_store_explicit(&slot->sequence, sequence + 2, memory_order_release);
}

/* libunwind's rule for the frame at (ip, sp, fp) as a cacheable rule. With `fp_known` 0 it is
 * derived around a stand-in frame pointer (the rule is a property of the address, not of the
 * register's value). */
static hw_rule hw_derive_rule(uintptr_t ip, uintptr_t sp, uintptr_t fp, int fp_known, int exact, uintptr_t stack_low,
                              uintptr_t stack_high) {
    hw_rule slow = {HW_RULE_SLOW, 0, 0, 0};
    hw_step_result real = hw_libunwind_step(ip, sp, fp_known ? fp : 0, fp_known, exact, stack_low, stack_high);
    if (real.status == 0) {
        hw_rule end = {HW_RULE_END, 0, 0, 0};
        return end;
    }
    if (real.status < 0) {
        hw_rule failed = {HW_RULE_FAILED, 0, 0, 0};
        return failed;
    }
    if (!real.ip_at_cfa_minus_8 || real.fp_saved < 0) {
        return slow;
    }
    /* Which register is the CFA based on? Move the frame pointer and see if the CFA follows. */
    const uintptr_t shift = 64;
    hw_step_result moved = hw_libunwind_step(ip, sp, fp_known ? fp + shift : shift, fp_known, exact, stack_low, stack_high);
    hw_rule rule = {HW_RULE_STANDARD, 0, 0, HW_FP_UNCHANGED};
    if (moved.status > 0 && moved.cfa == real.cfa) {
        if (real.cfa <= sp) {
            return slow;
        }
        rule.base = HW_BASE_SP;
        rule.cfa_offset = (int32_t)(real.cfa - sp);
    } else if (moved.status < 0 || (moved.status > 0 && moved.cfa == real.cfa + shift)) {
        rule.base = HW_BASE_FP;
        rule.cfa_offset = (int32_t)((intptr_t)real.cfa - (intptr_t)real.fp_used);
    } else {
        return slow;
    }
    if (real.fp_saved) {
        rule.fp_offset = (int32_t)((intptr_t)real.fp_slot - (intptr_t)real.cfa);
    }
    return rule;
}

int hw_rules_step(void *session, hw_frame *frame, uint32_t epoch, uintptr_t stack_low, uintptr_t stack_high) {
    if (frame->ip == 0) {
        return HW_STEP_END;
    }
    void *key = hw_session_key(session);
    const uintptr_t lookup = frame->exact ? frame->ip : frame->ip - 1;
    const uintptr_t cache_key = frame->ip << 1 | (uintptr_t)frame->exact;
    hw_rule rule;
    if (!hw_rule_lookup(cache_key, epoch, &rule)) {
        if (!hw_unwind_info_covers(lookup, key)) {
            hw_rule uncovered = {HW_RULE_UNCOVERED, 0, 0, 0};
            rule = uncovered;
        } else {
            rule = hw_derive_rule(frame->ip, frame->sp, frame->fp, frame->fp_known, frame->exact, stack_low, stack_high);
        }
        if (rule.kind != HW_RULE_FAILED) {
            hw_rule_store(cache_key, epoch, rule);
        }
    }
    /* Without call-frame information, which way the frame goes depends on the stack: decided anew
     * each time (the cache only remembers that the address has none). */
    if (rule.kind == HW_RULE_UNCOVERED) {
        hw_frame_rule proven;
        if (!hw_uncovered_rule(session, frame, &proven)) {
            return HW_STEP_NO_INFO;
        }
        rule.kind = HW_RULE_STANDARD;
        rule.base = (uint8_t)proven.base;
        rule.cfa_offset = proven.cfa_offset;
        rule.fp_offset = proven.fp_offset;
    }
    switch (rule.kind) {
    case HW_RULE_END:
        return HW_STEP_END;
    case HW_RULE_FAILED:
        return HW_STEP_FAILED;
    case HW_RULE_SLOW:
        return HW_STEP_UNSUPPORTED;
    default:
        break;
    }
    if (rule.base == HW_BASE_FP && !frame->fp_known) {
        return HW_STEP_NEEDS_FP;
    }
    const uintptr_t cfa = (rule.base == HW_BASE_FP ? frame->fp : frame->sp) + (intptr_t)rule.cfa_offset;
    if (cfa <= frame->sp) {
        return HW_STEP_NO_PROGRESS;
    }
    uintptr_t next_ip = 0, next_fp = frame->fp;
    if (!hw_session_read(session, cfa - 8, &next_ip) ||
        (rule.fp_offset != HW_FP_UNCHANGED && !hw_session_read(session, cfa + (intptr_t)rule.fp_offset, &next_fp))) {
        return HW_STEP_UNREADABLE;
    }
    if (rule.fp_offset != HW_FP_UNCHANGED) {
        frame->fp_known = 1;
    }
    frame->ip = next_ip;
    frame->sp = cfa;
    frame->fp = next_fp;
    frame->exact = 0;
    return HW_STEP_STEPPED;
}

/* The flags a walk that stopped with `status` sets. */
static int32_t hw_step_flags(int status) {
    switch (status) {
    case HW_STEP_END: return HW_UNWIND_END_OF_STACK;
    case HW_STEP_NO_INFO: return HW_UNWIND_ERROR | HW_UNWIND_NO_UNWIND_INFO;
    case HW_STEP_NO_PROGRESS: return HW_UNWIND_NO_PROGRESS;
    default: return HW_UNWIND_ERROR;
    }
}

int hw_rules_walk(ucontext_t *uc, size_t uc_size, uintptr_t stack_low, uintptr_t stack_high, uintptr_t *frames,
                  int *count, int max_frames, int32_t *flags, uintptr_t *last_sp) {
    void *session = hw_session_open(uc, uc_size, stack_low, stack_high);
    if (session == NULL) {
        return -1;
    }
    const uint32_t epoch = hw_images_epoch();
    hw_frame frame = {hw_context_pc(uc), hw_context_sp(uc), hw_context_fp(uc), 1, 1};
    for (;;) {
        if (frame.ip == 0) {
            *flags |= HW_UNWIND_END_OF_STACK;
            break;
        }
        frames[(*count)++] = frame.ip;
        *last_sp = frame.sp;
        if (*count >= max_frames) {
            *flags |= HW_UNWIND_TRUNCATED;
            break;
        }
        const hw_frame current = frame;
        const int status = hw_rules_step(session, &frame, epoch, stack_low, stack_high);
        if (status == HW_STEP_STEPPED) {
            continue;
        }
        if (status == HW_STEP_UNSUPPORTED) {
            /* Not a frame we can step ourselves: libunwind walks the rest, from this frame. */
            (*count)--;
            ucontext_t rest;
            memset(&rest, 0, sizeof(rest));
            hw_context_set(&rest, current.ip, current.sp, current.fp);
            if (hw_libunwind_walk(&rest, sizeof(rest), current.exact, stack_low, stack_high, frames, count, max_frames,
                                  flags, last_sp) != 0) {
                frames[(*count)++] = current.ip;
                *flags |= HW_UNWIND_BUSY;
            }
            break;
        }
        *flags |= hw_step_flags(status);
        break;
    }
    if (hw_session_close(session) > 0) {
        *flags |= HW_UNWIND_READS_REJECTED;
    }
    return 0;
}

#else

int hw_rules_step(void *session, hw_frame *frame, uint32_t epoch, uintptr_t stack_low, uintptr_t stack_high) {
    (void)session; (void)frame; (void)epoch; (void)stack_low; (void)stack_high;
    return HW_STEP_UNSUPPORTED;
}

int hw_rules_walk(ucontext_t *uc, size_t uc_size, uintptr_t stack_low, uintptr_t stack_high, uintptr_t *frames,
                  int *count, int max_frames, int32_t *flags, uintptr_t *last_sp) {
    (void)uc; (void)uc_size; (void)stack_low; (void)stack_high; (void)frames; (void)count; (void)max_frames;
    (void)flags; (void)last_sp;
    return -1;
}

#endif
