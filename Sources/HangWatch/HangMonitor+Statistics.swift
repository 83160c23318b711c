import Synchronization

extension HangMonitor {
    /// Counters since the monitor was created.
    public struct Statistics: Sendable, Equatable {
        /// Hangs detected (each counted once, however long it lasted).
        public var hangsDetected: Int
        /// Reports written as new files (provisional rewrites not counted).
        public var reportsWritten: Int
        /// Hangs counted in an earlier report with the same signature instead of written again.
        public var hangsFolded: Int
        /// Hangs not written because of the rate limit.
        public var hangsSuppressed: Int
        /// Report writes that failed (disk full, read-only directory, ...).
        public var writeFailures: Int
        /// Samples that did not yield a stack.
        public var captureFailures: Int
        /// Times the report directory was found deleted and made again.
        public var directoriesRecreated: Int
    }
}

/// The counters behind `HangMonitor.Statistics`, updated from the watchdog and the writer.
final class MonitorStatistics: Sendable {
    let hangsDetected = Atomic<Int>(0)
    let reportsWritten = Atomic<Int>(0)
    let hangsFolded = Atomic<Int>(0)
    let hangsSuppressed = Atomic<Int>(0)
    let writeFailures = Atomic<Int>(0)
    let captureFailures = Atomic<Int>(0)
    let directoriesRecreated = Atomic<Int>(0)

    var snapshot: HangMonitor.Statistics {
        HangMonitor.Statistics(
            hangsDetected: hangsDetected.load(ordering: .relaxed), reportsWritten: reportsWritten.load(ordering: .relaxed),
            hangsFolded: hangsFolded.load(ordering: .relaxed), hangsSuppressed: hangsSuppressed.load(ordering: .relaxed),
            writeFailures: writeFailures.load(ordering: .relaxed), captureFailures: captureFailures.load(ordering: .relaxed),
            directoriesRecreated: directoriesRecreated.load(ordering: .relaxed))
    }
}
