/*
 * Internal to CHangWatchCapture. The files call each other in one direction only:
 *
 *   hw_image_table.c   the published table of code segments and readable ranges
 *   hw_stack_depth.c   the stack depth straight-line code reaches, how it leaves   (uses the table)
 *   hw_calls.c         what a call instruction reaches; link checks, cached       (uses the table, code)
 *   hw_prologue.c      a function's fixed frame size and canary slot              (uses the table)
 *   hw_session.c       checked memory reads for one walk; libunwind's accessors    (uses the table)
 *   hw_libunwind.c     one libunwind step, and libunwind's own step loop           (uses sessions)
 *   hw_uncovered.c     steps through code without call-frame information           (uses sessions, code)
 *   hw_rules.c         cached per-address unwind rules, one step at a time         (uses libunwind steps)
 *   hw_walk.c          the walk from exact registers (signal handler, warm-up)     (uses rules)
 *   hw_blocked.c       the walk of a thread blocked in a system call               (uses rules, code)
 *   hw_capture_signal.c, hw_heartbeat.c                                            (use the walk)
 */
#ifndef HW_INTERNAL_H
#define HW_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include "CHangWatchCapture.h"

/* ---- hw_image_table.c ------------------------------------------------------------------------ */

typedef struct hw_table {
    size_t segment_count;
    size_t range_count;
    hw_unwind_segment segments[HW_MAX_SEGMENTS];
    hw_address_range ranges[HW_MAX_RANGES];
} hw_table;

/* The table in force. Stable while a walk is in flight (hw_walk_begin / hw_walk_end). */
const hw_table *hw_table_active(void);
/* A walk in flight keeps hw_images_publish from replacing the table. Async-signal-safe. */
void hw_walk_begin(void);
void hw_walk_end(void);
/* The start of the function covering `address` in its segment's .eh_frame_hdr search table (the
 * last entry at or before it), or 0. No libunwind session needed. */
uintptr_t hw_table_function_start(const hw_table *table, uintptr_t address);
/* The executable segment containing `ip`, or NULL. */
const hw_unwind_segment *hw_table_segment(const hw_table *table, uintptr_t ip);
/* Whether [start, end) lies inside one published readable range. */
int hw_table_readable(const hw_table *table, uintptr_t start, uintptr_t end);
/* Copies `size` bytes at `address` if they lie in one published readable range: 1, or 0. */
int hw_table_copy(const hw_table *table, uintptr_t address, void *out, size_t size);

/* A signed 32-bit displacement as x86 instructions store it (little-endian, unaligned). */
static inline int32_t hw_rel32(const unsigned char *p) {
    int32_t value;
    __builtin_memcpy(&value, p, sizeof(value));
    return value;
}
/* Changes whenever a new table is published. */
uint32_t hw_images_epoch(void);

/*
 * Whether the table has call-frame information covering `lookup_ip` (the interrupted address of an
 * exact frame, the return address less one of a caller), and the bounds of the function that
 * information describes. Reads go through the session keyed by `arg`. Only for a covered address
 * may libunwind be asked to step: for any other, its local unwinder would call dl_iterate_phdr.
 * Async-signal-safe.
 */
int hw_unwind_info_covers(uintptr_t lookup_ip, void *arg);
int hw_function_bounds(uintptr_t lookup_ip, void *arg, uintptr_t *start, uintptr_t *end);

/* Whether `start` and `address` lie in one stretch of code without call-frame information:
 * start <= address, in one executable segment, and no function with call-frame information
 * starts in (start, address] nor covers `start`. */
int hw_same_uncovered_stretch(const hw_table *table, void *arg, uintptr_t start, uintptr_t address);
/* The end of the uncovered stretch that starts at `start`, at most `limit` bytes on; `start` when
 * `start` is covered or not in a segment. */
uintptr_t hw_uncovered_end(const hw_table *table, void *arg, uintptr_t start, uintptr_t limit);

/* ---- hw_calls.c and hw_prologue.c: instruction bytes, read only inside published ranges -------- */

/* Whether the bytes before `return_address` are a call instruction in a published segment. */
int hw_follows_call(const hw_table *table, uintptr_t return_address);
/* The same, against the table in force. */
int hw_is_return_address(uintptr_t address);

/* How the call before a return address relates to the function a walk came from. */
enum {
    HW_LINK_NOT_A_CALL = -1, /* no call instruction before the return address */
    HW_LINK_MISMATCH = 0,    /* a call whose target is provably another function */
    HW_LINK_MATCH = 1,       /* a call to the function (directly, through a PLT slot or stub, or a tail jump) */
    HW_LINK_UNKNOWN = 2      /* an indirect call: its target is not in the code */
};
int hw_call_link(const hw_table *table, void *arg, uintptr_t return_address, uintptr_t callee_start);

/* For a function without call-frame information, which contains `address`: whether the call before
 * `return_address` reaches a function start T in the same uncovered stretch (directly, through
 * stubs, or by a tail jump in its target): HW_LINK_MATCH with *start = T; HW_LINK_MISMATCH when
 * every way it decodes reaches elsewhere; HW_LINK_UNKNOWN for an indirect call; HW_LINK_NOT_A_CALL. */
int hw_call_reaches_uncovered(const hw_table *table, void *arg, uintptr_t return_address, uintptr_t address,
                              uintptr_t *start);
/* The same, through stubs only (a PLT slot, `endbr64`, a jump thunk at the target): no tail jump
 * found by scanning code. HW_LINK_MATCH with *start, or HW_LINK_MISMATCH. */
int hw_call_enters_uncovered(const hw_table *table, void *arg, uintptr_t return_address, uintptr_t address,
                             uintptr_t *start);

/* What a function's standard frame-pointer prologue (push rbp; mov rbp, rsp; pushes; sub rsp, n)
 * says about its frames. */
typedef struct hw_prologue {
    uintptr_t frame_size;   /* rbp - rsp after the prologue: at any call in the body, rbp >= sp + this */
    uintptr_t frame_set;    /* bytes from the start to just after `mov rbp, rsp`: rbp is the frame's from there */
    int has_canary;         /* the entry block stores the stack-protector value ... */
    intptr_t canary_offset; /* ... at rbp + canary_offset ... */
    uintptr_t canary_set;   /* ... with the instruction that ends this many bytes from the start */
    int swift_async;        /* Swift's async frame: the async context is stored just below the frame record */
} hw_prologue;
/* 1 when the function starts with the standard prologue (and *prologue says what it found). */
int hw_prologue_read(const hw_table *table, uintptr_t function_start, hw_prologue *prologue);
/* The stack-protector value, the same in every thread of the process (glibc copies it). */
uintptr_t hw_stack_guard(void);

/* What straight-line code from a function's entry does to the stack by the time it reaches an
 * address (hw_stack_depth.c). Depths count bytes below the entry's stack pointer (which points at the
 * return address). */
typedef struct hw_straight {
    uintptr_t depth;         /* pushed or reserved by the time the address is reached */
    int fp_pushed;           /* the caller's rbp is saved ... */
    uintptr_t fp_slot_depth; /* ... at entry sp - fp_slot_depth */
    int fp_set;              /* `mov rbp, rsp` after that push, rbp not written since: ... */
    uintptr_t fp_depth;      /* ... rbp = entry sp - fp_depth */
    int fp_clobbered;        /* rbp written before the caller's value was saved */
    int branched;            /* a conditional branch was passed (not taken) */
    intptr_t jump;           /* the last jump's displacement (a slot's, for a jump through one) */
} hw_straight;
/* 1 when the code from `start` to `end` is straight-line code this reader follows (at most 512
 * bytes; conditional branches not taken and calls passed), `end` is an instruction boundary (just
 * after a call, with `after_call`), and the caller's rbp is kept or saved; *out says how. */
int hw_straight_line(const hw_table *table, uintptr_t start, uintptr_t end, int after_call, hw_straight *out);
/* How the straight line from a function's start (128 bytes at most) leaves it with its frame gone
 * (the stack as at entry, rbp the caller's), if it does: a tail call. HW_EXIT_JUMP: to *target (a
 * direct jump, or one through a slot such as a PLT entry's); HW_EXIT_INDIRECT: through a function
 * pointer, which may reach any function. *plain: no branch or call was passed on the way (a stub:
 * the function itself is never a frame of its own). */
enum { HW_EXIT_NONE = 0, HW_EXIT_JUMP = 1, HW_EXIT_INDIRECT = 2 };
int hw_straight_exit(const hw_table *table, uintptr_t start, uintptr_t *target, int *plain);

/* ---- hw_session.c ------------------------------------------------------------------------------ */

/* Prepare libunwind once (patch the local address space's accessors). Not async-signal-safe. */
int hw_unwind_prepare(void);
int hw_unwind_prepared(void);

/*
 * Sessions: the read limits of a walk, keyed by the context pointer libunwind passes back to our
 * accessors (`key`, the start of [key, key + key_size), which may be read). Reads are allowed there,
 * in [stack_low, stack_high) and in the published ranges. Open returns NULL when every session is
 * taken. Async-signal-safe.
 */
void *hw_session_open(const void *key, size_t key_size, uintptr_t stack_low, uintptr_t stack_high);
/* Closes a session; returns how many reads it refused. */
int hw_session_close(void *session);
/* A checked read: 1 and *value, or 0 (refused). */
int hw_session_read(void *session, uintptr_t address, uintptr_t *value);
/* The key libunwind passes back for this session (for hw_unwind_info_covers and friends). */
void *hw_session_key(void *session);

/* Program counter and stack pointer held in a context. Async-signal-safe. */
uintptr_t hw_context_pc(const ucontext_t *uc);
uintptr_t hw_context_sp(const ucontext_t *uc);
uintptr_t hw_context_fp(const ucontext_t *uc);
void hw_context_set(ucontext_t *uc, uintptr_t pc, uintptr_t sp, uintptr_t fp);

/* CLOCK_MONOTONIC in nanoseconds. Async-signal-safe. */
int64_t hw_now_ns(void);

/* 1 when the signal whose context is `uc` arrived in a system call and cut it short: the program
 * counter is just past the system-call instruction and the call's result register holds -EINTR.
 * Async-signal-safe (reads the instruction with hw_checked_read). */
int hw_context_cut_call_short(const ucontext_t *uc);

/* ---- hw_prepare.c ------------------------------------------------------------------------------ */

/* Answers prepare request `generation` on the calling thread (from the capture handler, for a
 * signal tagged HW_PREPARE_TAG from this process). Async-signal-safe. */
void hw_prepare_answer(uint64_t generation, ucontext_t *uc);

/* ---- hw_capture_guard.c ------------------------------------------------------------------------ */

/* 1 when `guard` holds now (see hw_capture_guard in the public header); reads the thread's /proc
 * files, the syscall file last. */
int hw_capture_guard_holds(const hw_capture_guard *guard);

/* Checks `guard` (when not NULL; nothing sent unless it holds) and queues `signo` to thread `tid`
 * of this process carrying `value` (rt_tgsigqueueinfo, SI_QUEUE); when either fails, moves the
 * request's `state` word from `pending` to `abandoned`. 0, EAGAIN (the guard did not hold) or the
 * send's errno value. */
int hw_guarded_send(pid_t tid, int signo, uint64_t value, const hw_capture_guard *guard, _Atomic uint64_t *state,
                    uint64_t pending, uint64_t abandoned);

/* ---- hw_async.c -------------------------------------------------------------------------------- */

/* This process's memory read through the kernel (process_vm_readv): 1, or 0 when any byte is
 * unmapped or unreadable. Never faults. Async-signal-safe. */
int hw_checked_read(uintptr_t address, void *out, size_t size);

/* ---- hw_libunwind.c ---------------------------------------------------------------------------- */

/* What one libunwind step from (ip, sp, fp) found. */
typedef struct hw_step_result {
    int status; /* > 0 stepped, 0 outermost frame, < 0 failed */
    uintptr_t cfa;
    uintptr_t ip;
    uintptr_t fp;
    uintptr_t fp_used; /* the frame pointer the step started from (the stand-in, if unknown) */
    int fp_saved;      /* 1: restored from memory at fp_slot, 0: unchanged, -1: elsewhere */
    uintptr_t fp_slot;
    int ip_at_cfa_minus_8;
} hw_step_result;

/* One step, in a session of its own. With `fp_known` 0 the frame pointer is a stand-in that points
 * at a fake frame record (`fp` 0: the first stand-in, 64: a second one 64 bytes higher): the step
 * still says where the CFA is, and relative to which register. */
hw_step_result hw_libunwind_step(uintptr_t ip, uintptr_t sp, uintptr_t fp, int fp_known, int exact,
                                 uintptr_t stack_low, uintptr_t stack_high);

/* libunwind's own step loop over `uc` in a session of its own, appending to frames[*count].
 * Returns -1 (nothing done) when no session is free. */
int hw_libunwind_walk(ucontext_t *uc, size_t uc_size, int signal_frame, uintptr_t stack_low, uintptr_t stack_high,
                      uintptr_t *frames, int *count, int max_frames, int32_t *flags, uintptr_t *last_sp);

/* ---- hw_rules.c -------------------------------------------------------------------------------- */

/* A frame's registers during a walk. */
typedef struct hw_frame {
    uintptr_t ip;  /* the interrupted instruction (exact) or a return address */
    uintptr_t sp;
    uintptr_t fp;
    int exact;
    int fp_known;  /* 0 while the frame pointer register's value is unknown (a blocked thread) */
} hw_frame;

/* How a frame steps: its CFA (the caller's stack pointer) is the stack or frame pointer plus
 * cfa_offset, its return address at CFA - 8, the caller's frame pointer unchanged or at CFA +
 * fp_offset. */
enum { HW_BASE_SP = 0, HW_BASE_FP = 1 };
#define HW_FP_UNCHANGED INT32_MIN
typedef struct hw_frame_rule {
    int base;
    int32_t cfa_offset;
    int32_t fp_offset;
} hw_frame_rule;

/* hw_uncovered.c: the rule for a frame in code without call-frame information, where the code and
 * the stack prove one (1), or 0. */
int hw_uncovered_rule(void *session, const hw_frame *frame, hw_frame_rule *rule);

enum {
    HW_STEP_END = 0,          /* the outermost frame */
    HW_STEP_STEPPED = 1,      /* *frame is now the caller */
    HW_STEP_NEEDS_FP = 2,     /* the frame's rule is relative to the frame pointer, which is unknown */
    HW_STEP_UNSUPPORTED = 3,  /* not a frame a cached rule can step: libunwind's own loop must */
    HW_STEP_NO_INFO = -1,     /* no call-frame information for the address */
    HW_STEP_UNREADABLE = -2,  /* a read outside the allowed ranges was refused */
    HW_STEP_NO_PROGRESS = -3, /* the stack pointer did not go up */
    HW_STEP_FAILED = -4       /* libunwind could not step */
};

/* One step with the cached rules (derived from libunwind on a miss). x86_64 only: elsewhere it
 * returns HW_STEP_UNSUPPORTED. */
int hw_rules_step(void *session, hw_frame *frame, uint32_t epoch, uintptr_t stack_low, uintptr_t stack_high);

/* The fast walk: rules step by step, libunwind's own loop for the frames they cannot step. Returns
 * -1 when it cannot run (no session free). */
int hw_rules_walk(ucontext_t *uc, size_t uc_size, uintptr_t stack_low, uintptr_t stack_high, uintptr_t *frames,
                  int *count, int max_frames, int32_t *flags, uintptr_t *last_sp);

/* ---- hw_walk.c --------------------------------------------------------------------------------- */

/*
 * Walk the stack described by `uc` (a signal context or a synthesized one) into `frames`.
 * Async-signal-safe. Returns the number of frames written; *last_sp receives the stack pointer of
 * the last frame written.
 */
int hw_unwind_walk(ucontext_t *uc, size_t uc_size, uintptr_t stack_low, uintptr_t stack_high,
                   uintptr_t *frames, int max_frames, int32_t *flags, uintptr_t *last_sp);

/* ---- shared constants --------------------------------------------------------------------------- */

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
 * hw_session_read, the frame-record search). They read a thread's stack on purpose, after the
 * range check: saved registers, return addresses, and, while a rule is derived or a frame record is
 * looked for, words that belong to no variable. Under AddressSanitizer those words may be the
 * redzones it keeps between a frame's variables; such a read is by design, not an overflow.
 * Everything else in the target stays instrumented.
 */
#define HW_READS_FOREIGN_STACK __attribute__((no_sanitize("address")))

#endif
