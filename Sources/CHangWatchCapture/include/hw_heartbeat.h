/*
 * hw_heartbeat.h: the heartbeat page, the loop-busy histogram and the clock they
 * are stamped with (Bridge/UnsafeHeartbeatPage, UnsafeClock).
 * Part of CHangWatchCapture (its umbrella header includes it); prefixed `hw_`.
 */
#ifndef HW_HEARTBEAT_H
#define HW_HEARTBEAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Heartbeat page: what a running monitor publishes for the host agent, in a small shared file
 * mapping (docs/report-format.md, "Heartbeat file"). One writer (the watchdog thread) updates it
 * with plain stores between two sequence increments (a seqlock: odd while writing); readers in
 * other processes retry when the sequence is odd or changed. No system call but clock_gettime.
 */
#define HW_HEARTBEAT_MAGIC 0x3130303042485748ULL /* "HWHB0001" in file order (little-endian) */
#define HW_HEARTBEAT_SIZE 1024
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
    uint64_t pid_namespace;       /* 248: the inode of the process's pid namespace (/proc/self/ns/pid); 0: unknown */
    /* 256: the cooperative pool's probe (published by the monitor that runs the process's pool watch) */
    uint64_t pool_buckets;        /* 256: buckets in the start-delay histogram; 0: not published */
    uint64_t pool_delay_total_ns; /* 264 */
    uint64_t pool_counts[HW_LOOP_BUCKETS]; /* 272: probes per bucket of start delay (the loop histogram's bounds) */
    uint64_t pool_starvations;    /* 392: probes that had not started within the threshold */
    uint64_t capture_signal;      /* 400: the signal `hangwatch dump` queues to ask for a dump; 0: none */
    uint64_t watchdog_tid;        /* 408: the thread that ticks (the one a dump request is sent to) */
    uint64_t flags;               /* 416: HW_HEARTBEAT_FLAG_* */
    /* 424: the busiest run loop's flight recorder over its window ending at the tick (issue 62) */
    uint64_t lead_up_window_ns;   /* 424: the window the two below cover; 0: not published */
    uint64_t lead_up_busy_ns;     /* 432: busy time in it */
    uint64_t lead_up_longest_ns;  /* 440: the longest busy piece in it */
    uint64_t service_version[8];  /* 448: the service's version, UTF-8, NUL-padded (64 bytes) */
    /* 512: the run loops' flight recorders' busy pieces (issue 62: lag below the threshold) */
    uint64_t lag_buckets;         /* 512: buckets in the lag histogram; 0: not published */
    uint64_t lag_total_ns;        /* 520 */
    uint64_t lag_counts[HW_LOOP_BUCKETS]; /* 528: busy pieces per bucket of length (the loop histogram's bounds) */
    uint64_t reserved[47];        /* 648: zero; room for later sections */
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

/** Publishes a run loop's busy time and longest piece over `window_ns` ending now (`window_ns`
 * 0: not published). The watchdog thread only, like hw_heartbeat_tick. */
void hw_heartbeat_lead_up(struct hw_heartbeat *page, uint64_t window_ns, uint64_t busy_ns, uint64_t longest_ns);

/** Publishes the run loops' lag histogram (`lag`, NULL: not published): their flight recorders'
 * busy pieces by length. The watchdog thread only, like hw_heartbeat_tick. */
void hw_heartbeat_lag(struct hw_heartbeat *page, const struct hw_loop_histogram *lag);

/** Publishes the signal `hangwatch dump` queues to ask this process for a thread dump (0: none). */
void hw_heartbeat_capture_signal(struct hw_heartbeat *page, uint64_t signo);

/** Publishes the inode of the process's pid namespace: with the pid and the start time, what tells
 * this process from another (a container's pid 1 from the host's) to a reader in another namespace. */
void hw_heartbeat_pid_namespace(struct hw_heartbeat *page, uint64_t inode);

/** Publishes the page's flags (HW_HEARTBEAT_FLAG_*). */
void hw_heartbeat_flags(struct hw_heartbeat *page, uint64_t flags);

/** Publishes the service's version: `count` bytes of UTF-8 (at most 64 are kept; the rest of the
 * field is zeroed). */
void hw_heartbeat_service_version(struct hw_heartbeat *page, const uint8_t *bytes, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* HW_HEARTBEAT_H */
