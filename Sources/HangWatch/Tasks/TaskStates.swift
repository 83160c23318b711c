/// What a task's status word and dependency record say it is doing, on the verified layout: pure,
/// tested as a table.
///
/// | status | dependency | state |
/// |---|---|---|
/// | running | — | running (on the thread whose current task it is) |
/// | enqueued (+ has dependency) | on an executor | enqueued: on an actor, or waiting for a pool thread (identity 0) |
/// | has dependency | continuation, task, task group | suspended |
/// | — (run function an adapter) | — | not started: a timer (a sleep's wake task) or an executor holds it |
enum TaskState: String, Sendable, Equatable, CaseIterable {
    case running
    case enqueued
    case suspended
    case notStarted = "not started"

    init(_ task: TaskSnapshot, layout: TaskLayout) {
        if task.statusFlags & layout.statusRunning != 0 {
            self = .running
        } else if task.statusFlags & layout.statusEnqueued != 0 {
            self = .enqueued
        } else if task.statusFlags & layout.statusHasDependency != 0 || task.dependency != .none {
            self = .suspended
        } else {
            self = .notStarted
        }
    }

    /// What sets the task apart, in words: `child`, `group child`, `async let`, `cancelled`,
    /// `escalated` (its priority raised above the one it was made with).
    static func traits(_ task: TaskSnapshot, layout: TaskLayout) -> [String] {
        var traits: [String] = []
        if task.jobFlags & layout.flagAsyncLet != 0 {
            traits.append("async let")
        } else if task.jobFlags & layout.flagGroupChild != 0 {
            traits.append("group child")
        } else if task.jobFlags & layout.flagChild != 0 {
            traits.append("child")
        }
        if task.statusFlags & layout.statusCancelled != 0 { traits.append("cancelled") }
        if priority(task, layout: layout) > Int(task.basePriority) || task.statusFlags & layout.statusEscalated != 0 { traits.append("escalated") }
        return traits
    }

    /// Its priority now: the status's (the max priority, raised by escalation).
    static func priority(_ task: TaskSnapshot, layout: TaskLayout) -> Int {
        Int(task.statusFlags & layout.statusPriorityMask)
    }
}
