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
/// Between probes it looks at every pool thread a short interval apart (`lookInterval`) for one
/// job that holds a thread past the threshold while the rest of the pool may be free: a blocking
/// call or a long computation in async code (`HeldJobTracker` decides; each such job gets a
/// `pool-job` report of that thread, sampled while it lasts).
///
/// While no pool thread runs a job for `restAfter`, it rests: no probes, no looks, no wake-ups,
/// until a job is enqueued to the pool (the runtime's enqueue hooks wake it: `PoolWakeSource`)
/// or a delayed job (`Task.sleep`'s resumption) falls due. Without the hooks, or when another
/// hook was set after ours, it never rests.
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
        /// Samples kept per held-job report.
        var maxSamples = 100
        /// The default-QoS pool's width (its most workers): one per CPU.
        var poolWidth = ProcessInfo.processInfo.activeProcessorCount
    }

    private let settings: Settings
    private let environment: any WatchdogEnvironment
    private let enqueue: @Sendable (PoolProbeSlot) -> Void
    /// Enqueues a job that attaches the thread of the given pool it runs on (nil: attaching is the
    /// probe's alone).
    private let attach: (@Sendable (CooperativePool) -> Void)?
    /// Enqueues jobs that attach every worker a pool of the given width has (`enqueueAttachEveryWorker`).
    private let attachEveryWorker: (@Sendable (Int) -> Void)?
    private var attachRequests = PoolAttachRequests()
    private let threads: any PoolThreadCapturing
    private let sink: any PoolSink
    private let looker: (any PoolThreadLooking)?
    /// Where a job's function starts (the unwind tables of `images`, unless a test scripts it).
    private let functionStart: (@Sendable (UInt) -> UInt?)?
    private var tracker = HeldJobTracker()
    /// The open report of each held job, by thread.
    private var heldJobs: [Int32: HangRecording] = [:]
    /// When a probe job last started (the pool had room then).
    private var probeStarted: UInt64?
    private let histogram: PoolProbeHistogram
    private let statistics: MonitorStatistics?
    private let images: ImageRegistry?
    private let logger: Logger
    private let wakeSource: (any PoolWakeSource)?
    /// What a blocked pool thread waits on and who holds it: for each held job's samples and each
    /// thread of a starved pool.
    private let waits: (any WaitInspecting)?
    /// Since when every look found every pool thread idle (nil: the last look did not).
    private var quietSince: UInt64?
    private let stopRequested = Atomic<Bool>(false)
    private let wake = WatchdogWake()
    private let finished = DispatchSemaphore(value: 0)

    init(
        settings: Settings, environment: any WatchdogEnvironment, enqueue: @escaping @Sendable (PoolProbeSlot) -> Void,
        attach: (@Sendable (CooperativePool) -> Void)? = nil, attachEveryWorker: (@Sendable (Int) -> Void)? = nil,
        threads: any PoolThreadCapturing, looker: (any PoolThreadLooking)? = nil,
        sink: any PoolSink,
        histogram: PoolProbeHistogram = .shared,
        statistics: MonitorStatistics?, images: ImageRegistry?, functionStart: (@Sendable (UInt) -> UInt?)? = nil,
        wakeSource: (any PoolWakeSource)? = nil, waits: (any WaitInspecting)? = nil, logger: Logger
    ) {
        self.wakeSource = wakeSource
        self.waits = waits
        self.functionStart = functionStart ?? images.map { images in { @Sendable address in images.current.functionStart(of: address) } }
        self.settings = settings
        self.environment = environment
        self.enqueue = enqueue
        self.attach = attach
        self.attachEveryWorker = attachEveryWorker
        self.threads = threads
        self.looker = looker
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
            enqueueOwn { enqueue(slot) }
            let deadline = enqueued + threshold
            while !isStopping {
                let now = environment.now()
                if now >= deadline { break }
                _ = environment.wait(wake, until: looker == nil ? deadline : min(deadline, now + lookInterval(threshold)))
                if !isStopping {
                    if let started = slot.startedMicroseconds { probeStarted = started }
                    lookAtJobs(thresholdMicroseconds: threshold)
                }
            }
            if isStopping { break }
            if let started = slot.startedMicroseconds {
                probeStarted = started
                histogram.add(delayNanoseconds: (started - min(started, enqueued)) * 1000)
                restIfQuiet(thresholdMicroseconds: threshold)
                continue
            }
            record(slot, enqueuedMicroseconds: enqueued, thresholdMicroseconds: threshold)
        }
        for event in tracker.stop() { handle(event, outcome: .monitorStopped) }
    }

    /// How far apart the looks for held jobs are: the sample interval, and at least four per
    /// threshold, so a job is first seen within a quarter threshold of its start.
    func lookInterval(_ thresholdMicroseconds: UInt64) -> UInt64 {
        max(1000, min(settings.sampleIntervalMicroseconds, thresholdMicroseconds / 4))
    }

    /// How long every pool thread must have been found idle before the watch rests: four
    /// thresholds, and at least a second (a pool idle between bursts of requests keeps it awake).
    func restAfter(_ thresholdMicroseconds: UInt64) -> UInt64 {
        max(1_000_000, 4 * thresholdMicroseconds)
    }

    /// The watch's own enqueues (probes, attach jobs) never wake it.
    private func enqueueOwn(_ body: () -> Void) {
        if let wakeSource { wakeSource.ownEnqueues(body) } else { body() }
    }

    /// A pool thread in no job, asleep (its idle wait), as far as the look could tell.
    private static func isIdle(_ look: HeldJobTracker.Look) -> Bool {
        look.activation == nil && look.sample.state == "S"
            && (look.sample.failure == nil || look.sample.failure == .threadNotAttached)
    }

    /// Rests once the pool has been idle for `restAfter`, until a job is enqueued or a delayed one
    /// falls due. Jobs enqueued just before the hooks were armed could start unseen during the
    /// rest, so after arming a probe is enqueued (jobs of its priority and above enqueued before
    /// it start first) and, once it started, one more look must find every pool thread idle.
    private func restIfQuiet(thresholdMicroseconds threshold: UInt64) {
        guard let wakeSource, looker != nil, let since = quietSince else { return }
        let now = environment.now()
        guard now - min(now, since) >= restAfter(threshold), wakeSource.canRest() else { return }
        let delayed = wakeSource.nextDelayed(after: now)
        if delayed == .unknown { return }
        while wake.tryWait() {}
        if isStopping { return }
        // The first job after the rest may run on a fresh worker (libdispatch lets idle workers
        // exit after 5 s), which a job must prepare for signal captures before it can be captured
        // on a CPU. So the enqueue that wakes the watch first queues attach jobs that meet on every
        // worker the pool may have (`enqueueAttachEveryWorker`): whichever worker takes that job
        // was prepared before it.
        let width = max(1, settings.poolWidth)
        wakeSource.arm(wake) { [attachEveryWorker] in attachEveryWorker?(width) }
        let slot = PoolProbeSlot()
        wakeSource.ownEnqueues { enqueue(slot) }
        let deadline = environment.now() + threshold
        var signalled = false
        while slot.startedMicroseconds == nil, !signalled, environment.now() < deadline {
            signalled = environment.wait(wake, until: min(deadline, environment.now() + lookInterval(threshold)))
        }
        if let started = slot.startedMicroseconds { probeStarted = started }
        guard !signalled, !isStopping, slot.startedMicroseconds != nil, lookAtJobs(thresholdMicroseconds: threshold) else {
            _ = wakeSource.disarm()
            quietSince = nil
            return
        }
        let until: UInt64? = if case .due(let time) = delayed { time } else { nil }
        histogram.addRest()
        logger.debug("pool watch resting", metadata: ["hangwatch.until": "\(until.map { "\($0)" } ?? "a job")"])
        let woken = environment.wait(wake, until: until)
        let enqueuedAt = wakeSource.disarm()
        // A job seen from now started no earlier than the enqueue that woke the watch, or than
        // the delayed job's due time.
        let resumed = enqueuedAt ?? (woken ? environment.now() : until ?? environment.now())
        tracker.resume(at: resumed)
        quietSince = nil
        // A job enqueued to an idle pool starts at once: a look now dates its start from the
        // enqueue to within the wake-up's latency (half a look interval later, it would be off
        // by up to that).
        if enqueuedAt != nil, !isStopping { lookAtJobs(thresholdMicroseconds: threshold) }
        logger.debug("pool watch woken", metadata: ["hangwatch.by": "\(enqueuedAt != nil ? "a job enqueued" : woken ? "stop" : "a delayed job due")"])
    }

    /// One round of looks; whether it found every pool thread idle and no job followed.
    @discardableResult
    private func lookAtJobs(thresholdMicroseconds: UInt64) -> Bool {
        guard let looker else { return false }
        let looks = looker.look()
        let now = environment.now()
        if let attach {
            let unattached = looks.filter { !$0.isWorker }.map(\.thread)
            let due = attachRequests.due(unattached: unattached, at: now)
            // Each at its pool's priority: a job of one priority never runs on another's workers.
            enqueueOwn { for thread in due { attach(CooperativePool(threadName: thread.name) ?? .default) } }
        }
        let tracked = looks.map { thread, sample, isWorker in
            HeldJobTracker.Look(
                thread: thread, sample: sample, activation: functionStart.flatMap { JobActivation(sample, functionStart: $0) },
                isWorker: isWorker)
        }
        let events = tracker.observe(
            tracked, at: now, thresholdMicroseconds: thresholdMicroseconds, probeStartedMicroseconds: probeStarted)
        for event in events {
            handle(event, outcome: .recovered, thresholdMicroseconds: thresholdMicroseconds)
        }
        let quiet = tracker.episodes.isEmpty && tracked.allSatisfy(Self.isIdle)
        quietSince = quiet ? (quietSince ?? now) : nil
        for missed in tracker.takePassedOver() {
            logger.debug(
                "pool job not reported",
                metadata: [
                    "hangwatch.tid": "\(missed.tid)", "hangwatch.reason": "\(missed.reason.rawValue)",
                    "hangwatch.startedAt": "\(environment.date(ofMicroseconds: missed.startMicroseconds).timeIntervalSince1970)",
                    "hangwatch.durationMs": "\(Double(missed.endMicroseconds - min(missed.endMicroseconds, missed.startMicroseconds)) / 1000)",
                    "hangwatch.sightings": "\(missed.sightings)", "hangwatch.endedBy": "\(missed.endedBy)",
                ])
        }
        return quiet
    }

    private func handle(_ event: HeldJobTracker.Event, outcome: HangReport.Outcome, thresholdMicroseconds: UInt64 = 0) {
        switch event {
        case .held(let episode):
            statistics?.hangsDetected.add(1, ordering: .relaxed)
            let first = episode.samples.first
            var recording = HangRecording(
                id: Watchdog.nextReportID(start: environment.date(ofMicroseconds: episode.startMicroseconds), serviceName: settings.serviceName),
                startMicroseconds: episode.startMicroseconds, detectedMicroseconds: episode.lastSeenMicroseconds, activity: 0, mode: nil,
                thresholdMicroseconds: thresholdMicroseconds, thread: episode.thread, process: environment.processSnapshot(),
                baseline: first.flatMap { sample in
                    sample.onCPUNanoseconds.map {
                        ProcTask.SchedStat(onCPUNanoseconds: $0, runQueueNanoseconds: sample.runQueueNanoseconds ?? 0)
                    }
                },
                watchdogOversleepMicroseconds: 0, stopSuspected: false, maxSamples: settings.maxSamples,
                sampleIntervalMicroseconds: lookInterval(thresholdMicroseconds))
            recording.source = .poolJob
            for sample in episode.samples { recording.add(sample) }
            if let last = episode.samples.last { inspectWait(of: episode.thread.tid, last, into: &recording) }
            let sets = LabelsInEffect.read(episode.thread, taskID: episode.activation.taskID)
            if !sets.isEmpty { recording.labels = sets }
            images?.refreshIfNeeded(for: recording.samples.flatMap(\.frames))
            heldJobs[episode.thread.tid] = recording
            logger.debug(
                "pool thread held by one job",
                metadata: ["hangwatch.id": "\(recording.id)", "hangwatch.tid": "\(episode.thread.tid)"])
            sink.hangStarted(recording)
        case .sampled(let tid, let sample):
            guard var recording = heldJobs[tid] else { return }
            recording.add(sample)
            inspectWait(of: tid, sample, into: &recording)
            if recording.labels == nil, let thread = recording.thread {
                let sets = LabelsInEffect.read(thread, taskID: sample.taskID)
                if !sets.isEmpty { recording.labels = sets }
            }
            heldJobs[tid] = recording
            // The provisional report is rewritten now and then, not at every look.
            if recording.samples.count % 20 == 0 { sink.hangProgressed(recording) }
        case .ended(let tid, let end):
            guard var recording = heldJobs.removeValue(forKey: tid) else { return }
            recording.endMicroseconds = end
            images?.refreshIfNeeded(for: recording.samples.flatMap(\.frames))
            sink.hangEnded(recording, outcome: outcome)
        }
    }

    private func record(_ slot: PoolProbeSlot, enqueuedMicroseconds start: UInt64, thresholdMicroseconds: UInt64) {
        let detected = environment.now()
        let process = environment.processSnapshot()
        let captured = Array(threads.capture(skipping: [], signalAllowed: !process.debuggerAttached).prefix(settings.maxThreads))
        if let images, Self.everyThreadIdle(captured, images: images.current) {
            // The probe is late, but no pool thread holds a job: nothing starves the pool. The
            // delay is the machine's (the worker waited for a CPU to wake on): it goes into the
            // start-delay histogram, and no report blames the pool.
            logger.debug("pool probe late with every pool thread idle: not a starvation", metadata: ["hangwatch.threads": "\(captured.count)"])
            awaitProbe(slot, enqueuedMicroseconds: start, thresholdMicroseconds: thresholdMicroseconds)
            return
        }
        histogram.addStarvation()
        statistics?.hangsDetected.add(1, ordering: .relaxed)
        let id = Watchdog.nextReportID(start: environment.date(ofMicroseconds: start), serviceName: settings.serviceName)
        var recording = PoolRecording(
            id: id, startMicroseconds: start, detectedMicroseconds: detected, thresholdMicroseconds: thresholdMicroseconds,
            sampleIntervalMicroseconds: settings.sampleIntervalMicroseconds, process: process)
        recording.threads = captured.map(withWait)
        logger.debug("cooperative pool starved", metadata: ["hangwatch.id": "\(id)", "hangwatch.threads": "\(recording.threads.count)"])
        sink.poolStarved(recording)
        tracker.coverUnheld()

        var outcome = HangReport.Outcome.recovered
        while true {
            if let started = slot.startedMicroseconds {
                recording.endMicroseconds = max(started, start)
                probeStarted = started
                break
            }
            if isStopping {
                recording.endMicroseconds = environment.now()
                outcome = .monitorStopped
                break
            }
            _ = environment.wait(wake, until: environment.now() + settings.sampleIntervalMicroseconds)
            if !isStopping {
                // Jobs seen while the pool is starved are in this report, not in reports of their own.
                lookAtJobs(thresholdMicroseconds: thresholdMicroseconds)
                tracker.coverUnheld()
            }
            guard slot.startedMicroseconds == nil, !isStopping, recording.threads.count < settings.maxThreads else { continue }
            let more = threads.capture(skipping: Set(recording.threads.map(\.tid)), signalAllowed: !process.debuggerAttached)
            if !more.isEmpty {
                recording.threads += more.prefix(settings.maxThreads - recording.threads.count).map(withWait)
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

    /// Whether every pool thread captured is a worker waiting for work (none holds a job).
    static func everyThreadIdle(_ captured: [PoolThreadSample], images: ImageMap) -> Bool {
        !captured.isEmpty && captured.allSatisfy { thread in
            ReportBuilder.isIdleWorker(
                state: thread.sample.state, truncated: thread.sample.truncated,
                imagePaths: thread.sample.frames.map { address in images.imageIndex(containing: address).map { images.images[$0].path } })
        }
    }

    /// Waits for a late probe that starved nothing to start (looking at jobs meanwhile, as between
    /// probes), and counts its delay.
    private func awaitProbe(_ slot: PoolProbeSlot, enqueuedMicroseconds start: UInt64, thresholdMicroseconds: UInt64) {
        while slot.startedMicroseconds == nil, !isStopping {
            _ = environment.wait(wake, until: environment.now() + settings.sampleIntervalMicroseconds)
            if !isStopping { lookAtJobs(thresholdMicroseconds: thresholdMicroseconds) }
        }
        if let started = slot.startedMicroseconds {
            probeStarted = started
            histogram.add(delayNanoseconds: (max(started, start) - start) * 1000)
        }
    }

    /// A held job's thread, blocked: what it waits on, with the sample.
    private func inspectWait(of tid: Int32, _ sample: StackSample, into recording: inout HangRecording) {
        guard let waits, sample.failure == nil, sample.blockedKey != nil, let observation = waits.inspect(tid: tid, sample: sample) else { return }
        recording.add(wait: observation)
    }

    /// A starved pool's thread with what it waits on, when it is blocked on an object.
    private func withWait(_ thread: PoolThreadSample) -> PoolThreadSample {
        var thread = thread
        if let waits, thread.sample.failure == nil, thread.sample.blockedKey != nil {
            thread.wait = waits.inspect(tid: thread.tid, sample: thread.sample)
        }
        return thread
    }
}
