/*
 * hw_tasks.h: what the task dump (`hangwatch dump --tasks`) asks of the Swift concurrency
 * runtime by name (hw_tasks.c; Bridge/UnsafeTaskRuntime). Not signal-handler code.
 * Part of CHangWatchCapture (its umbrella header includes it); prefixed `hw_`.
 */
#ifndef HW_TASKS_H
#define HW_TASKS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The runtime's words for debuggers (`_swift_concurrency_debug_*`), reached by weak link-time
 * references: found with a static Swift runtime too, where dlsym finds none of them.
 */
typedef struct hw_task_runtime {
    uintptr_t task_metadata;              /* the metadata every AsyncTask starts with; 0: no runtime */
    uintptr_t non_future_adapter;         /* a task's run function before its first run */
    uintptr_t future_adapter;
    uintptr_t task_wait_throwing_resume_adapter;
    uintptr_t task_future_wait_resume_adapter;
    int64_t layout_version;               /* _swift_concurrency_debug_internal_layout_version; -1: absent */
    int64_t task_size;                    /* _swift_concurrency_debug_asyncTaskSize; -1: absent */
    int64_t supports_escalation;          /* _swift_concurrency_debug_supportsPriorityEscalation; -1: absent */
} hw_task_runtime;

/** Fills `out` (every field, absent ones as said). */
void hw_task_runtime_read(hw_task_runtime *out);

/** The calling thread's current task (swift_task_getCurrent), or NULL (none, or no runtime). */
void *hw_task_current(void);
/** The runtime's id of `task` (swift_task_getJobTaskId); 0 without a runtime. */
uint64_t hw_task_id(void *task);
/** An address inside the runtime's code (swift_task_getCurrent's), 0 without a runtime: which
 * image's thread-local block holds the runtime's words. */
uintptr_t hw_task_runtime_code(void);

#ifdef __cplusplus
}
#endif

#endif /* HW_TASKS_H */
