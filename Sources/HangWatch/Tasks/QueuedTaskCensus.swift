import HangWatchReport

/// The census a hang report's `queuedTasks` comes from: every task of the process, read once on
/// the watchdog's thread when a starved pool or a hung main queue was detected, and what reading
/// it cost. Only the tasks that count as queued on `queue` are kept (`QueuedTaskSelection`): the
/// recording holds them while the hang lasts.
struct QueuedTaskCensus: Sendable {
    /// Where the tasks that count wait.
    enum Queue: Sendable, Equatable {
        /// The cooperative pool (a `concurrency-pool` report).
        case pool
        /// The main actor (a `dispatch-main` report).
        case mainActor
    }

    var queue: Queue
    var census: TaskCensus
    var tookMicroseconds: UInt64

    init(queue: Queue, census: TaskCensus, tookMicroseconds: UInt64) {
        self.queue = queue
        self.census = QueuedTaskSelection.select(census, queue: queue)
        self.tookMicroseconds = tookMicroseconds
    }
}

/// Which tasks of a census were waiting to run on a queue, and their summary for a report: the
/// count, and the largest folds (`TaskFolding`, by entry too: where each will run) with their ids
/// bounded. Pure.
enum QueuedTaskSelection {
    /// Whether `task` (in the census's layout) waits to run on `queue`: enqueued on the pool
    /// (dependency: the global executor, identity 0) or on a serial executor that is not a default
    /// actor (the main actor's is the main queue), or not started yet (its first job is queued: a
    /// new task's dependency record says nothing of where) and not a sleep's wake task.
    static func isQueued(_ task: TaskSnapshot, on queue: QueuedTaskCensus.Queue, layout: TaskLayout, wakeTasks: Set<UInt>) -> Bool {
        switch (TaskState(task, layout: layout), task.dependency, queue) {
        case (.enqueued, .executor(0, _), .pool): return true
        case (.enqueued, .executor(let identity, let implementation), .mainActor): return identity != 0 && implementation != 0
        case (.notStarted, .none, _): return !wakeTasks.contains(task.address)
        default: return false
        }
    }

    /// The census with only the tasks waiting to run on `queue` (the rest would only be the
    /// report's noise).
    static func select(_ census: TaskCensus, queue: QueuedTaskCensus.Queue) -> TaskCensus {
        guard case .success(let layout) = census.layout else { return census }
        var selected = census
        let wakes = Set(census.sleeps.values.map(\.wake))
        selected.tasks = census.tasks.filter { $0.address != census.probe && isQueued($0, on: queue, layout: layout, wakeTasks: wakes) }
        selected.sleeps = [:]
        selected.actors = [:]
        return selected
    }

    /// The report's summary of the tasks `dump` lists (built from a selected census).
    static func summary(_ dump: HangReport.TaskDump, tookMicroseconds: UInt64) -> HangReport.QueuedTasks {
        var summary = HangReport.QueuedTasks(
            unavailable: dump.unavailable, count: dump.tasks.count, stoppedEarly: dump.scan.stoppedEarly,
            tookMs: ReportBuilder.round(Double(tookMicroseconds) / 1000))
        guard dump.unavailable == nil else { return summary }
        let folds = TaskFolding.fold(dump.tasks, byEntry: true)
        summary.folds = folds.prefix(HangReport.QueuedTasks.maxFolds).map { fold in
            var kept = fold
            kept.ids = Array(fold.ids.prefix(HangReport.QueuedTasks.maxIDsPerFold))
            return kept
        }
        let omitted = folds.dropFirst(HangReport.QueuedTasks.maxFolds).reduce(0) { $0 + $1.count }
        summary.foldsOmitted = omitted > 0 ? omitted : nil
        return summary
    }
}

extension ReportBuilder {
    /// The report's `queuedTasks` from `queued`, its chains joining `table`'s frames.
    func queuedTasks(_ queued: QueuedTaskCensus, table: inout ReportStackTable) -> HangReport.QueuedTasks {
        var builder = TaskDumpBuilder(frames: table)
        let dump = builder.build(queued.census, unchanged: [:], sightingsSince: nil, blockedPoolThreads: [])
        table = builder.frames
        return QueuedTaskSelection.summary(dump, tookMicroseconds: queued.tookMicroseconds)
    }
}
