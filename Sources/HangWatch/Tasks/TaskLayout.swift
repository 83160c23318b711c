/// Where a Swift runtime keeps what the task dump reads, for each runtime the offsets were verified
/// against: the task header, its status and status records, its async contexts, child fragments,
/// default actors, and a job's link in an actor's queue. Every offset of `swift631` was checked on
/// Swift 6.3.1 (x86_64 Linux) against the runtime's code and, where it reads the same field,
/// against the runtime's own reflection library reading live tasks (`TaskOracleTests`). All of it is
/// private runtime ABI: a runtime whose words (`UnsafeTaskRuntime.Words`) are not in `verified` is
/// not read at all (`recognise`), and its dump says so once instead of listing anything.
struct TaskLayout: Sendable, Equatable {
    // Job header (swift::Job).
    /// SchedulerPrivate[0]: the next job in an actor's queue (its low 2 bits are flags).
    var jobNext = 0x10
    /// JobFlags (u32): kind bits 0-7 (a task: 0), priority 8-15, isChildTask 24, isFuture 25,
    /// isGroupChildTask 26, isAsyncLetTask 28.
    var jobFlags = 0x20
    var idLow = 0x24
    /// The run function: where the task resumes (an adapter before its first run).
    var runJob = 0x38
    // AsyncTask.
    /// The async context the task resumes with.
    var resumeContext = 0x40
    /// ActiveTaskStatus: flags (u32), then the innermost status record.
    var status = 0x60
    var statusRecord = 0x68
    var idHigh = 0x90
    var basePriority = 0x98
    /// sizeof(AsyncTask): the child fragment {parent, nextChild} follows, then the group child
    /// fragment {group}.
    var taskSize = 0xd0
    var childFragmentSize = 0x10

    // ActiveTaskStatus flags.
    var statusPriorityMask: UInt32 = 0xff
    var statusCancelled: UInt32 = 0x100
    var statusEscalated: UInt32 = 0x400
    var statusRunning: UInt32 = 0x800
    var statusEnqueued: UInt32 = 0x1000
    var statusComplete: UInt32 = 0x2000
    var statusHasDependency: UInt32 = 0x4000

    // JobFlags bits.
    var flagChild: UInt32 = 1 << 24
    var flagFuture: UInt32 = 1 << 25
    var flagGroupChild: UInt32 = 1 << 26
    var flagAsyncLet: UInt32 = 1 << 28

    // Status records: {flags (kind in the low byte), parent, ...}, innermost first.
    var recordKindDependency: UInt8 = 0
    var recordKindChildTask: UInt8 = 1
    var recordKindTaskGroup: UInt8 = 2
    /// TaskDependencyStatusRecord: {flags, parent, dependentOn[2], kind, waitingTask}.
    var dependencyOn = 0x10
    var dependencyKind = 0x20
    var dependencyWaiter = 0x28
    /// ChildTaskStatusRecord, TaskGroupTaskStatusRecord: {flags, parent, firstChild, ...}.
    var recordFirstChild = 0x10
    /// A TaskGroup object begins this far before its status record (its vtable pointer).
    var groupRecordOffset = 0x8

    // DefaultActorImpl: status flags (u32: state bits 0-2, max priority 8-15), then the first job.
    var actorFlags = 0x20
    var actorFirstJob = 0x28

    /// A not-yet-started task's entry function lies this far before its first context (the
    /// future/non-future adapters' context prefix).
    var entryBeforeFirstContext = 0x18
    /// The runtime's thread-local words: the active executor's tracking record is this far after
    /// the current-task word (proven again in every process by HangWatch's probe actor).
    var executorWordAfterTaskWord = 8

    static let swift631 = TaskLayout()

    /// The runtimes the table was verified against: their words, the table, where.
    static let verified: [(layoutVersion: UInt32, taskSize: UInt, supportsEscalation: Bool, layout: TaskLayout, runtime: String)] = [
        (1, 208, false, .swift631, "Swift 6.3.1 on Linux x86_64")
    ]

    /// The Swift the library was built with, for the sentence that names an unrecognised runtime.
    static let builtWithSwift: String = {
        #if compiler(>=6.5)
            return "6.5 or later"
        #elseif compiler(>=6.4)
            return "6.4"
        #elseif compiler(>=6.3)
            return "6.3"
        #else
            return "6.2 or earlier"
        #endif
    }()

    /// The table for a runtime with these words, or the one sentence that says why no task is
    /// listed (never a guess).
    static func recognise(_ words: UnsafeTaskRuntime.Words) -> Result<TaskLayout, TaskLayoutProblem> {
        guard words.taskMetadata != 0 else { return .failure(TaskLayoutProblem(reason: "no Swift concurrency runtime in the process: no tasks listed")) }
        #if arch(x86_64)
            let architecture = true
        #else
            let architecture = false
        #endif
        if architecture, let match = verified.first(where: {
            $0.layoutVersion == words.layoutVersion && $0.taskSize == words.taskSize && $0.supportsEscalation == words.supportsEscalation
        }) {
            return .success(match.layout)
        }
        let said = [
            words.layoutVersion.map { "concurrency layout version \($0)" } ?? "no layout version",
            words.taskSize.map { "task size \($0) bytes" } ?? "no task size",
            words.supportsEscalation.map { $0 ? "priority escalation" : "no priority escalation" } ?? "escalation unsaid",
        ].joined(separator: ", ")
        let known = verified.map { "\($0.runtime): layout \($0.layoutVersion), \($0.taskSize) bytes" }.joined(separator: "; ")
        return .failure(
            TaskLayoutProblem(
                reason: "task layout not recognised for Swift \(builtWithSwift) (the runtime says \(said); verified: \(known)): no tasks listed"))
    }
}

/// Why a dump lists no task: the runtime's layout is not one the dump was verified against, or
/// there is no concurrency runtime.
struct TaskLayoutProblem: Error, Equatable, Sendable {
    var reason: String
}
