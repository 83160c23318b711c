/*
 * hw_capture.h: the stack capture: the unwind table, a signal capture and its
 * guard, a thread's preparation, the blocked-thread walk and the async callers (Bridge/UnsafeCaptureBridge,
 * UnsafeImageTable).
 * Part of CHangWatchCapture (its umbrella header includes it); prefixed `hw_`.
 */
#ifndef HW_CAPTURE_H
#define HW_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Upper bound on frames in one captured stack. */
#define HW_MAX_FRAMES 256
/** Upper bound on executable segments in the unwind table. */
#define HW_MAX_SEGMENTS 2048
/** Upper bound on readable address ranges (image segments) known to the unwinder. */
#define HW_MAX_RANGES 4096

/** Result flags (bit set). */
enum {
    HW_UNWIND_END_OF_STACK = 1 << 0,   /* the walk reached the outermost frame */
    HW_UNWIND_TRUNCATED = 1 << 1,      /* stopped at the frame cap */
    HW_UNWIND_ERROR = 1 << 2,          /* a step failed (see the flags below for why) */
    HW_UNWIND_NO_PROGRESS = 1 << 3,    /* the stack pointer went backwards or repeated: stopped */
    HW_UNWIND_INIT_FAILED = 1 << 4,    /* the walk could not start */
    HW_UNWIND_BUSY = 1 << 6,           /* too many unwinds in flight at once; nothing captured */
    HW_UNWIND_READS_REJECTED = 1 << 7, /* at least one memory read outside the allowed ranges was refused */
    HW_UNWIND_NO_UNWIND_INFO = 1 << 8, /* stopped at an address without call-frame information */
    /* A blocked thread's walk needed the frame pointer, which /proc does not give: */
    HW_UNWIND_FP_PROLOGUE = 1 << 9,    /* computed from the function's prologue (its fixed frame size), and the
                                          frame record there checked to the outermost frame */
    HW_UNWIND_FP_RECORD = 1 << 10,     /* the one frame record on the stack that checks to the outermost frame
                                          and whose call instruction calls the function */
    HW_UNWIND_FP_AMBIGUOUS = 1 << 11,  /* stopped: several frame records check out and disagree */
    HW_UNWIND_FP_UNPROVEN = 1 << 12    /* stopped: no frame record could be proven */
};

/** One executable segment and where its .eh_frame_hdr binary-search table lives. */
typedef struct hw_unwind_segment {
    uintptr_t start;         /* first address of the executable PT_LOAD segment */
    uintptr_t end;           /* one past its last address */
    uintptr_t gp;            /* DT_PLTGOT of the image, 0 if none */
    uintptr_t eh_frame_hdr;  /* address of .eh_frame_hdr (data-relative base of the table) */
    uintptr_t table_data;    /* address of the first binary-search table entry */
    uintptr_t table_words;   /* table length in machine words (2 x fde_count x 4 bytes / 8) */
} hw_unwind_segment;

/** A mapped, readable address range [start, end). */
typedef struct hw_address_range {
    uintptr_t start;
    uintptr_t end;
} hw_address_range;

/**
 * Publish the unwind table. Both arrays must be sorted by start address. Copies into the idle half
 * of a double buffer, then flips. Not async-signal-safe; call from one thread at a time.
 * Returns 0 (at once, changing nothing, when these are the images already published), EAGAIN
 * while an unwind is in flight (retry later), or E2BIG when over capacity.
 */
int hw_images_publish(const hw_unwind_segment *segments, size_t segment_count,
                      const hw_address_range *ranges, size_t range_count);

/** Upper bound on the async callers read for one stack. */
#define HW_MAX_ASYNC_FRAMES 64

/** How an async chain ended (hw_async_chain.status). */
enum {
    HW_ASYNC_NONE = 0,       /* no async function called from the concurrency runtime on the stack */
    HW_ASYNC_COMPLETE = 1,   /* reached the task's first context (no caller) */
    HW_ASYNC_LIMIT = 2,      /* stopped at HW_MAX_ASYNC_FRAMES */
    HW_ASYNC_UNREADABLE = 3, /* a context (or the frame's slot on the stack) could not be read */
    HW_ASYNC_INVALID = 4     /* a context failed a check (misaligned, null resume function, a loop) */
};

/** The async callers of the innermost async function on a stack (called by the runtime). */
typedef struct hw_async_chain {
    int32_t after;  /* index of the async function's frame in the stack; -1: none */
    int32_t count;
    int32_t status; /* HW_ASYNC_* */
    int32_t reserved;
    uintptr_t first_context; /* the async function's own context; 0: none read */
    uintptr_t last_context;  /* the last context read (the task's first when status is COMPLETE) */
    uintptr_t resume[HW_MAX_ASYNC_FRAMES]; /* each caller's resume function (a partial function's entry), innermost first */
} hw_async_chain;

/** The code range of the Swift concurrency runtime (whose job loop calls async functions); 0, 0: none. */
void hw_async_runtime_set(uintptr_t start, uintptr_t end);

/**
 * Reads the async callers for a stack already walked: `frames` innermost first, `sp` the innermost
 * stack pointer, `stack_high` the stack's top. Returns the number of callers read. Async-signal-safe;
 * also used from another thread for a blocked thread's stack.
 */
int hw_async_chain_read(const uintptr_t *frames, int count, uintptr_t sp, uintptr_t stack_high, hw_async_chain *out);

/** Result of one signal capture. */
typedef struct hw_capture_result {
    uint64_t generation;
    int32_t frame_count;
    int32_t flags;
    int64_t handler_entry_ns; /* CLOCK_MONOTONIC when the handler started on the target thread */
    int64_t handler_exit_ns;  /* ... and when it finished publishing */
    int32_t cut_call_short;   /* 1: the signal arrived in a system call and cut it short (it returns EINTR) */
    uintptr_t frames[HW_MAX_FRAMES];
    hw_async_chain async_chain;
} hw_capture_result;

/**
 * Install the capture handler for `signo` (idempotent), patch libunwind's local address space to
 * use the published table and checked memory reads, and warm libunwind up on the calling thread.
 * A handler that was installed before is kept and called for every signal that is not a capture
 * request. Not async-signal-safe. Returns 0 or an errno value.
 */
int hw_capture_install(int signo);

/** 1 when the handler currently installed for `signo` is HangWatch's, 0 otherwise. */
int hw_capture_handler_is_current(int signo);

/**
 * Unblock `signo` for the calling thread: the watchdog's, where a dump request is queued (a
 * thread inherits its creator's mask, and a service may block the capture signal where it starts
 * its monitor). Outside any signal handler.
 */
void hw_capture_thread_unblock(int signo);

/**
 * Attach the calling thread: unblock `signo` for it (threads started from libdispatch workers
 * inherit a mask that blocks it), give it an alternate signal stack of `altstack_size` bytes unless
 * it already has one, and warm libunwind's caches with its current stack. Call on the monitored
 * thread, outside any signal handler. Returns 1 when an alternate stack was installed, 0 when one
 * existed, or a negative errno value.
 */
int hw_capture_thread_attach(size_t altstack_size, int signo);

/** The calling thread's kernel thread id. */
pid_t hw_gettid(void);

/** The calling thread's stack bounds from pthread_getattr_np; 0 on success or an errno value. */
int hw_current_thread_stack(uintptr_t *low, uintptr_t *high);

/**
 * What must still hold, read from the thread's /proc files immediately before the capture signal is
 * sent, for the signal to be sent at all. A signal that lands while the thread is in a timed wait
 * (nanosleep, poll, epoll_wait, a timed futex) ends the wait early with EINTR, and a thread the
 * caller read as running may since have gone into one, or may be inside one's kernel entry already
 * (`running` in /proc covers that too).
 */
typedef struct hw_capture_guard {
    int syscall_fd;              /* the thread's open /proc/self/task/<tid>/syscall: must say `running` */
    int schedstat_fd;            /* its open schedstat, or -1: its run count (third field) ... */
    uint64_t run_count;          /* ... must still be this: not put on a CPU again (the cheap proof) */
    int status_fd;               /* its open status, or -1: its voluntary_ctxt_switches ... */
    uint64_t voluntary_switches; /* ... must still be this many: it has not slept since (being
                                    preempted, which a watchdog's own wake-up on its CPU does, is no sleep) */
} hw_capture_guard;

/**
 * Queue a capture request for thread `tid` of this process and send it `signo` carrying the new
 * generation number (rt_tgsigqueueinfo, SI_QUEUE). The handler reads the thread's stack only
 * between its stack pointer (less the ABI's red zone, never below `stack_low`) and `stack_high`.
 * `guard`, when not NULL, is checked last of all, right before the send: nothing is sent (EAGAIN)
 * unless it holds. The handler reports a call it cut short all the same (`cut_call_short`).
 * At most one request is outstanding: returns EBUSY while a previous one is neither collected nor
 * abandoned, EAGAIN as above, ESRCH when the thread is gone, or another errno value; 0 on success.
 */
int hw_capture_request(pid_t tid, const hw_capture_guard *guard, uintptr_t stack_low, uintptr_t stack_high, int signo,
                       int max_frames, uint64_t *generation);

/**
 * Wait for the answer to request `generation` until `timeout_ns` of CLOCK_MONOTONIC has passed.
 * Returns 0 with `out` filled, or ETIMEDOUT after marking the request abandoned: a handler that
 * answers later finds it abandoned and writes nothing shared.
 */
int hw_capture_wait(uint64_t generation, int64_t timeout_ns, hw_capture_result *out);

/**
 * Unwind a thread that is blocked in a system call, from the user `sp` and `pc` reported by
 * /proc/self/task/<tid>/syscall. Runs on the calling thread; reads only the thread's stack from
 * `sp` (less the red zone, never below `stack_low`) to `stack_high`, and the published image ranges.
 * Returns the number of frames written (>= 0) and sets *flags.
 */
int hw_unwind_blocked_thread(uintptr_t sp, uintptr_t pc, uintptr_t stack_low, uintptr_t stack_high,
                             uintptr_t *frames, int max_frames, int32_t *flags);

/*
 * Preparing a thread that never ran the attach step (hw_prepare.c): the thread itself takes an
 * alternate stack, lets the capture signal through from then on, and says where its stack is.
 */

/** Prepare requests carry this tag in the high 16 bits of the signal's value ("HP"). */
#define HW_PREPARE_TAG ((uint64_t)0x4850 << 48)

/** What a prepared thread answered. */
typedef struct hw_prepare_result {
    uint64_t generation;
    uintptr_t stack_pointer;    /* where the signal found its stack pointer */
    uintptr_t thread_pointer;   /* its pthread_self(): on x86_64 glibc, above its stack in the same mapping */
    int32_t had_alternate_stack;  /* 1: it had one of its own (the one given was not taken) */
    int32_t took_alternate_stack; /* 1: it took the one given */
    int32_t cut_call_short;       /* 1: the signal arrived in a system call and cut it short */
    int32_t reserved;
} hw_prepare_result;

/**
 * Queue a prepare request for thread `tid` of this process and send it `signo` (the capture signal
 * itself, or another signal whose handler is HangWatch's, installed with hw_capture_install): its
 * handler takes `altstack` (`altstack_size` bytes, mapped by the caller, or NULL) unless the thread
 * has an alternate stack, removes `capture_signo` from the mask the thread returns to, and records
 * its stack and thread pointers. `guard` as for hw_capture_request. One request at a time: EBUSY,
 * EAGAIN (the guard did not hold: nothing sent), ESRCH, another errno value, or 0.
 */
int hw_prepare_request(pid_t tid, const hw_capture_guard *guard, int signo, int capture_signo, void *altstack,
                       size_t altstack_size, uint64_t *generation);

/** Wait for the answer to prepare request `generation`: 0 with `out` filled, or ETIMEDOUT (the
 * request abandoned; the handler may still have taken the alternate stack). */
int hw_prepare_wait(uint64_t generation, int64_t timeout_ns, hw_prepare_result *out);

/** What handles `signo` now: 0 the default action, 1 ignored, 2 a handler; -1 it cannot be read. */
int hw_signal_disposition(int signo);

/** For the differential tests: 0 turns off the prologue method of the blocked-thread walk (so the
 * frame-record method alone is measured); 1 (the default) turns it back on. */
void hw_blocked_use_prologue(int enabled);

#ifdef __cplusplus
}
#endif

#endif /* HW_CAPTURE_H */
