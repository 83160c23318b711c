/*
 * hw_wakes.h: what wakes the watchdog (its semaphore, dump requests, the
 * runtime's enqueue hooks) and the calling thread's CPU affinity (Bridge/UnsafeWake,
 * UnsafeDumpRequests, UnsafePoolHooks, UnsafeAffinity).
 * Part of CHangWatchCapture (its umbrella header includes it); prefixed `hw_`.
 */
#ifndef HW_WAKES_H
#define HW_WAKES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

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

#endif /* HW_WAKES_H */
