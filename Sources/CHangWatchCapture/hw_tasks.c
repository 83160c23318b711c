/*
 * hw_tasks.c: the Swift concurrency runtime's words and entry points the task dump needs, by
 * weak link-time reference.
 *
 * Not signal-handler code: called on the watchdog's thread (the task dump) and in HangWatch's own
 * probe task. Why C: a Swift executable linked with the static Swift runtime exports none of the
 * runtime's symbols, so dlsym(RTLD_DEFAULT, ...) finds neither the `_swift_concurrency_debug_*`
 * words nor swift_task_getCurrent there; a weak reference resolved by the linker finds them in
 * both kinds of build, and is 0 in a process without the runtime.
 *
 * Async-signal-safety checklist (none of this runs in a handler, but it is kept to the same
 * rules): no allocation, no locks, no stdio; loads of the runtime's constant words; calls into two
 * runtime entry points that only read the calling thread's thread-local storage and a task's
 * header.
 */
#include <stddef.h>

#include "CHangWatchCapture.h"

extern void *_swift_concurrency_debug_asyncTaskMetadata __attribute__((weak));
extern void *_swift_concurrency_debug_non_future_adapter __attribute__((weak));
extern void *_swift_concurrency_debug_future_adapter __attribute__((weak));
extern void *_swift_concurrency_debug_task_wait_throwing_resume_adapter __attribute__((weak));
extern void *_swift_concurrency_debug_task_future_wait_resume_adapter __attribute__((weak));
extern const uint32_t _swift_concurrency_debug_internal_layout_version __attribute__((weak));
extern const uint64_t _swift_concurrency_debug_asyncTaskSize __attribute__((weak));
extern const uint8_t _swift_concurrency_debug_supportsPriorityEscalation __attribute__((weak));

/* swiftcall with no arguments and a pointer or integer result is the C convention on x86_64 and
 * aarch64 (the monitor's callers already call these two through C function pointers). */
extern void *swift_task_getCurrent(void) __attribute__((weak));
extern uint64_t swift_task_getJobTaskId(void *job) __attribute__((weak));

#define HW_WORD(symbol) (&(symbol) != NULL ? (uintptr_t)(symbol) : 0)

void hw_task_runtime_read(hw_task_runtime *out) {
    out->task_metadata = HW_WORD(_swift_concurrency_debug_asyncTaskMetadata);
    out->non_future_adapter = HW_WORD(_swift_concurrency_debug_non_future_adapter);
    out->future_adapter = HW_WORD(_swift_concurrency_debug_future_adapter);
    out->task_wait_throwing_resume_adapter = HW_WORD(_swift_concurrency_debug_task_wait_throwing_resume_adapter);
    out->task_future_wait_resume_adapter = HW_WORD(_swift_concurrency_debug_task_future_wait_resume_adapter);
    out->layout_version = &_swift_concurrency_debug_internal_layout_version != NULL ? (int64_t)_swift_concurrency_debug_internal_layout_version : -1;
    out->task_size = &_swift_concurrency_debug_asyncTaskSize != NULL ? (int64_t)_swift_concurrency_debug_asyncTaskSize : -1;
    out->supports_escalation =
        &_swift_concurrency_debug_supportsPriorityEscalation != NULL ? (int64_t)_swift_concurrency_debug_supportsPriorityEscalation : -1;
}

void *hw_task_current(void) {
    return swift_task_getCurrent != NULL ? swift_task_getCurrent() : NULL;
}

uint64_t hw_task_id(void *task) {
    return swift_task_getJobTaskId != NULL && task != NULL ? swift_task_getJobTaskId(task) : 0;
}

uintptr_t hw_task_runtime_code(void) {
    return (uintptr_t)swift_task_getCurrent;
}
