import HangWatchReport

/// Everything the pool watch learns about one starvation of the cooperative pool: when the probe
/// was enqueued (the start), when it was found not started (detection), when it finally started
/// (the end), and every pool thread's capture.
struct PoolRecording: Sendable {
    /// Unique per process: `<UTC start>-<service>-<pid>-<sequence>`, numbered with the watchdogs'.
    let id: String
    /// When the probe that did not start was enqueued.
    let startMicroseconds: UInt64
    let detectedMicroseconds: UInt64
    let thresholdMicroseconds: UInt64
    let sampleIntervalMicroseconds: UInt64
    let process: ProcessSnapshot
    /// Every pool thread, in the order captured (each once: at detection, or when it first appeared).
    var threads: [PoolThreadSample] = []
    /// When the probe started; nil while the pool is still starved.
    var endMicroseconds: UInt64?
    /// Every task, read once at detection: the report counts those waiting for a pool thread.
    var queuedTasks: QueuedTaskCensus?

    /// The latest time the recording knows about: the end, else the last capture, else detection.
    var lastKnownMicroseconds: UInt64 {
        endMicroseconds ?? max(threads.map(\.sample.microseconds).max() ?? 0, detectedMicroseconds)
    }
}

/// Where the pool watch hands what it records; the owning monitor's `ReportWriter` writes it. A
/// job that held a pool thread past the threshold is a hang like a loop's (`HangSink`'s calls,
/// `recording.source` `poolJob`, `recording.thread` that thread); a starved pool adds its own three.
protocol PoolSink: HangSink {
    /// Detected: every pool thread captured once.
    func poolStarved(_ recording: PoolRecording)
    /// More pool threads appeared while it lasted (libdispatch adds workers to a blocked pool).
    func poolProgressed(_ recording: PoolRecording)
    /// The probe started (or the monitor stopped).
    func poolRecovered(_ recording: PoolRecording, outcome: HangReport.Outcome)
}
