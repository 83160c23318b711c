import HangWatchReport

/// The tasks a hang's samples found running on the thread that drains a queue: its current-task
/// word (`ActivitySource.taskWord(of:)`) read before and after each sample. Bounded: a set of the
/// ids seen, which grows only with the samples taken.
struct SampledTasks: Sendable, Equatable {
    /// Reads made, and those that found no task running (or could not read the word).
    var reads = 0
    var empty = 0
    var distinct: Set<UInt64> = []
    /// The first and the last read that found a task (`CLOCK_MONOTONIC` µs, the sample's time).
    var firstMicroseconds: UInt64?
    var lastMicroseconds: UInt64?

    mutating func note(_ task: UInt64?, at microseconds: UInt64) {
        reads += 1
        guard let task, task != 0 else {
            empty += 1
            return
        }
        distinct.insert(task)
        if firstMicroseconds == nil { firstMicroseconds = microseconds }
        lastMicroseconds = microseconds
    }

    /// What the reads found: the rule a run loop's kind and the main queue's share (each says it
    /// in its own words: `RunLoopHangKind.fromTasks`, `QueueHangKind`). Nil when none found a task.
    enum Finding: Equatable {
        /// Two tasks or more: at least that many jobs.
        case several(count: Int)
        /// The same task at every read, the first and the last `span` µs apart; `pastThreshold`:
        /// four reads or more, a threshold apart or more (one job past the threshold).
        case same(task: UInt64, span: UInt64, pastThreshold: Bool)
        /// One task, at `found` of the reads; the others found none.
        case partly(task: UInt64, found: Int)
    }

    func finding(thresholdMicroseconds: UInt64) -> Finding? {
        guard let task = distinct.first, let from = firstMicroseconds, let to = lastMicroseconds else { return nil }
        if distinct.count >= 2 { return .several(count: distinct.count) }
        guard empty == 0 else { return .partly(task: task, found: reads - empty) }
        return .same(task: task, span: to &- from, pastThreshold: reads >= 4 && to &- from >= thresholdMicroseconds)
    }

    /// `the same task (id 7) at every read, 250 ms apart`.
    static func sameTask(_ task: UInt64, span: UInt64) -> String {
        "the same task (id \(task)) at every read, \(RunLoopHangKind.format(ReportBuilder.milliseconds(Int64(span)))) ms apart"
    }

    /// These reads and `other`'s, as one set of reads.
    func adding(_ other: SampledTasks) -> SampledTasks {
        var sum = SampledTasks(reads: reads + other.reads, empty: empty + other.empty, distinct: distinct.union(other.distinct))
        sum.firstMicroseconds = [firstMicroseconds, other.firstMicroseconds].compactMap { $0 }.min()
        sum.lastMicroseconds = [lastMicroseconds, other.lastMicroseconds].compactMap { $0 }.max()
        return sum
    }
}

/// The kind of a main-queue hang, from the tasks its samples found running. The queue's pings say
/// only that the queue did not reach them; the samples of the thread draining it say which task
/// ran then (`SampledTasks`).
///
/// A task's id is never reused, and between the ping's enqueueing and its run a task runs at most
/// one job enqueued before the ping: the next one it enqueues waits behind the ping, whose answer
/// ends the hang. Every sample comes after the ping was enqueued, and so do the reads the
/// source's looks made while it was out (`ActivitySource.tasksAtLooks`: they date the job from
/// before the threshold), so reads that found the same task found the same job.
///
/// - Every read (of two samples or more) found one and the same task, the first and the last at
///   least a threshold apart: one job held the queue past the threshold, `oneJob`.
/// - Two or more tasks: at least that many jobs ran while the queue was held, so one job did not
///   hold it all. Whether each was shorter than the threshold (`backlog`) the reads cannot prove:
///   the job running at detection may have begun a threshold earlier, unseen. `unknown`, with the
///   count.
/// - Otherwise `unknown`, saying what the reads saw; nil when none found a task (dispatch blocks
///   carry no identity a read can see, or the word is not known): no `kind`.
enum QueueHangKind {
    static func decide(_ tasks: SampledTasks?, samples: Int, thresholdMicroseconds: UInt64) -> HangReport.Kind? {
        guard let tasks, let finding = tasks.finding(thresholdMicroseconds: thresholdMicroseconds) else { return nil }
        switch finding {
        case .several(let count):
            return HangReport.Kind(
                name: .unknown,
                reason: "\(count) tasks ran at \(samples) samples (\(tasks.reads) reads): at least \(count) jobs held the queue; whether each was shorter than the threshold the samples cannot tell")
        case .same(let task, let span, true):
            return HangReport.Kind(name: .oneJob, reason: "\(SampledTasks.sameTask(task, span: span)): one job past the threshold")
        case .same(let task, let span, false):
            return HangReport.Kind(name: .unknown, reason: "\(SampledTasks.sameTask(task, span: span)): not proven past the threshold by itself")
        case .partly(let task, let found):
            return HangReport.Kind(name: .unknown, reason: "task \(task) at \(found) of \(tasks.reads) reads; the others found no task running")
        }
    }
}
