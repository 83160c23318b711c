/*
 * Waking a resting pool watch: the Swift runtime's global-enqueue hooks.
 *
 * Not signal-handler code: these run inside swift_task_enqueueGlobal (and its delayed forms) on
 * whatever thread enqueues a job. They are C because the hooks use Swift's calling convention
 * (swiftcall), which Swift code cannot declare a function pointer with. Mechanism only: the pool
 * watch (HangWatch/Activity/Pool/PoolWatch.swift, through UnsafeRuntimeEnqueueHooks.swift) decides when to
 * arm and what a wake means.
 *
 * Hot path (every job enqueued, armed or not): one relaxed load of `armed`, then the call the
 * runtime would have made (the previous hook, or the runtime's own enqueue). A delayed enqueue
 * (Task.sleep) also records its due time under a mutex.
 */
#include "CHangWatchCapture.h"

#include <pthread.h>
#include <stddef.h>

typedef void (*hw_global_original)(void *job) __attribute__((swiftcall));
typedef void (*hw_global_hook)(void *job, hw_global_original original) __attribute__((swiftcall));
typedef void (*hw_delay_original)(unsigned long long delay, void *job) __attribute__((swiftcall));
typedef void (*hw_delay_hook)(unsigned long long delay, void *job, hw_delay_original original) __attribute__((swiftcall));
typedef void (*hw_deadline_original)(long long sec, long long nsec, long long tsec, long long tnsec, int clock,
                                     void *job) __attribute__((swiftcall));
typedef void (*hw_deadline_hook)(long long sec, long long nsec, long long tsec, long long tnsec, int clock, void *job,
                                 hw_deadline_original original) __attribute__((swiftcall));

/* The runtime's hook variables (libswift_Concurrency). Weak: a process without them has none. */
extern hw_global_hook swift_task_enqueueGlobal_hook __attribute__((weak));
extern hw_delay_hook swift_task_enqueueGlobalWithDelay_hook __attribute__((weak));
extern hw_deadline_hook swift_task_enqueueGlobalWithDeadline_hook __attribute__((weak));

/* Swift's clock ids (swift_clock_id) and the Linux clocks the runtime reads for them. */
enum { HW_SWIFT_CLOCK_CONTINUOUS = 1, HW_SWIFT_CLOCK_SUSPENDING = 2 };

static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static int installed;
static hw_global_hook previous_global;
static hw_delay_hook previous_delay;
static hw_deadline_hook previous_deadline;
static void (*wake_function)(void);

/* 1 while the watch rests: the first enqueue clears it and calls wake_function. */
static int armed;
/* CLOCK_MONOTONIC of the enqueue that woke the watch (0: none since arming). */
static uint64_t woken_at_ns;
/* Enqueues of the watch's own jobs (its probe) on this thread: not a wake. */
static __thread int own_enqueues;

/* Due times (CLOCK_MONOTONIC ns) of delayed jobs not yet due, unordered. When full, the latest
 * due time of those that did not fit is kept instead: until then the next one is unknown. */
#define HW_DELAYED_SLOTS 64
static pthread_mutex_t delayed_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t delayed[HW_DELAYED_SLOTS];
static int delayed_count;
static uint64_t delayed_unknown_until_ns;
static int delayed_unknown_clock;

static void note_enqueue(void) {
    if (!__atomic_load_n(&armed, __ATOMIC_RELAXED) || own_enqueues) {
        return;
    }
    if (__atomic_exchange_n(&armed, 0, __ATOMIC_ACQ_REL)) {
        __atomic_store_n(&woken_at_ns, hw_monotonic_ns(), __ATOMIC_RELEASE);
        void (*wake)(void) = __atomic_load_n(&wake_function, __ATOMIC_ACQUIRE);
        if (wake) {
            wake();
        }
    }
}

/* Forgets the due times not after `now_ns` (their jobs ran, or are running now and the looks see
 * them); the earliest one left (0: none). With delayed_lock held. */
static uint64_t forget_due(uint64_t now_ns) {
    uint64_t earliest = 0;
    int kept = 0;
    for (int i = 0; i < delayed_count; i++) {
        if (delayed[i] > now_ns) {
            delayed[kept++] = delayed[i];
            if (earliest == 0 || delayed[i] < earliest) {
                earliest = delayed[i];
            }
        }
    }
    delayed_count = kept;
    return earliest;
}

static void note_delayed(uint64_t due_ns) {
    pthread_mutex_lock(&delayed_lock);
    forget_due(hw_monotonic_ns());
    if (delayed_count < HW_DELAYED_SLOTS) {
        delayed[delayed_count++] = due_ns;
    } else if (due_ns > delayed_unknown_until_ns) {
        delayed_unknown_until_ns = due_ns;
    }
    pthread_mutex_unlock(&delayed_lock);
}

static void hook_global(void *job, hw_global_original original) __attribute__((swiftcall)) {
    note_enqueue();
    hw_global_hook previous = __atomic_load_n(&previous_global, __ATOMIC_ACQUIRE);
    if (previous) {
        previous(job, original);
    } else {
        original(job);
    }
}

static void hook_delay(unsigned long long delay, void *job, hw_delay_original original) __attribute__((swiftcall)) {
    note_delayed(hw_monotonic_ns() + (uint64_t)delay);
    note_enqueue();
    hw_delay_hook previous = __atomic_load_n(&previous_delay, __ATOMIC_ACQUIRE);
    if (previous) {
        previous(delay, job, original);
    } else {
        original(delay, job);
    }
}

static void hook_deadline(long long sec, long long nsec, long long tsec, long long tnsec, int clock, void *job,
                          hw_deadline_original original) __attribute__((swiftcall)) {
    clockid_t id = clock == HW_SWIFT_CLOCK_CONTINUOUS ? CLOCK_BOOTTIME : CLOCK_MONOTONIC;
    struct timespec now;
    if ((clock == HW_SWIFT_CLOCK_CONTINUOUS || clock == HW_SWIFT_CLOCK_SUSPENDING) && clock_gettime(id, &now) == 0) {
        long long deadline = sec * 1000000000LL + nsec;
        long long current = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
        uint64_t in_ns = deadline > current ? (uint64_t)(deadline - current) : 0;
        note_delayed(hw_monotonic_ns() + in_ns);
    } else {
        __atomic_store_n(&delayed_unknown_clock, 1, __ATOMIC_RELAXED);
    }
    note_enqueue();
    hw_deadline_hook previous = __atomic_load_n(&previous_deadline, __ATOMIC_ACQUIRE);
    if (previous) {
        previous(sec, nsec, tsec, tnsec, clock, job, original);
    } else {
        original(sec, nsec, tsec, tnsec, clock, job);
    }
}

int hw_pool_hooks_install(void (*wake)(void)) {
    if (&swift_task_enqueueGlobal_hook == NULL || &swift_task_enqueueGlobalWithDelay_hook == NULL ||
        &swift_task_enqueueGlobalWithDeadline_hook == NULL) {
        return -1;
    }
    pthread_mutex_lock(&install_lock);
    __atomic_store_n(&wake_function, wake, __ATOMIC_RELEASE);
    if (!installed) {
        /* Whoever set a hook before us keeps getting every job, through ours. */
        __atomic_store_n(&previous_global, swift_task_enqueueGlobal_hook, __ATOMIC_RELEASE);
        __atomic_store_n(&previous_delay, swift_task_enqueueGlobalWithDelay_hook, __ATOMIC_RELEASE);
        __atomic_store_n(&previous_deadline, swift_task_enqueueGlobalWithDeadline_hook, __ATOMIC_RELEASE);
        __atomic_store_n(&swift_task_enqueueGlobal_hook, hook_global, __ATOMIC_RELEASE);
        __atomic_store_n(&swift_task_enqueueGlobalWithDelay_hook, hook_delay, __ATOMIC_RELEASE);
        __atomic_store_n(&swift_task_enqueueGlobalWithDeadline_hook, hook_deadline, __ATOMIC_RELEASE);
        installed = 1;
    }
    pthread_mutex_unlock(&install_lock);
    return 0;
}

int hw_pool_hooks_current(void) {
    if (!__atomic_load_n(&installed, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    return __atomic_load_n(&swift_task_enqueueGlobal_hook, __ATOMIC_ACQUIRE) == hook_global &&
           __atomic_load_n(&swift_task_enqueueGlobalWithDelay_hook, __ATOMIC_ACQUIRE) == hook_delay &&
           __atomic_load_n(&swift_task_enqueueGlobalWithDeadline_hook, __ATOMIC_ACQUIRE) == hook_deadline;
}

void hw_pool_arm(void) {
    __atomic_store_n(&woken_at_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&armed, 1, __ATOMIC_SEQ_CST);
}

uint64_t hw_pool_disarm(void) {
    __atomic_store_n(&armed, 0, __ATOMIC_SEQ_CST);
    return __atomic_load_n(&woken_at_ns, __ATOMIC_ACQUIRE);
}

void hw_pool_own_enqueues(int own) {
    own_enqueues = own;
}

int64_t hw_pool_next_delayed(uint64_t now_ns) {
    if (__atomic_load_n(&delayed_unknown_clock, __ATOMIC_RELAXED)) {
        return -1;
    }
    pthread_mutex_lock(&delayed_lock);
    int64_t next = 0;
    if (delayed_unknown_until_ns > now_ns) {
        next = -1;
    } else {
        next = (int64_t)forget_due(now_ns);
    }
    pthread_mutex_unlock(&delayed_lock);
    return next;
}
