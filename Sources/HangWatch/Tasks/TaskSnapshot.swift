/// One live Swift task as the dump read it from its memory (`UnsafeTaskReader`): a pure value,
/// every address raw. The dump's decisions (states, folding, the tree, the wait graph, findings)
/// are made from these alone.
struct TaskSnapshot: Sendable, Equatable {
    /// What a suspended or enqueued task waits for, as its dependency record says.
    enum Dependency: Sendable, Equatable, Hashable {
        /// No dependency record (running, or not started).
        case none
        /// WaitingOnTask: an `async let` child, or a task's `value`.
        case task(UInt)
        /// WaitingOnContinuation: the continuation's context.
        case continuation(UInt)
        /// WaitingOnTaskGroup: the `TaskGroup` object.
        case group(UInt)
        /// EnqueuedOnExecutor: identity 0 is the global pool; an identity with implementation 0 a
        /// default actor.
        case executor(identity: UInt, implementation: UInt)
        /// A kind this table does not know.
        case unknown(UInt)
    }

    /// How the async call chain (from the resume context, each caller's resume function) ended.
    enum ChainEnd: String, Sendable, Equatable {
        case complete
        case limit = "async caller limit"
        case unreadable = "async context unreadable"
        case invalid = "async context invalid"
        case unproven = "async resume address unproven"
        /// A running task's contexts are being rewritten: its chain is on its thread's stack.
        case running = "running: its chain is on its thread's stack"
    }

    var address: UInt
    var id: UInt64
    var jobFlags: UInt32
    var statusFlags: UInt32
    var basePriority: UInt8
    /// Where it resumes, as the runtime names it for logging (an adapter resolved to the function
    /// behind it).
    var resumeFunction: UInt
    var resumeContext: UInt
    /// Each caller's resume address, innermost first.
    var chain: [UInt]
    var chainEnd: ChainEnd
    var dependency: Dependency
    /// The dependency record's address (with the resume context, what "unchanged" compares).
    var dependencyRecord: UInt
    /// Children listed by its child and group records, innermost record first.
    var children: [UInt]
    /// Task groups it owns (the `TaskGroup` objects of its group records).
    var groups: [UInt]
    /// Its parent task, when it is a child task.
    var parent: UInt?
    /// The group it is a child of.
    var group: UInt?
    /// Not started: its run function is still the future or non-future adapter.
    var notStarted: Bool
    /// Its status or resume context differed at each of its reads.
    var changedWhileRead: Bool

    init(
        address: UInt, id: UInt64, jobFlags: UInt32 = 0, statusFlags: UInt32 = 0, basePriority: UInt8 = 0, resumeFunction: UInt = 0,
        resumeContext: UInt = 0, chain: [UInt] = [], chainEnd: ChainEnd = .complete, dependency: Dependency = .none, dependencyRecord: UInt = 0,
        children: [UInt] = [], groups: [UInt] = [], parent: UInt? = nil, group: UInt? = nil, notStarted: Bool = false, changedWhileRead: Bool = false
    ) {
        self.address = address
        self.id = id
        self.jobFlags = jobFlags
        self.statusFlags = statusFlags
        self.basePriority = basePriority
        self.resumeFunction = resumeFunction
        self.resumeContext = resumeContext
        self.chain = chain
        self.chainEnd = chainEnd
        self.dependency = dependency
        self.dependencyRecord = dependencyRecord
        self.children = children
        self.groups = groups
        self.parent = parent
        self.group = group
        self.notStarted = notStarted
        self.changedWhileRead = changedWhileRead
    }
}

/// One default actor a task waits for, as read from its memory (`UnsafeActorReader`).
struct ActorSnapshot: Sendable, Equatable {
    var address: UInt
    /// Its class's metadata (the type's name comes from symbolicating it).
    var metadata: UInt
    /// State bits 0-2: 0 idle, 1 scheduled, 2 running, 3-4 zombie; max priority 8-15.
    var flags: UInt32
    /// The jobs in its queue, first first.
    var queue: [UInt]
    /// Why the queue is incomplete (unreadable, limit); nil when read to its end.
    var queueEnd: String?

    var state: String {
        switch flags & 7 {
        case 0: "idle"
        case 1: "scheduled"
        case 2: "running"
        default: "zombie"
        }
    }

    var maxPriority: UInt8 { UInt8(truncatingIfNeeded: flags >> 8) }
}
