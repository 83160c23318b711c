import CHangWatchCapture

/// The Swift concurrency runtime's words and entry points the task dump reads (`hw_tasks.c`):
/// reached by weak link-time references, so a service linked with the static Swift runtime (which
/// exports nothing to `dlsym`) has them too. Unsafe: it hands out raw addresses of the runtime.
enum UnsafeTaskRuntime {
    /// What the runtime says about itself for debuggers (`_swift_concurrency_debug_*`).
    struct Words: Sendable, Equatable {
        /// The metadata word every task starts with (0: no concurrency runtime in the process).
        var taskMetadata: UInt
        var nonFutureAdapter: UInt
        var futureAdapter: UInt
        var taskWaitThrowingResumeAdapter: UInt
        var taskFutureWaitResumeAdapter: UInt
        /// Nil when the runtime does not export the word.
        var layoutVersion: UInt32?
        var taskSize: UInt?
        var supportsEscalation: Bool?
    }

    /// This process's runtime's words.
    static func words() -> Words {
        var runtime = hw_task_runtime()
        hw_task_runtime_read(&runtime)
        return Words(
            taskMetadata: UInt(runtime.task_metadata), nonFutureAdapter: UInt(runtime.non_future_adapter),
            futureAdapter: UInt(runtime.future_adapter), taskWaitThrowingResumeAdapter: UInt(runtime.task_wait_throwing_resume_adapter),
            taskFutureWaitResumeAdapter: UInt(runtime.task_future_wait_resume_adapter),
            layoutVersion: runtime.layout_version < 0 ? nil : UInt32(truncatingIfNeeded: runtime.layout_version),
            taskSize: runtime.task_size < 0 ? nil : UInt(runtime.task_size),
            supportsEscalation: runtime.supports_escalation < 0 ? nil : runtime.supports_escalation != 0)
    }

    /// The calling thread's current task's address and the runtime's id of it; nil outside a task.
    static func currentTask() -> (address: UInt, id: UInt64)? {
        guard let task = hw_task_current() else { return nil }
        let id = hw_task_id(task)
        return id == 0 ? nil : (UInt(bitPattern: task), id)
    }

    /// The runtime's id of the task at `address` (it reads the task's header: call it only for a
    /// task that is alive, such as the calling thread's current one).
    static func id(ofLiveTask address: UInt) -> UInt64 {
        UnsafeMutableRawPointer(bitPattern: address).map { hw_task_id($0) } ?? 0
    }

    /// An address in the runtime's code (0: no runtime).
    static var runtimeCode: UInt { UInt(hw_task_runtime_code()) }
}
