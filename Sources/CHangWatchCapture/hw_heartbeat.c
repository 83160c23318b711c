/*
 * The heartbeat page (see CHangWatchCapture.h). A seqlock with one writer: the sequence goes odd,
 * the fields are stored, the sequence goes even; release ordering keeps the stores inside.
 */
#include "CHangWatchCapture.h"

#include <stddef.h>
#include <time.h>

_Static_assert(sizeof(struct hw_heartbeat) == HW_HEARTBEAT_SIZE, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, tick_monotonic_ns) == 40, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, activity_word) == 72, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, loop_counts) == 112, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, hangs_suppressed) == 232, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, calls_cut_short) == 240, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, pool_counts) == 272, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, pool_starvations) == 392, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, flags) == 416, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, lead_up_window_ns) == 424, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, service_version) == 448, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, lag_buckets) == 512, "heartbeat layout is part of the file format");
_Static_assert(offsetof(struct hw_heartbeat, lag_counts) == 528, "heartbeat layout is part of the file format");

static uint64_t clock_ns(clockid_t clock) {
    struct timespec now;
    if (clock_gettime(clock, &now) != 0) {
        return 0;
    }
    return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

static void store(uint64_t *field, uint64_t value) {
    __atomic_store_n(field, value, __ATOMIC_RELAXED);
}

/* Stores `histogram` into one of the page's histogram sections (its bucket count, total and
 * counts); NULL: not published (all zero). Relaxed loads: a loop's own histogram may be written
 * by its thread meanwhile. */
static void store_histogram(uint64_t *buckets, uint64_t *total, uint64_t *counts, const struct hw_loop_histogram *histogram) {
    store(buckets, histogram != NULL ? HW_LOOP_BUCKETS : 0);
    store(total, histogram != NULL ? __atomic_load_n(&histogram->total_ns, __ATOMIC_RELAXED) : 0);
    for (int bucket = 0; bucket < HW_LOOP_BUCKETS; bucket++) {
        store(&counts[bucket], histogram != NULL ? __atomic_load_n(&histogram->counts[bucket], __ATOMIC_RELAXED) : 0);
    }
}

static void begin(struct hw_heartbeat *page) {
    uint64_t sequence = __atomic_load_n(&page->sequence, __ATOMIC_RELAXED);
    __atomic_store_n(&page->sequence, sequence | 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void end(struct hw_heartbeat *page) {
    uint64_t sequence = __atomic_load_n(&page->sequence, __ATOMIC_RELAXED);
    __atomic_store_n(&page->sequence, (sequence | 1) + 1, __ATOMIC_RELEASE);
}

void hw_heartbeat_init(struct hw_heartbeat *page, uint64_t pid, uint64_t start_time_ticks, uint64_t interval_ms,
                       uint64_t threshold_us, const struct hw_loop_histogram *loop) {
    begin(page);
    store(&page->pid, pid);
    store(&page->start_time_ticks, start_time_ticks);
    store(&page->started_unix_ms, clock_ns(CLOCK_REALTIME) / 1000000ULL);
    store(&page->tick_monotonic_ns, clock_ns(CLOCK_MONOTONIC));
    store(&page->tick_unix_ms, clock_ns(CLOCK_REALTIME) / 1000000ULL);
    store(&page->interval_ms, interval_ms);
    store(&page->state, 1);
    store(&page->activity_word, 0);
    store(&page->hangs_detected, 0);
    store(&page->hangs_suppressed, 0);
    store(&page->calls_cut_short, 0);
    store(&page->threshold_us, threshold_us);
    store_histogram(&page->loop_buckets, &page->loop_busy_total_ns, page->loop_counts, loop);
    store(&page->pool_buckets, 0); /* published by hw_heartbeat_pool, from the monitor that runs the pool watch */
    store(&page->pool_starvations, 0);
    store(&page->lead_up_window_ns, 0); /* published by hw_heartbeat_lead_up */
    store(&page->lead_up_busy_ns, 0);
    store(&page->lead_up_longest_ns, 0);
    store(&page->lag_buckets, 0); /* published by hw_heartbeat_lag */
    store(&page->capture_signal, 0);
    store(&page->watchdog_tid, 0);
    store(&page->magic, HW_HEARTBEAT_MAGIC);
    end(page);
}

void hw_heartbeat_tick(struct hw_heartbeat *page, uint64_t state, uint64_t activity_word, uint64_t hangs_detected,
                       uint64_t hangs_suppressed, uint64_t calls_cut_short, uint64_t threshold_us,
                       const struct hw_loop_histogram *loop) {
    begin(page);
    store(&page->watchdog_tid, (uint64_t)hw_gettid());
    store(&page->tick_monotonic_ns, clock_ns(CLOCK_MONOTONIC));
    store(&page->tick_unix_ms, clock_ns(CLOCK_REALTIME) / 1000000ULL);
    store(&page->state, state);
    store(&page->activity_word, activity_word);
    store(&page->hangs_detected, hangs_detected);
    store(&page->hangs_suppressed, hangs_suppressed);
    store(&page->calls_cut_short, calls_cut_short);
    store(&page->threshold_us, threshold_us);
    if (loop != NULL) {
        store_histogram(&page->loop_buckets, &page->loop_busy_total_ns, page->loop_counts, loop);
    }
    end(page);
}

void hw_heartbeat_pool(struct hw_heartbeat *page, const struct hw_loop_histogram *pool, uint64_t starvations) {
    begin(page);
    store_histogram(&page->pool_buckets, &page->pool_delay_total_ns, page->pool_counts, pool);
    store(&page->pool_starvations, pool != NULL ? starvations : 0);
    end(page);
}

void hw_heartbeat_lead_up(struct hw_heartbeat *page, uint64_t window_ns, uint64_t busy_ns, uint64_t longest_ns) {
    begin(page);
    store(&page->lead_up_window_ns, window_ns);
    store(&page->lead_up_busy_ns, window_ns != 0 ? busy_ns : 0);
    store(&page->lead_up_longest_ns, window_ns != 0 ? longest_ns : 0);
    end(page);
}

void hw_heartbeat_lag(struct hw_heartbeat *page, const struct hw_loop_histogram *lag) {
    begin(page);
    store_histogram(&page->lag_buckets, &page->lag_total_ns, page->lag_counts, lag);
    end(page);
}

void hw_heartbeat_capture_signal(struct hw_heartbeat *page, uint64_t signo) {
    begin(page);
    store(&page->capture_signal, signo);
    end(page);
}

void hw_heartbeat_pid_namespace(struct hw_heartbeat *page, uint64_t inode) {
    begin(page);
    store(&page->pid_namespace, inode);
    end(page);
}

void hw_heartbeat_flags(struct hw_heartbeat *page, uint64_t flags) {
    begin(page);
    store(&page->flags, flags);
    end(page);
}

void hw_heartbeat_service_version(struct hw_heartbeat *page, const uint8_t *bytes, size_t count) {
    begin(page);
    for (size_t word = 0; word < 8; word++) {
        uint64_t value = 0;
        for (size_t byte = 0; byte < 8; byte++) {
            size_t index = word * 8 + byte;
            if (index < count) {
                value |= (uint64_t)bytes[index] << (8 * byte);
            }
        }
        store(&page->service_version[word], value);
    }
    end(page);
}
