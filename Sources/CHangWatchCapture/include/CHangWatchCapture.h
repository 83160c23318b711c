/*
 * CHangWatchCapture: the async-signal-safe half of HangWatch's stack capture (and, apart from
 * it, the Swift runtime's enqueue hooks that wake a resting pool watch: hw_pool_wake.c).
 *
 * Mechanism only. Swift (HangWatch/Capture/UnsafeCaptureBridge.swift) owns every policy decision:
 * which thread, when, how long to wait, what to do with the frames. Everything declared here is
 * prefixed `hw_`. See docs/signal-safety.md for the contract of each function.
 *
 * Two ways to capture a stack:
 *   - signal capture: hw_capture_request() queues a real-time signal carrying a generation number
 *     to the target thread; the handler unwinds its own stack with libunwind into memory the
 *     handler owns, then publishes it into the shared result slot; hw_capture_wait() polls for it.
 *   - blocked-thread capture: for a thread parked in a system call (which a signal would cut short
 *     with EINTR), hw_unwind_blocked_thread() unwinds from the user stack pointer and program
 *     counter that /proc/self/task/<tid>/syscall reports, on the calling (watchdog) thread.
 *
 * Both walk the stack with the same libunwind cursor whose memory reads are checked against the
 * target's stack and the loaded images (a corrupt frame pointer yields a truncated stack, never a
 * fault) and whose unwind-table lookup uses a table published by hw_images_publish() (never
 * dl_iterate_phdr, so a thread stuck inside the dynamic loader cannot deadlock a capture).
 */
#ifndef CHANGWATCHCAPTURE_H
#define CHANGWATCHCAPTURE_H

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

/*
 * Heartbeat page: what a running monitor publishes for the host agent, in a small shared file
 * mapping (docs/report-format.md, "Heartbeat file"). One writer (the watchdog thread) updates it
 * with plain stores between two sequence increments (a seqlock: odd while writing); readers in
 * other processes retry when the sequence is odd or changed. No system call but clock_gettime.
 */
#define HW_HEARTBEAT_MAGIC 0x3130303042485748ULL /* "HWHB0001" in file order (little-endian) */
#define HW_HEARTBEAT_SIZE 512
#define HW_LOOP_BUCKETS 15

/*
 * Loop-busy histogram (optional, HANGWATCH_LOOP_HISTOGRAM): iterations per busy-time bucket, kept
 * by the loop's thread (the only writer; relaxed stores so the watchdog's copies never tear) and
 * copied into the heartbeat page at each tick. Bucket upper bounds: LoopBusyHistogram.bounds.
 */
struct hw_loop_histogram {
    uint64_t total_ns;
    uint64_t counts[HW_LOOP_BUCKETS];
};

static const uint64_t hw_loop_bounds_ns[HW_LOOP_BUCKETS - 1] = {
    100000ULL, 250000ULL, 500000ULL, 1000000ULL, 2500000ULL, 5000000ULL, 10000000ULL, 25000000ULL,
    50000000ULL, 100000000ULL, 250000000ULL, 500000000ULL, 1000000000ULL, 2500000000ULL,
};

/** CLOCK_MONOTONIC in nanoseconds (vDSO: no system call). */
static inline uint64_t hw_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

/** Adds one iteration that was busy for `busy_ns`. Only the loop's thread calls it. */
static inline void hw_loop_histogram_add(struct hw_loop_histogram *histogram, uint64_t busy_ns) {
    int bucket = 0;
    while (bucket < HW_LOOP_BUCKETS - 1 && busy_ns > hw_loop_bounds_ns[bucket]) {
        bucket++;
    }
    uint64_t count = __atomic_load_n(&histogram->counts[bucket], __ATOMIC_RELAXED);
    __atomic_store_n(&histogram->counts[bucket], count + 1, __ATOMIC_RELAXED);
    uint64_t total = __atomic_load_n(&histogram->total_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&histogram->total_ns, total + busy_ns, __ATOMIC_RELAXED);
}

/**
 * Adds `from`'s counts into `into` (the watchdog's sum of several loops' histograms for one
 * heartbeat; `from` is read with relaxed loads, as the heartbeat's copy is). `into` is the caller's.
 */
static inline void hw_loop_histogram_accumulate(struct hw_loop_histogram *into, const struct hw_loop_histogram *from) {
    into->total_ns += __atomic_load_n(&from->total_ns, __ATOMIC_RELAXED);
    for (int bucket = 0; bucket < HW_LOOP_BUCKETS; bucket++) {
        into->counts[bucket] += __atomic_load_n(&from->counts[bucket], __ATOMIC_RELAXED);
    }
}

struct hw_heartbeat {
    uint64_t magic;               /*   0 */
    uint64_t sequence;            /*   8: odd while an update is in progress */
    uint64_t pid;                 /*  16 */
    uint64_t start_time_ticks;    /*  24: /proc/<pid>/stat field 22 */
    uint64_t started_unix_ms;     /*  32: when the monitor started */
    uint64_t tick_monotonic_ns;   /*  40: CLOCK_MONOTONIC at the watchdog's last tick */
    uint64_t tick_unix_ms;        /*  48: CLOCK_REALTIME at the same tick */
    uint64_t interval_ms;         /*  56: the watchdog ticks at least this often while running */
    uint64_t state;               /*  64: 0 stopped, 1 idle, 2 watching, 3 recording, 4 paused */
    uint64_t activity_word;       /*  72: the loop's last activity as the watchdog last saw it */
    uint64_t hangs_detected;      /*  80 */
    uint64_t threshold_us;        /*  88 */
    uint64_t loop_buckets;        /*  96: buckets in the loop-busy histogram; 0: not published */
    uint64_t loop_busy_total_ns;  /* 104 */
    uint64_t loop_counts[HW_LOOP_BUCKETS]; /* 112 */
    uint64_t hangs_suppressed;    /* 232: hangs the rate limit kept from being written */
    uint64_t calls_cut_short;     /* 240: system calls the process's capture signals cut short (EINTR), process-wide */
    uint64_t reserved[1];         /* 248 */
    /* 256: the cooperative pool's probe (published by the monitor that runs the process's pool watch) */
    uint64_t pool_buckets;        /* 256: buckets in the start-delay histogram; 0: not published */
    uint64_t pool_delay_total_ns; /* 264 */
    uint64_t pool_counts[HW_LOOP_BUCKETS]; /* 272: probes per bucket of start delay (the loop histogram's bounds) */
    uint64_t pool_starvations;    /* 392: probes that had not started within the threshold */
    uint64_t capture_signal;      /* 400: the signal `hangwatch dump` queues to ask for a dump; 0: none */
    uint64_t watchdog_tid;        /* 408: the thread that ticks (the one a dump request is sent to) */
    uint64_t flags;               /* 416: HW_HEARTBEAT_FLAG_* */
    uint64_t reserved_pool[3];    /* 424 */
    uint64_t service_version[8];  /* 448: the service's version, UTF-8, NUL-padded (64 bytes) */
};

/** The heartbeat's flags: the Swift runtime's task layout is not one the monitor reads (async
 * labels and following computing pool jobs are unavailable). */
#define HW_HEARTBEAT_FLAG_TASK_LAYOUT_UNRECOGNISED 1u

/** Initializes `page` (HW_HEARTBEAT_SIZE bytes of a shared mapping) for this process; `loop`
 * (may be NULL) is the histogram the monitor keeps, published from the start. */
void hw_heartbeat_init(struct hw_heartbeat *page, uint64_t pid, uint64_t start_time_ticks, uint64_t interval_ms,
                       uint64_t threshold_us, const struct hw_loop_histogram *loop);

/**
 * Publishes one tick: the clocks are read here, and `loop` (may be NULL) copied. Only one thread
 * may call it for a page.
 */
void hw_heartbeat_tick(struct hw_heartbeat *page, uint64_t state, uint64_t activity_word, uint64_t hangs_detected,
                       uint64_t hangs_suppressed, uint64_t calls_cut_short, uint64_t threshold_us,
                       const struct hw_loop_histogram *loop);

/** Publishes the pool probe's start delays (`pool`, NULL: not published) and starvations. The
 * watchdog thread only (the page's one writer), like hw_heartbeat_tick. */
void hw_heartbeat_pool(struct hw_heartbeat *page, const struct hw_loop_histogram *pool, uint64_t starvations);

/** Publishes the signal `hangwatch dump` queues to ask this process for a thread dump (0: none). */
void hw_heartbeat_capture_signal(struct hw_heartbeat *page, uint64_t signo);

/** Publishes the page's flags (HW_HEARTBEAT_FLAG_*). */
void hw_heartbeat_flags(struct hw_heartbeat *page, uint64_t flags);

/** Publishes the service's version: `count` bytes of UTF-8 (at most 64 are kept; the rest of the
 * field is zeroed). */
void hw_heartbeat_service_version(struct hw_heartbeat *page, const uint8_t *bytes, size_t count);

/*
 * The watchdog's wake-up (hw_wake.c): a POSIX semaphore, `hw_wake_size()` bytes the caller owns,
 * which a signal handler may post. hw_wake_wait_until waits on CLOCK_MONOTONIC: 1 posted, 0 timed
 * out, -1 failed.
 */
size_t hw_wake_size(void);
int hw_wake_init(void *semaphore);
void hw_wake_destroy(void *semaphore);
void hw_wake_post(void *semaphore);
int hw_wake_wait(void *semaphore);
int hw_wake_wait_until(void *semaphore, uint64_t monotonic_ns);
int hw_wake_try(void *semaphore);

/* The calling thread's CPU affinity as a bit mask of `size` bytes (hw_affinity.c): 0 or -1. */
int hw_get_affinity(unsigned char *mask, size_t size);
int hw_set_affinity(const unsigned char *mask, size_t size);

/*
 * Dump requests (`hangwatch dump PID`): the capture signal, queued by another process with the
 * dump tag in the high 16 bits of its value and a nonce in the rest, stores the nonce in a free
 * slot of eight and posts the registered semaphore (async-signal-safe). hw_dump_take returns one
 * pending nonce (0: none) and frees its slot; call it until it returns 0.
 */
#define HW_DUMP_TAG ((uint64_t)0x4844 << 48) /* "HD" */
void hw_dump_register(void *semaphore);
void hw_dump_unregister(void *semaphore);
void hw_dump_request(uint64_t nonce);
uint64_t hw_dump_take(void);

/*
 * Waking a resting pool watch (hw_pool_wake.c; not signal-handler code). The Swift runtime's
 * swift_task_enqueueGlobal hooks, chained to any hook set before: every job enqueued to the
 * cooperative pool passes through them.
 */

/** Installs the hooks once per process (later calls only replace `wake`). 0: installed; -1: this
 * runtime has no such hooks. `wake` is called on the enqueueing thread, once per arming. */
int hw_pool_hooks_install(void (*wake)(void));
/** 1 while all three hooks are still ours (nobody replaced one after us). */
int hw_pool_hooks_current(void);
/** From now, the first job enqueued (immediately or delayed) by another thread, or outside
 * hw_pool_own_enqueues, calls `wake`. */
void hw_pool_arm(void);
/** Stops waking; the CLOCK_MONOTONIC ns of the enqueue that woke since hw_pool_arm (0: none). */
uint64_t hw_pool_disarm(void);
/** While 1, enqueues on the calling thread are the watch's own (its probe): never a wake. */
void hw_pool_own_enqueues(int own);
/** The earliest due time (CLOCK_MONOTONIC ns) after `now_ns` of a delayed job (Task.sleep's
 * resumption) enqueued so far: 0 none; -1 unknown (too many pending, or a clock it cannot read). */
int64_t hw_pool_next_delayed(uint64_t now_ns);

#ifdef __cplusplus
}
#endif

#endif /* CHANGWATCHCAPTURE_H */
