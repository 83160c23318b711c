import Dispatch
import Foundation
import HangWatchReport
import Logging
import Synchronization

/// Watches Swift's cooperative pool (the global concurrent executor) by probing it: once per
/// threshold it enqueues a tiny job and, one threshold later, looks whether the job has started.
/// Started: its delay goes into the histogram. Not started: every pool thread is held (blocked or
/// computing) and the pool is starved; each pool thread is captured, threads that appear while
/// it lasts are captured too, and when the probe finally starts the report is finished with the
/// exact wait (enqueue to start).
///
/// One per process (`PoolWatchRegistry`). Runs on a thread of its own that the pool does not
/// need; tests run `run()` on their own thread against a scripted environment.
final class PoolWatch: @unchecked Sendable {
    struct Settings: Sendable {
        /// The probe period and the starvation threshold (the owning monitor's, which may change).
        var thresholdMicroseconds: @Sendable () -> UInt64
        var sampleIntervalMicroseconds: UInt64
        var serviceName: String
        /// Pool threads kept per report.
        var maxThreads = 256
    }

    private let settings: Settings
    private let environment: any WatchdogEnvironment
    private let enqueue: @Sendable (PoolProbeSlot) -> Void
    private let threads: any PoolThreadCapturing
    private let sink: any PoolSink
    private let histogram: PoolProbeHistogram
    private let statistics: MonitorStatistics?
    private let images: ImageRegistry?
    private let logger: Logger
    private let stopRequested = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(
        settings: Settings, environment: any WatchdogEnvironment, enqueue: @escaping @Sendable (PoolProbeSlot) -> Void,
        threads: any PoolThreadCapturing, sink: any PoolSink, histogram: PoolProbeHistogram = .shared,
        statistics: MonitorStatistics?, images: ImageRegistry?, logger: Logger
    ) {
        self.settings = settings
        self.environment = environment
        self.enqueue = enqueue
        self.threads = threads
        self.sink = sink
        self.histogram = histogram
        self.statistics = statistics
        self.images = images
        self.logger = logger
    }

    /// The pool watch's thread name (15 bytes at most).
    static let threadName = "hangwatch-pool"

    var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

    func start() {
        NamedThread.start(Self.threadName, stackSize: 1 << 20) { [self] in
            self.run()
            self.finished.signal()
        }
    }

    /// Asks `run()` to return (at once, mid-wait); a starvation in progress ends `monitor stopped`.
    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        wake.signal()
    }

    /// `requestStop()`, then waits for the thread `start()` began.
    func stopAndJoin() {
        requestStop()
        finished.wait()
    }

    /// The probe loop, until stopped.
    func run() {
        while !isStopping {
            let threshold = max(settings.thresholdMicroseconds(), 1000)
            let slot = PoolProbeSlot()
            let enqueued = environment.now()
            enqueue(slot)
            let deadline = enqueued + threshold
            while !isStopping, environment.now() < deadline {
                _ = environment.wait(wake, until: deadline)
            }
            if isStopping { break }
            if let started = slot.startedMicroseconds {
                histogram.add(delayNanoseconds: (started - min(started, enqueued)) * 1000)
                continue
            }
            record(slot, enqueuedMicroseconds: enqueued, thresholdMicroseconds: threshold)
        }
    }

    private func record(_ slot: PoolProbeSlot, enqueuedMicroseconds start: UInt64, thresholdMicroseconds: UInt64) {
        histogram.addStarvation()
        statistics?.hangsDetected.add(1, ordering: .relaxed)
        let id = Watchdog.nextReportID(start: environment.date(ofMicroseconds: start), serviceName: settings.serviceName)
        let process = environment.processSnapshot()
        var recording = PoolRecording(
            id: id, startMicroseconds: start, detectedMicroseconds: environment.now(), thresholdMicroseconds: thresholdMicroseconds,
            sampleIntervalMicroseconds: settings.sampleIntervalMicroseconds, process: process)
        recording.threads = Array(
            threads.capture(skipping: [], signalAllowed: !process.debuggerAttached).prefix(settings.maxThreads))
        logger.debug("cooperative pool starved", metadata: ["hangwatch.id": "\(id)", "hangwatch.threads": "\(recording.threads.count)"])
        sink.poolStarved(recording)

        var outcome = HangReport.Outcome.recovered
        while true {
            if let started = slot.startedMicroseconds {
                recording.endMicroseconds = max(started, start)
                break
            }
            if isStopping {
                recording.endMicroseconds = environment.now()
                outcome = .monitorStopped
                break
            }
            _ = environment.wait(wake, until: environment.now() + settings.sampleIntervalMicroseconds)
            guard slot.startedMicroseconds == nil, !isStopping, recording.threads.count < settings.maxThreads else { continue }
            let more = threads.capture(skipping: Set(recording.threads.map(\.tid)), signalAllowed: !process.debuggerAttached)
            if !more.isEmpty {
                recording.threads += more.prefix(settings.maxThreads - recording.threads.count)
                sink.poolProgressed(recording)
            }
        }
        if outcome == .recovered, let end = recording.endMicroseconds {
            histogram.add(delayNanoseconds: (end - start) * 1000)
        }
        images?.refreshIfNeeded(for: recording.threads.flatMap(\.sample.frames))
        sink.poolRecovered(recording, outcome: outcome)
        logger.debug("cooperative pool recovered", metadata: ["hangwatch.id": "\(id)", "hangwatch.outcome": "\(outcome.rawValue)"])
    }
}
