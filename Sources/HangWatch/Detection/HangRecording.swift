import HangWatchReport
#if canImport(Glibc)
import Glibc
#endif

/// Everything the watchdog learns about one hang while it lasts. Bounded: past `maxSamples`, every
/// other sample is dropped and the interval doubles, so any hang, however long, stays covered from
/// start to end in at most `maxSamples` samples.
struct HangRecording: Sendable {
    /// Unique per process: `<UTC start>-<service>-<pid>-<sequence>`.
    let id: String
    /// Start of the busy period (the activity after which the loop stopped moving), microseconds.
    let startMicroseconds: UInt64
    let detectedMicroseconds: UInt64
    let activity: UInt8
    let mode: String?
    let thresholdMicroseconds: UInt64
    let thread: MonitoredThread?
    let process: ProcessSnapshot
    /// The thread's scheduler counters at detection (the baseline for on-CPU and run-queue ratios).
    let baseline: ProcTask.SchedStat?
    /// How late the watchdog woke for this detection; large values mean a stopped or starved process.
    let watchdogOversleepMicroseconds: UInt64
    /// The watchdog's own lateness looked like the process had been stopped, not starved (before
    /// the detection, or while sampling).
    var stopSuspected: Bool
    let maxSamples: Int
    let baseSampleIntervalMicroseconds: UInt64

    private(set) var samples: [StackSample] = []
    private(set) var samplesDropped = 0
    /// Captures whose signal cut a system call short, dropped samples included.
    private(set) var callsCutShort = 0
    private(set) var sampleIntervalMicroseconds: UInt64
    /// When the loop moved again; nil while the hang lasts.
    var endMicroseconds: UInt64?
    /// The report's source when it is not the monitor's own (a job holding a pool thread, found
    /// by the pool watch: `poolJob`).
    var source: ActivitySourceKind?
    /// How its start and end were found (the report's `edges`).
    var edges: ActivityEdges?
    /// What the thread waited on and who held it, when it was blocked on an object: the latest
    /// look, and every holder seen in order.
    private(set) var wait: WaitRecord?
    /// The label sets in effect on the thread when the hang was seen (`HangMonitor.withLabels`),
    /// outermost first: read at detection, else at the first later sample that found some.
    var labels: [[String: String]]?
    /// What held the thread back from outside its code: a CPU limit, a freezer, a stop, paging.
    var context = HangContextRecord()
    /// A main queue's hang: every task, read once at detection; the report counts those queued
    /// on the main actor behind the hang.
    var queuedTasks: QueuedTaskCensus?
    /// A run loop's flight recorder, read at detection: the report's `before` and `kind`.
    var leadUp: LeadUpRecord?
    /// The report's `kind` when the source proves it without a recorder (a pool job: one task
    /// held the thread at every look, `HeldJobTracker`).
    var kind: HangReport.Kind?
    /// The tasks the samples found running on the thread, where the source knows its current-task
    /// word (a main-queue hang: `QueueHangKind`).
    var tasks: SampledTasks?

    init(
        id: String, startMicroseconds: UInt64, detectedMicroseconds: UInt64, activity: UInt8, mode: String?,
        thresholdMicroseconds: UInt64, thread: MonitoredThread?, process: ProcessSnapshot,
        baseline: ProcTask.SchedStat?, watchdogOversleepMicroseconds: UInt64, stopSuspected: Bool, maxSamples: Int,
        sampleIntervalMicroseconds: UInt64
    ) {
        self.id = id
        self.startMicroseconds = startMicroseconds
        self.detectedMicroseconds = detectedMicroseconds
        self.activity = activity
        self.mode = mode
        self.thresholdMicroseconds = thresholdMicroseconds
        self.thread = thread
        self.process = process
        self.baseline = baseline
        self.watchdogOversleepMicroseconds = watchdogOversleepMicroseconds
        self.stopSuspected = stopSuspected
        self.maxSamples = max(1, maxSamples)
        self.baseSampleIntervalMicroseconds = sampleIntervalMicroseconds
        self.sampleIntervalMicroseconds = sampleIntervalMicroseconds
    }

    /// The interval stops doubling here, so sampling never stops, whatever the hang's length.
    static let longestSampleIntervalMicroseconds: UInt64 = 10_000_000

    mutating func add(_ sample: StackSample) {
        if sample.cutCallShort { callsCutShort += 1 }
        samples.append(sample)
        if samples.count > maxSamples {
            // Keep the first sample and every other one after it.
            samples = samples.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
            samplesDropped += (maxSamples + 1) - samples.count
            sampleIntervalMicroseconds = min(sampleIntervalMicroseconds * 2, max(baseSampleIntervalMicroseconds, Self.longestSampleIntervalMicroseconds))
        }
    }

    /// Adds a look at what the thread waited on (at most one per sample: bounded like them).
    mutating func add(wait observation: WaitObservation) {
        if wait == nil { wait = WaitRecord(latest: observation) }
        wait?.add(observation)
    }

    /// The loop moved at `end` (the activity edge's own time). A sample begun after it shows the
    /// thread doing something else (the next iteration, its idle wait) and is dropped: the
    /// watchdog can start one between the edge and learning of it.
    mutating func end(at end: UInt64) {
        endMicroseconds = max(end, detectedMicroseconds)
        samples.removeAll { $0.microseconds > end }
    }

    /// The latest time the recording knows about: the end, else the last sample, else detection.
    var lastKnownMicroseconds: UInt64 {
        endMicroseconds ?? max(samples.last?.microseconds ?? detectedMicroseconds, detectedMicroseconds)
    }
}

/// What a hung thread waited on over a hang: the latest look, and each holder in turn with the
/// first and last look that saw it hold the object (a holder that changes is recorded as such).
struct WaitRecord: Sendable, Equatable {
    struct Span: Sendable, Equatable {
        var owner: WaitOwner
        var name: String?
        var firstMicroseconds: UInt64
        var lastMicroseconds: UInt64
    }

    private(set) var latest: WaitObservation
    private(set) var spans: [Span] = []
    /// The looks that found the latest thread holder holding the object (counted since it first
    /// did), and how many of them took no stack of it.
    private(set) var holderLooks = 0
    private(set) var holderLooksWithoutStack = 0
    /// Spans kept at most; a longer history keeps its first and latest holders.
    static let maxSpans = 16

    /// This process (the process a pipe's or socket's other end is held by when no thread of it
    /// is in a call on that end).
    private let ownProcess: Int32

    /// A record to `add` looks to (the first of them, `latest` too).
    init(latest: WaitObservation, ownProcess: Int32 = getpid()) {
        self.latest = latest
        self.ownProcess = ownProcess
    }

    mutating func add(_ observation: WaitObservation) {
        if observation.owner.thread != nil {
            if observation.owner != latest.owner || observation.object != latest.object { (holderLooks, holderLooksWithoutStack) = (0, 0) }
            holderLooks += 1
            if observation.holder?.sample == nil { holderLooksWithoutStack += 1 }
        }
        if says(moreThanLatest: observation) { latest = observation }
        guard observation.owner.thread != nil || isProcess(observation.owner) else { return }
        if let last = spans.last, last.owner == observation.owner {
            spans[spans.count - 1].lastMicroseconds = observation.microseconds
            return
        }
        if spans.count == Self.maxSpans { spans.remove(at: 1) }
        spans.append(
            Span(owner: observation.owner, name: observation.holder?.name, firstMicroseconds: observation.microseconds,
                 lastMicroseconds: observation.microseconds))
    }

    /// Whether `observation`, the newer look, is the one the report should say: the last look that
    /// found a holder says the most, with three exceptions on the same object. A look as the hang
    /// ended, as its holders let go, names fewer of them (a lock found free or being released, a
    /// poll's other end gone as the process holding it exited), which is not what the hang waited
    /// on; so does a look as the thread of this process at the other end of a pipe or socket left
    /// its call (only this process is left holding that end); a look at the same holder that got
    /// no stack (it was waking, on a CPU) says less than the look that got the stack it waited
    /// behind; one that could not read the same holder's name (another process, which exited
    /// and was reaped as the wait ended) says less than the look that named it; and one whose walk
    /// of the same holder's stack stopped early says less than a look that walked it whole (a holder
    /// caught as it let go, in the dynamic linker's lazy binding of its first call to a function:
    /// seen in `WaitsForTests` beside a busy CPU, the stack ending at `_dl_runtime_resolve_xsavec`).
    /// A stack walked to its outermost frame (or to the frame cap).
    private static func walkedWhole(_ sample: StackSample?) -> Bool {
        guard let sample, !sample.frames.isEmpty else { return false }
        return !sample.truncated || sample.truncation == .frameLimit
    }

    /// A stack whose walk stopped before its outermost frame for another reason than the cap.
    private static func stoppedEarly(_ sample: StackSample?) -> Bool {
        guard let sample, !sample.frames.isEmpty else { return false }
        return sample.truncated && sample.truncation != .frameLimit
    }

    private func says(moreThanLatest observation: WaitObservation) -> Bool {
        guard latest.object == observation.object else { return true }
        if Self.holdersNamed(observation) < Self.holdersNamed(latest) { return false }
        if latest.owner == observation.owner, latest.holder?.name != nil, observation.holder?.name == nil { return false }
        if latest.owner == observation.owner, Self.walkedWhole(latest.holder?.sample), Self.stoppedEarly(observation.holder?.sample) {
            return false
        }
        if latest.owner.thread != nil, case .process(let pid) = observation.owner, pid == ownProcess { return false }
        return !(latest.owner == observation.owner && latest.holder?.sample != nil && observation.holder?.sample == nil)
    }

    /// How many holders a look names: its owner, or, for an I/O wait, each descriptor's other end.
    static func holdersNamed(_ observation: WaitObservation) -> Int {
        let owner = observation.owner.thread != nil || { if case .process = observation.owner { true } else { false } }() ? 1 : 0
        return max(owner, observation.endpoints.reduce(0) { $0 + $1.peers.count })
    }

    private func isProcess(_ owner: WaitOwner) -> Bool {
        if case .process = owner { return true }
        return false
    }
}
