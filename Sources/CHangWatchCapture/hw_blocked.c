/*
 * hw_blocked.c: the stack of a thread blocked in a system call, unwound from the watchdog without
 * sending the thread a signal (which would cut nanosleep, poll, epoll_wait... short with EINTR).
 *
 * /proc/self/task/<tid>/syscall gives the thread's stack pointer and program counter, not its frame
 * pointer. The walk steps by call-frame information, which for C-library system-call wrappers is
 * relative to the stack pointer: exact. It continues until a frame F whose rule is relative to the
 * frame pointer (HW_STEP_NEEDS_FP): rbp still holds F's own frame pointer (the frames below F did
 * not save it, or the walk would know it), and F's frame record {caller's rbp, return address} is
 * somewhere above F's stack pointer. The stack holds other record-shaped word pairs too: records of
 * F's callers, and stale ones that earlier, deeper calls left in what is now F's frame. So a
 * candidate record is taken only on evidence:
 *
 *   1. it checks out to the outermost frame: every return address on the way follows a call
 *      instruction, every step has call-frame information, every link is consistent: the call
 *      before each return address calls the function of the frame below it (directly, through a
 *      PLT slot or stub, or via a tail jump), or is indirect (unknown); one provable call elsewhere
 *      refutes the candidate;
 *   2. it is not refuted by F's prologue (push rbp; mov rbp, rsp; pushes; sub rsp, n), when F has the
 *      standard one: the body only moves the stack pointer down from there, so rbp >= sp + 8 * pushes
 *      + n; and a stack protector stores the process's canary at a fixed offset from rbp, which the
 *      record's slot must hold;
 *   3. and either it sits exactly where the code puts the frame pointer - HW_UNWIND_FP_PROLOGUE:
 *      where the straight line from the function's start to F's call sets rbp and reaches the
 *      call (hw_stack_depth.c: exact, a prologue without a fixed frame included), or else where a
 *      standard prologue's fixed frame ends (rbp = sp + 8 * pushes + n, no dynamic allocation);
 *   4. or it is the one root (a candidate that is not a later link of another candidate's chain)
 *      whose first call provably calls F - HW_UNWIND_FP_RECORD; several such roots that disagree
 *      make the stack stop at F (HW_UNWIND_FP_AMBIGUOUS); none, HW_UNWIND_FP_UNPROVEN.
 *
 * A stack that stops is marked truncated: a short, honest stack beats a long, invented one.
 *
 * Runs on the watchdog thread, never in a signal handler; still written to the capture code's rules
 * (static memory, checked reads), and one walk at a time (a busy flag).
 */
#include <stdatomic.h>
#include <string.h>

#include "hw_internal.h"

/* How far above F's stack pointer its frame record is looked for. */
#define HW_SCAN_BYTES (64 * 1024)
/* Candidates that check out, at most (more: the stack is too ambiguous to tell). */
#define HW_CANDIDATES 16

/* One candidate frame record for F, and the stack it implies. */
typedef struct hw_chain {
    uintptr_t record;   /* where the record is: F's frame pointer */
    int first_link;     /* HW_LINK_MATCH or HW_LINK_UNKNOWN: the call before the first return address */
    int complete;       /* reached the outermost frame (not the frame cap) */
    int count;          /* frames after F */
    uintptr_t frames[HW_MAX_FRAMES];
    int record_count;   /* frame-pointer values the chain steps through (records[0] is `record`) */
    uintptr_t records[HW_MAX_FRAMES];
    int record_frames[HW_MAX_FRAMES]; /* the index in `frames` of the first frame after each record */
} hw_chain;

static hw_chain g_chains[HW_CANDIDATES];
static _Atomic int g_busy;
static _Atomic int g_use_prologue = 1;

void hw_blocked_use_prologue(int enabled) {
    atomic_store(&g_use_prologue, enabled != 0);
}

/* Where `record` is among the records of the `count` chains before: 1 with the chain and position. */
static int hw_find_record(int count, uintptr_t record, int *chain, int *position) {
    for (int i = 0; i < count; i++) {
        for (int j = 0; j < g_chains[i].record_count; j++) {
            if (g_chains[i].records[j] == record) {
                *chain = i;
                *position = j;
                return 1;
            }
        }
    }
    return 0;
}

/* Walks from `caller` (F's caller, reached through a candidate record of F, whose function starts at
 * `callee_start`) to the outermost frame, checking every link. A chain that steps through a record
 * of one of the `checked` chains before it continues exactly as that one did (same registers from
 * there on), so, its link there checked, it borrows the rest. Fills `chain`; 1 when it checks out. */
static int hw_check_chain(void *session, const hw_table *table, hw_frame caller, uintptr_t callee_start,
                          uint32_t epoch, uintptr_t stack_low, uintptr_t stack_high, int max_frames, hw_chain *chain,
                          int checked) {
    void *key = hw_session_key(session);
    chain->count = 0;
    chain->complete = 0;
    chain->record_count = 1;
    chain->record_frames[0] = 0;
    hw_frame frame = caller;
    for (;;) {
        const int link = hw_call_link(table, key, frame.ip, callee_start);
        if (link != HW_LINK_MATCH && link != HW_LINK_UNKNOWN) {
            return 0;
        }
        if (chain->count == 0) {
            chain->first_link = link;
        }
        if (chain->count >= max_frames) {
            return 1; /* consistent as far as frames are kept */
        }
        int other = 0, position = 0;
        if (chain->count > 0 && chain->record_count > 1 &&
            hw_find_record(checked, chain->records[chain->record_count - 1], &other, &position) &&
            g_chains[other].record_frames[position] < g_chains[other].count &&
            g_chains[other].frames[g_chains[other].record_frames[position]] == frame.ip) {
            const hw_chain *known = &g_chains[other];
            const int base = chain->count, from = known->record_frames[position];
            for (int i = from; i < known->count && chain->count < max_frames; i++) {
                chain->frames[chain->count++] = known->frames[i];
            }
            for (int j = position + 1; j < known->record_count && chain->record_count < HW_MAX_FRAMES; j++) {
                chain->records[chain->record_count] = known->records[j];
                chain->record_frames[chain->record_count] = base + known->record_frames[j] - from;
                chain->record_count++;
            }
            chain->complete = known->complete && chain->count - base == known->count - from;
            return 1;
        }
        chain->frames[chain->count++] = frame.ip;
        uintptr_t start = 0;
        if (!hw_function_bounds(frame.ip - 1, key, &start, NULL)) {
            return 0;
        }
        callee_start = start;
        const uintptr_t fp = frame.fp;
        const int status = hw_rules_step(session, &frame, epoch, stack_low, stack_high);
        if (status == HW_STEP_END) {
            chain->complete = 1;
            return 1;
        }
        if (status != HW_STEP_STEPPED || frame.ip == 0) {
            return 0;
        }
        if (frame.sp == fp + 16 && chain->record_count < HW_MAX_FRAMES) {
            /* Stepped through the record at fp: the frames after it start with the next one. */
            chain->records[chain->record_count] = fp;
            chain->record_frames[chain->record_count++] = chain->count;
        }
    }
}

static int hw_chains_agree(const hw_chain *a, const hw_chain *b) {
    return a->count == b->count && a->complete == b->complete &&
           memcmp(a->frames, b->frames, (size_t)a->count * sizeof(uintptr_t)) == 0;
}

/* Finds F's frame record (`frame` is F, its frame pointer unknown) and appends the frames above F.
 * Returns the new frame count; sets the flags that say how, or why not. */
static int hw_infer_frame_pointer(void *session, const hw_table *table, uint32_t epoch, const hw_frame *frame,
                                  uintptr_t stack_low, uintptr_t stack_high, uintptr_t *frames, int count,
                                  int max_frames, int32_t *flags) {
    void *key = hw_session_key(session);
    uintptr_t function = 0;
    if (!hw_function_bounds(frame->ip - 1, key, &function, NULL)) {
        *flags |= HW_UNWIND_FP_UNPROVEN;
        return count;
    }
    /* What the prologue proves: the record is at least its fixed frame above the stack pointer
     * (the body only moves the stack pointer further down), and, with a stack protector, it is a
     * record whose canary slot holds the process's canary. Without dynamic stack allocation the
     * record is exactly there: the predicted place. */
    hw_prologue prologue;
    const int standard = hw_prologue_read(table, function, &prologue);
    const uintptr_t lowest = standard ? frame->sp + prologue.frame_size : frame->sp;
    /* Where the code puts it: the straight line from the function's start to the call F is in
     * (hw_stack_depth.c) sets rbp at a known depth and reaches the call at another, which places the
     * record exactly, whatever the prologue's fixed frame (none, for a one-line wrapper) or the
     * pushes before the call; else, for a standard prologue with a fixed frame, its end. */
    hw_straight code;
    const int use_prologue = atomic_load(&g_use_prologue);
    uintptr_t predicted = 0;
    if (use_prologue && hw_straight_line(table, function, frame->ip, 1, &code) && code.fp_set && code.depth >= code.fp_depth) {
        predicted = frame->sp + (code.depth - code.fp_depth);
    } else if (use_prologue && standard && prologue.frame_size != 0 && (lowest & 15) == 0) {
        predicted = lowest;
    }
    const uintptr_t guard = standard && prologue.has_canary ? hw_stack_guard() : 0;
    const int room = max_frames - count;
    int found = 0;
    int ambiguous = 0;
    int chosen = -1;
    int32_t how = 0;
    /* x86_64 keeps the stack 16-byte aligned at calls, so a frame pointer set by the standard
     * prologue is 16-byte aligned too. */
    for (uintptr_t record = (lowest + 15) & ~(uintptr_t)15;
         record + 16 <= stack_high && record < frame->sp + HW_SCAN_BYTES; record += 16) {
        uintptr_t canary = 0;
        if (guard != 0 && (!hw_session_read(session, record + (uintptr_t)prologue.canary_offset, &canary) || canary != guard)) {
            continue;
        }
        /* A record a checked chain steps through is a later link of that chain, not F's own. */
        int other = 0, position = 0;
        if (hw_find_record(found, record, &other, &position)) {
            continue;
        }
        hw_frame caller = *frame;
        caller.fp = record;
        caller.fp_known = 1;
        if (hw_rules_step(session, &caller, epoch, stack_low, stack_high) != HW_STEP_STEPPED) {
            continue;
        }
        const int link = hw_call_link(table, key, caller.ip, function);
        if (link != HW_LINK_MATCH && link != HW_LINK_UNKNOWN) {
            continue;
        }
        if (found == HW_CANDIDATES) {
            ambiguous = 1; /* too many to tell apart */
            break;
        }
        hw_chain *chain = &g_chains[found];
        chain->record = record;
        chain->records[0] = record;
        if (!hw_check_chain(session, table, caller, function, epoch, stack_low, stack_high, room, chain, found)) {
            continue;
        }
        found++;
        /* The lowest possible record that checks out, where the prologue puts it: nothing below can
         * explain it away. */
        if (record == predicted) {
            chosen = found - 1;
            how = HW_UNWIND_FP_PROLOGUE;
            break;
        }
    }
    /* Every chain kept is a root (no lower candidate's chain steps through its record). Without the
     * prologue's word, the one whose first call provably calls F is taken, if all such agree. */
    if (chosen < 0 && !ambiguous) {
        int first_match = -1, disagree = 0;
        for (int j = 0; j < found; j++) {
            if (g_chains[j].first_link != HW_LINK_MATCH) {
                continue;
            }
            if (first_match < 0) {
                first_match = j;
            } else if (!hw_chains_agree(&g_chains[first_match], &g_chains[j])) {
                disagree = 1;
            }
        }
        if (first_match >= 0 && !disagree) {
            chosen = first_match;
            how = HW_UNWIND_FP_RECORD;
        } else if (disagree) {
            ambiguous = 1;
        }
    }
    if (chosen < 0) {
        *flags |= ambiguous ? HW_UNWIND_FP_AMBIGUOUS : HW_UNWIND_FP_UNPROVEN;
        return count;
    }
    const hw_chain *chain = &g_chains[chosen];
    memcpy(&frames[count], chain->frames, (size_t)chain->count * sizeof(uintptr_t));
    count += chain->count;
    *flags |= how | (chain->complete ? HW_UNWIND_END_OF_STACK : HW_UNWIND_TRUNCATED);
    return count;
}

int hw_unwind_blocked_thread(uintptr_t sp, uintptr_t pc, uintptr_t stack_low, uintptr_t stack_high,
                             uintptr_t *frames, int max_frames, int32_t *flags) {
    *flags = 0;
    if (sp == 0 || pc == 0 || sp >= stack_high || max_frames <= 0) {
        *flags = HW_UNWIND_INIT_FAILED;
        return 0;
    }
    if (max_frames > HW_MAX_FRAMES) {
        max_frames = HW_MAX_FRAMES;
    }
    if (atomic_exchange(&g_busy, 1) != 0 || !hw_unwind_prepared()) {
        atomic_store(&g_busy, 0);
        *flags = HW_UNWIND_BUSY;
        return 0;
    }
    hw_walk_begin();
    const uintptr_t floor = hw_stack_floor(sp, stack_low);
    /* Two sessions: the walk's own (its refused reads are reported), and one for the candidates
     * (whose wrong guesses are expected to read out of bounds). */
    struct { uintptr_t walk, search; } keys;
    void *walk = hw_session_open(&keys.walk, sizeof(keys.walk), floor, stack_high);
    void *search = walk != NULL ? hw_session_open(&keys.search, sizeof(keys.search), floor, stack_high) : NULL;
    int count = 0;
    if (walk == NULL || search == NULL) {
        *flags = HW_UNWIND_BUSY;
    } else {
        const hw_table *table = hw_table_active();
        const uint32_t epoch = hw_images_epoch();
        hw_frame frame = {pc, sp, 0, 1, 0};
        for (;;) {
            if (frame.ip == 0) {
                *flags |= HW_UNWIND_END_OF_STACK;
                break;
            }
            frames[count++] = frame.ip;
            if (count >= max_frames) {
                *flags |= HW_UNWIND_TRUNCATED;
                break;
            }
            const int status = hw_rules_step(walk, &frame, epoch, floor, stack_high);
            if (status == HW_STEP_STEPPED) {
                continue;
            }
            if (status == HW_STEP_NEEDS_FP) {
                count = hw_infer_frame_pointer(search, table, epoch, &frame, floor, stack_high, frames, count, max_frames, flags);
            } else if (status == HW_STEP_END) {
                *flags |= HW_UNWIND_END_OF_STACK;
            } else if (status == HW_STEP_NO_INFO) {
                *flags |= HW_UNWIND_ERROR | HW_UNWIND_NO_UNWIND_INFO;
            } else if (status == HW_STEP_NO_PROGRESS) {
                *flags |= HW_UNWIND_NO_PROGRESS;
            } else {
                *flags |= HW_UNWIND_ERROR;
            }
            break;
        }
    }
    if (search != NULL) {
        hw_session_close(search);
    }
    if (walk != NULL && hw_session_close(walk) > 0) {
        *flags |= HW_UNWIND_READS_REJECTED;
    }
    hw_walk_end();
    atomic_store(&g_busy, 0);
    return count;
}
