import Synchronization

extension HangMonitor {
    /// Counters since the monitor was created, as ``HangMonitor/statistics`` reads them: the
    /// monitor's own, but for ``callsCutShort`` and ``concurrencyPool``, which are the process's.
    public struct Statistics: Sendable, Equatable {
        /// Hangs detected (each counted once, however long it lasted).
        public var hangsDetected: Int
        /// Reports written as new files (provisional rewrites not counted).
        public var reportsWritten: Int
        /// Hangs counted in an earlier report with the same signature instead of written again
        /// (``Configuration/repeatWindow``).
        public var hangsFolded: Int
        /// Hangs not written because of the rate limit (``Configuration/reportsPerMinute``,
        /// ``Configuration/reportBurst``).
        public var hangsSuppressed: Int
        /// Report writes that failed (disk full, read-only directory, ...).
        public var writeFailures: Int
        /// Samples that did not yield a stack.
        public var captureFailures: Int
        /// Times the report directory was found deleted and made again.
        public var directoriesRecreated: Int
        /// Near misses sampled: busy pieces past half the threshold, each sampled once for the
        /// lead-up of the next hang (kept while ``Configuration/leadUpWindow`` is above zero).
        public var nearMisses: Int = 0
        /// Capture signals that arrived while their thread was in a system call and cut it short
        /// (the call returned EINTR), process-wide: every monitor of the process shows the same
        /// figure. The guard before each signal keeps this rare (docs/signal-safety.md); a hang's
        /// report counts its own in `capture.callsCutShort`.
        public var callsCutShort: Int = 0
        /// How late Swift's global concurrent executor started the pool probe, process-wide (every
        /// monitor of the process shows the same figures; see docs/sources.md, "Cooperative pool").
        public var concurrencyPool: PoolProbeDelays = PoolProbeDelays()
    }

    /// A histogram of the pool probe's start delays (``Statistics/concurrencyPool``, kept while
    /// ``Configuration/watchesConcurrencyPool`` is on): from enqueueing a tiny job on the global
    /// concurrent executor (priority `.medium`) to the job starting. Buckets have the layout of
    /// the loop-busy histogram (the heartbeat page's).
    public struct PoolProbeDelays: Sendable, Equatable {
        /// Upper bounds of every bucket but the last, in nanoseconds (the last has no bound).
        public var bucketUpperBoundsNanoseconds: [UInt64] = []
        /// Probes per bucket: `bucketUpperBoundsNanoseconds.count + 1` values once a probe ran
        /// (``bucketUpperBoundsNanoseconds``).
        public var counts: [UInt64] = []
        /// The sum of every delay counted, in nanoseconds.
        public var totalNanoseconds: UInt64 = 0
        /// Probes that had not started within the threshold: each is a starved pool (reported with
        /// source `concurrency-pool` when the report policy admits it).
        public var starvations: Int = 0
        /// Times the pool watch rested: every pool thread was idle for a second or more (and four
        /// thresholds), so it stopped probing and looking until a job was enqueued to the pool or
        /// a delayed one fell due (docs/sources.md, "Cooperative pool").
        public var rests: Int = 0

        /// An empty histogram: no bucket, no probe.
        public init() {}

        /// Probes counted: the sum of ``counts``.
        public var probes: UInt64 { counts.reduce(0, +) }
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
    let nearMisses = Atomic<Int>(0)

    /// The monitor's counters, with the process's (`runtime`'s) pool delays and calls cut short.
    func snapshot(_ runtime: ProcessRuntime) -> HangMonitor.Statistics {
        HangMonitor.Statistics(
            hangsDetected: hangsDetected.load(ordering: .relaxed), reportsWritten: reportsWritten.load(ordering: .relaxed),
            hangsFolded: hangsFolded.load(ordering: .relaxed), hangsSuppressed: hangsSuppressed.load(ordering: .relaxed),
            writeFailures: writeFailures.load(ordering: .relaxed), captureFailures: captureFailures.load(ordering: .relaxed),
            directoriesRecreated: directoriesRecreated.load(ordering: .relaxed), nearMisses: nearMisses.load(ordering: .relaxed),
            callsCutShort: runtime.threads.callsCutShort.load(ordering: .relaxed),
            concurrencyPool: runtime.poolDelays.snapshot)
    }
}
