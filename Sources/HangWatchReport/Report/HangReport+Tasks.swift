#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A task dump (`source` `tasks`, docs/report-format.md "Task dumps"): every live Swift task of the
/// process, as `hangwatch dump --tasks` asks a monitor for it. Addresses are hexadecimal strings;
/// chains are indices into the report's `frames`, innermost first (each an async caller: the exact
/// resume address of a partial function); times are milliseconds.
extension HangReport {
    public struct TaskDump: Codable, Sendable, Equatable {
        /// Why no task is listed, in one sentence (the runtime's layout is not one HangWatch was
        /// verified against, or there is no concurrency runtime); nil when the tasks are listed.
        public var unavailable: String?
        /// How the layout was checked on HangWatch's own probe task at this process's first task
        /// dump: `passed`, or `not run: …` (then holders of actors are not known either).
        public var selfTest: String?
        /// Every task found, by id.
        public var tasks: [TaskEntry]
        /// The tasks folded by state, what they await and their chain, largest first.
        public var folds: [TaskFold]
        /// The tasks that have children and no parent: where the tree of structured concurrency starts.
        public var roots: [UInt64]
        /// The default actors tasks wait for.
        public var actors: [TaskActor]
        /// What deserves a look first: wait cycles, held actors with waiters, continuations and their
        /// ages, tasks waiting for a starved pool.
        public var findings: [TaskFinding]
        public var scan: TaskScan
        /// The dump whose sightings ages are counted from (the earliest one kept); nil at the first.
        public var sightingsSince: Date?

        public init(
            unavailable: String? = nil, selfTest: String? = nil, tasks: [TaskEntry] = [], folds: [TaskFold] = [], roots: [UInt64] = [], actors: [TaskActor] = [],
            findings: [TaskFinding] = [], scan: TaskScan = TaskScan(), sightingsSince: Date? = nil
        ) {
            self.unavailable = unavailable
            self.selfTest = selfTest
            self.tasks = tasks
            self.folds = folds
            self.roots = roots
            self.actors = actors
            self.findings = findings
            self.scan = scan
            self.sightingsSince = sightingsSince
        }
    }

    /// What finding the tasks cost.
    public struct TaskScan: Codable, Sendable, Equatable {
        /// Mappings and bytes of the process's anonymous writable memory read.
        public var mappings: Int
        public var bytes: Int
        /// Words that held the task metadata, and those that were not live tasks, by reason.
        public var candidates: Int
        public var rejected: [String: Int]
        public var scanMs: Double
        public var readMs: Double
        /// The whole dump, threads included.
        public var tookMs: Double
        /// Why it stopped before the end (its time or size bound): the tasks are then "at least".
        public var stoppedEarly: String?

        public init(
            mappings: Int = 0, bytes: Int = 0, candidates: Int = 0, rejected: [String: Int] = [:], scanMs: Double = 0, readMs: Double = 0,
            tookMs: Double = 0, stoppedEarly: String? = nil
        ) {
            self.mappings = mappings
            self.bytes = bytes
            self.candidates = candidates
            self.rejected = rejected
            self.scanMs = scanMs
            self.readMs = readMs
            self.tookMs = tookMs
            self.stoppedEarly = stoppedEarly
        }
    }

    /// One live task.
    public struct TaskEntry: Codable, Sendable, Equatable {
        public var id: UInt64
        public var address: String
        /// `running`, `enqueued` (on an actor or the pool, waiting for a thread), `suspended`, or
        /// `not started` (held by a timer or an executor that has not run it).
        public var state: String
        /// The thread it runs on (running tasks, when the thread is known).
        public var thread: Int32?
        /// Its priority now (raised above `basePriority` when escalated) and at creation.
        public var priority: Int
        public var basePriority: Int
        /// `child`, `group child`, `async let`, `cancelled`, `escalated`.
        public var traits: [String]?
        public var parent: UInt64?
        /// The task group it is a child of (a group child).
        public var group: String?
        /// Its children (async let and group children), innermost record first.
        public var children: [UInt64]?
        /// Its async call chain, innermost first: indices into `frames`.
        public var chain: [Int]
        /// `complete` (to the task's entry), or where and why it stops (`async caller limit`,
        /// `async context unreadable`, `async context invalid`, `async resume address unproven`,
        /// `running: its chain is on its thread's stack`).
        public var chainEnd: String
        /// Where it resumes (a not-started task: its entry function): index into `frames`.
        public var entry: Int?
        public var awaits: TaskAwaits?
        /// HangWatch labels it put in effect (`HangMonitor.withLabels`), bounded as a report's.
        public var labels: [String: String]?
        /// How long it has been seen unchanged (same resume context, same wait) by this monitor's
        /// dumps: a lower bound on how long it has waited; nil when first seen now.
        public var unchangedMs: Double?
        /// Its status moved at every read: what is said of it may be a mix of two moments.
        public var changedWhileRead: Bool?

        public init(
            id: UInt64, address: String, state: String, priority: Int, basePriority: Int, chain: [Int] = [], chainEnd: String = "complete"
        ) {
            self.id = id
            self.address = address
            self.state = state
            self.priority = priority
            self.basePriority = basePriority
            self.chain = chain
            self.chainEnd = chainEnd
        }
    }

    /// What a task waits for.
    public struct TaskAwaits: Codable, Sendable, Equatable, Hashable {
        /// `continuation` (made in the chain's first function), `task`, `task group`, `actor`,
        /// `executor`, `pool thread`, `sleep` (Task.sleep), `sleep timer` (a sleep's wake task),
        /// `unknown`.
        public var kind: String
        public var task: UInt64?
        public var group: String?
        public var actor: String?
        public var executor: String?
        /// A sleep's time left.
        public var leftMs: Double?
        /// A sleep timer's sleeping task.
        public var sleeper: UInt64?
        /// Why something is not known (a sleep's time left, an actor's holder).
        public var note: String?

        public init(
            kind: String, task: UInt64? = nil, group: String? = nil, actor: String? = nil, executor: String? = nil, leftMs: Double? = nil,
            sleeper: UInt64? = nil, note: String? = nil
        ) {
            self.kind = kind
            self.task = task
            self.group = group
            self.actor = actor
            self.executor = executor
            self.leftMs = leftMs
            self.sleeper = sleeper
            self.note = note
        }
    }

    /// Tasks with the same state, the same kind of wait and the same chain.
    public struct TaskFold: Codable, Sendable, Equatable {
        public var count: Int
        public var state: String
        /// The kind of wait (`continuation`, `sleep`, …); an actor's address after `actor `.
        public var awaits: String?
        public var chain: [Int]
        public var chainEnd: String
        public var entry: Int?
        /// Every member's id, ascending.
        public var ids: [UInt64]
        /// The longest any member was seen unchanged.
        public var unchangedMs: Double?
        /// Sleeps: the least and the most time left.
        public var leftMs: [Double]?

        public init(count: Int, state: String, awaits: String?, chain: [Int], chainEnd: String, entry: Int?, ids: [UInt64]) {
            self.count = count
            self.state = state
            self.awaits = awaits
            self.chain = chain
            self.chainEnd = chainEnd
            self.entry = entry
            self.ids = ids
        }
    }

    /// A default actor tasks wait for.
    public struct TaskActor: Codable, Sendable, Equatable {
        public var address: String
        /// Index into `frames` of its class's metadata (a data address: its symbol names the type).
        public var type: Int?
        /// `idle`, `scheduled`, `running`, `zombie`.
        public var state: String
        public var priority: Int
        /// The task that holds it (runs on it) now, and that task's thread.
        public var holder: UInt64?
        public var holderThread: Int32?
        /// Why the holder is not known.
        public var holderUnknown: String?
        /// The tasks queued on it, first first.
        public var queue: [UInt64]
        /// Jobs queued that are not tasks.
        public var otherJobs: Int?
        /// Why the queue was not read to its end.
        public var queueEnd: String?

        public init(address: String, state: String, priority: Int, queue: [UInt64]) {
            self.address = address
            self.state = state
            self.priority = priority
            self.queue = queue
        }
    }

    /// One finding, said first.
    public struct TaskFinding: Codable, Sendable, Equatable {
        /// `cycle` (each step waits for the next, the last for the first: none can go on while it
        /// lasts), `actor held` (an actor with tasks queued, and who holds it), `continuations`
        /// (tasks waiting on continuations made in one place, with how long they were seen
        /// waiting), `pool starved` (tasks waiting for a pool thread while the pool's threads are
        /// blocked).
        public var kind: String
        /// A cycle's steps in order: each a task or an actor.
        public var steps: [Step]?
        public var actor: String?
        /// The tasks concerned (a held actor's holder first, then its queue; a fold's members).
        public var tasks: [UInt64]?
        public var count: Int?
        /// Index into `folds`.
        public var fold: Int?
        public var unchangedMs: Double?
        /// Threads concerned (a holder's; a starved pool's blocked threads).
        public var threads: [Int32]?

        public init(kind: String) {
            self.kind = kind
        }

        public struct Step: Codable, Sendable, Equatable {
            public var task: UInt64?
            public var actor: String?
            public init(task: UInt64? = nil, actor: String? = nil) {
                self.task = task
                self.actor = actor
            }
        }
    }
}
