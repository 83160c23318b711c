extension HangReport {
    /// One thread of a report that holds several (`threads`): who it is, what the scheduler said
    /// it was doing, its stack, and what that makes of it.
    public struct ThreadSnapshot: Codable, Sendable, Equatable {
        public var tid: Int32
        /// The thread's name (`/proc/<pid>/task/<tid>/comm`), e.g. `oot.default-qos`.
        public var name: String?
        /// Scheduler state letter when it was captured (`R`, `S`, `D`, ...).
        public var state: String?
        /// The system call it was blocked in, if any.
        public var syscall: String?
        /// Index into `stacks`; nil when no stack could be taken (see `error`).
        public var stack: Int?
        /// `computing` (on a CPU), `blocked` (in a system call or waiting, outside the pool's own
        /// wait for work), `idle` (a pool thread waiting for work: every frame is the thread
        /// library's or libdispatch's), `unknown`.
        public var verdict: String
        /// How the stack was taken (`signal`, `syscall`), as in `samples[].method`.
        public var method: String?
        /// Why there is no stack (`thread not attached`, `thread exited`, ...).
        public var error: String?
        /// When it was captured, milliseconds since `startedAt`.
        public var offsetMs: Double?
        /// What it waited for and who held it (schema 1.5), when it was blocked on an object the
        /// monitor can name: a starved pool's wait-for graph, thread by thread.
        public var waitsFor: WaitsFor?
        /// In a thread dump: how long it had been off its CPU (asleep or waiting), milliseconds.
        public var offCPUMs: Double?

        public init(
            tid: Int32, name: String?, state: String?, syscall: String?, stack: Int?, verdict: String, method: String? = nil,
            error: String? = nil, offsetMs: Double? = nil
        ) {
            self.tid = tid
            self.name = name
            self.state = state
            self.syscall = syscall
            self.stack = stack
            self.verdict = verdict
            self.method = method
            self.error = error
            self.offsetMs = offsetMs
        }
    }

    /// The verdicts `ThreadSnapshot.verdict` takes.
    public enum ThreadVerdict: String, Sendable, CaseIterable {
        case computing, blocked, idle, unknown
    }
}
