/*
 * CHangWatchCapture: the async-signal-safe half of HangWatch's stack capture (and, apart from
 * it, the Swift runtime's enqueue hooks that wake a resting pool watch: hw_pool_wake.c; and the
 * SIGCONT stamp that tells a stop by a signal from a freeze: hw_continue.c).
 *
 * Mechanism only. Swift (the files of HangWatch/Bridge/) owns every policy decision:
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

#include "hw_capture.h"
#include "hw_continue.h"
#include "hw_heartbeat.h"
#include "hw_wakes.h"

#ifdef __cplusplus
}
#endif

#endif /* CHANGWATCHCAPTURE_H */
