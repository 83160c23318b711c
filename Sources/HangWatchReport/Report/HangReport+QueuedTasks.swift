#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The tasks that were waiting to run when a hang was detected (docs/report-format.md
/// `queuedTasks`): in a `concurrency-pool` report, those waiting for a pool thread; in a
/// `dispatch-main` report, those queued on the main actor behind the hang. A summary, not the
/// task list: how many, and the largest folds (as a task dump's `folds`) with their chains.
extension HangReport {
    public struct QueuedTasks: Codable, Sendable, Equatable {
        /// The folds a report keeps, and the ids it keeps of each.
        public static let maxFolds = 5
        public static let maxIDsPerFold = 20

        /// Why no task is counted, in one sentence (as a task dump's `unavailable`); nil when counted.
        public var unavailable: String?
        /// How many tasks were waiting to run.
        public var count: Int
        /// The largest folds of them (at most `maxFolds`), each with at most `maxIDsPerFold` ids.
        public var folds: [TaskFold]
        /// Tasks in folds not kept.
        public var foldsOmitted: Int?
        /// The census reached its bound (as a task dump's `scan.stoppedEarly`): the count is "at least".
        public var stoppedEarly: String?
        /// What reading every task cost the watchdog (once, at detection).
        public var tookMs: Double

        public init(
            unavailable: String? = nil, count: Int = 0, folds: [TaskFold] = [], foldsOmitted: Int? = nil, stoppedEarly: String? = nil,
            tookMs: Double = 0
        ) {
            self.unavailable = unavailable
            self.count = count
            self.folds = folds
            self.foldsOmitted = foldsOmitted
            self.stoppedEarly = stoppedEarly
            self.tookMs = tookMs
        }
    }
}
