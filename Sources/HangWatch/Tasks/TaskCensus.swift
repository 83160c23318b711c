/// Everything a task dump read of the process, raw (`UnsafeTaskCensusTaker`), before it is turned
/// into the report's tasks (`TaskDumpBuilder`): pure values, so the building is tested on
/// scripted censuses.
struct TaskCensus: Sendable, Equatable {
    /// The layout the tasks were read with, or why none were.
    var layout: Result<TaskLayout, TaskLayoutProblem>
    var tasks: [TaskSnapshot] = []
    /// Candidates that were not live tasks, by reason.
    var rejected: [TaskRejection: Int] = [:]
    var candidates = 0
    var mappings = 0
    var bytes = 0
    var scanNanoseconds: UInt64 = 0
    var readNanoseconds: UInt64 = 0
    /// Why the scan or the reads stopped before the end.
    var stoppedEarly: String?
    /// Each thread's current task and executor (empty when the words are not learnt).
    var threads: [UnsafeTaskThreadWords.Look] = []
    /// The default actors tasks wait for, by address.
    var actors: [UInt: ActorSnapshot] = [:]
    /// Task.sleep: by sleeping task's address, its wake task and what is known of the time left.
    var sleeps: [UInt: Sleep] = [:]
    /// The label sets each task put in effect, by id (outermost first).
    var labels: [UInt64: [[String: String]]] = [:]
    var selfTest: TaskDumpSelfTest = .notRun("no probe")
    /// HangWatch's own probe task (not listed).
    var probe: UInt?

    struct Sleep: Sendable, Equatable {
        var wake: UInt
        /// Time left (negative: due, not yet run); nil when not known (`unknown` says why).
        var leftNanoseconds: Int64?
        var unknown: String?
    }
}

/// What the check of the layout on HangWatch's own probe task found (`UnsafeTaskDumpProbe`).
enum TaskDumpSelfTest: Sendable, Equatable {
    case passed
    /// The probe was read wrong: the layout is not to be trusted.
    case failed(String)
    /// No probe to check (it did not park in time): said, the tasks still listed.
    case notRun(String)

    /// The check of a probe known to be parked (`id`, at `address`) against what was read of it
    /// (nil: not found among the tasks).
    static func judge(probe address: UInt, id: UInt64, read: TaskSnapshot?, layout: TaskLayout) -> TaskDumpSelfTest {
        guard let read else { return .failed("HangWatch's probe task was not found among the tasks") }
        guard read.id == id else { return .failed("HangWatch's probe task read with id \(read.id), the runtime says \(id)") }
        if TaskState(read, layout: layout) == .running { return .notRun("HangWatch's probe task had not yet parked") }
        guard case .continuation = read.dependency else {
            return .failed("HangWatch's probe task waits on a continuation, but its dependency reads \(read.dependency)")
        }
        guard read.chainEnd == .complete, !read.chain.isEmpty else {
            return .failed("HangWatch's probe task's chain ended \(read.chainEnd.rawValue)")
        }
        return .passed
    }

    var text: String {
        switch self {
        case .passed: "passed"
        case .failed(let why): "failed: \(why)"
        case .notRun(let why): "not run: \(why)"
        }
    }
}
