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
/// One per process (`PoolWatchRegistry`): a lane of its monitor's watchdog (a thread the pool does
/// not need), every wait a state of `Phase`; tests step it with a `Watchdog` on their own thread
/// against a scripted environment.
final class PoolWatch: WatchdogLane, @unchecked Sendable {
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

    /// A probe enqueued at `enqueued`, which must start within `threshold`.
    struct Probe {
        let slot: PoolProbeSlot
        let enqueued: UInt64
        let threshold: UInt64
        var deadline: UInt64 { enqueued + threshold }
    }

    /// A rest being confirmed or taken: the probe enqueued once the hooks were armed, and when the
    /// next delayed job falls due (nil: none).
    struct Rest {
        let probe: Probe
        let until: UInt64?
    }

    /// A starvation being recorded, and the probe whose start ends it.
    struct Starvation {
        var recording: PoolRecording
        let probe: Probe
    }

    /// What the watch waits for; `wakeAt`: when it looks next.
    private enum Phase {
        /// No probe out: the next step sends one.
        case starting
        case probing(Probe, wakeAt: UInt64)
        case confirmingRest(Rest, wakeAt: UInt64)
        case resting(Rest)
        case starved(Starvation, wakeAt: UInt64)
        /// A probe late with every pool thread idle (nothing starves the pool).
        case awaitingProbe(Probe, wakeAt: UInt64)
    }

    private let settings: Settings
    /// The watchdog's, as of its last step.
    private var environment: (any WatchdogEnvironment)!
    private var phase = Phase.starting
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
    /// Set by the armed hooks' first job (`restIfQuiet`): the wake they post is the watchdog's,
    /// which other lanes' loops post too.
    private let restWoken = Atomic<Bool>(false)
    /// The watchdog's wake, which the armed hooks and `requestStop()` post.
    private let wake: WatchdogWake
    let finished = DispatchSemaphore(value: 0)

    /// `wake`: the wake of the watchdog that steps the watch.
    init(
        settings: Settings, wake: WatchdogWake, enqueue: @escaping @Sendable (PoolProbeSlot) -> Void,
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
        self.wake = wake
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

    var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

    /// Asks the lane to finish at its next step (the wake gets it there at once, mid-wait); a
    /// starvation in progress ends `monitor stopped`.
    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        wake.signal()
    }

    func advance(_ environment: any WatchdogEnvironment) -> WatchdogWait {
        self.environment = environment
        if isStopping {
            stopNow()
            return .finished
        }
        let now = environment.now()
        switch phase {
        case .starting:
            return sendProbe()
        case .probing(let probe, let wakeAt):
            return probing(probe, wakeAt: wakeAt, now: now)
        case .confirmingRest(let rest, let wakeAt):
            return confirmingRest(rest, wakeAt: wakeAt, now: now)
        case .resting(let rest):
            return resting(rest, now: now)
        case .starved(let starvation, let wakeAt):
            return starved(starvation, wakeAt: wakeAt, now: now)
        case .awaitingProbe(let probe, let wakeAt):
            return awaitingProbe(probe, wakeAt: wakeAt, now: now)
        }
    }

    /// Enqueues the next probe: a threshold later it must have started.
    private func sendProbe() -> WatchdogWait {
        let threshold = max(settings.thresholdMicroseconds(), 1000)
        let slot = PoolProbeSlot()
        let enqueued = environment.now()
        enqueueOwn { enqueue(slot) }
        let probe = Probe(slot: slot, enqueued: enqueued, threshold: threshold)
        return waitProbing(probe, now: enqueued)
    }

    private func waitProbing(_ probe: Probe, now: UInt64) -> WatchdogWait {
        let wakeAt = looker == nil ? probe.deadline : min(probe.deadline, now + lookInterval(probe.threshold))
        phase = .probing(probe, wakeAt: wakeAt)
        return .at(wakeAt)
    }

    /// A probe is out: a look at the pool's threads each look interval until its deadline, then
    /// whether it started.
    private func probing(_ probe: Probe, wakeAt: UInt64, now: UInt64) -> WatchdogWait {
        guard now >= wakeAt else { return .at(wakeAt) }
        if let started = probe.slot.startedMicroseconds { probeStarted = started }
        lookAtJobs(thresholdMicroseconds: probe.threshold)
        let looked = environment.now()
        if looked < probe.deadline { return waitProbing(probe, now: looked) }
        guard let started = probe.slot.startedMicroseconds else { return record(probe) }
        probeStarted = started
        histogram.add(delayNanoseconds: (started - min(started, probe.enqueued)) * 1000)
        return restIfQuiet(thresholdMicroseconds: probe.threshold) ?? sendProbe()
    }

    /// Every step after `requestStop()`: a rest ends, a starvation and the held jobs in progress are
    /// handed on `monitor stopped`.
    private func stopNow() {
        switch phase {
        case .confirmingRest, .resting:
            _ = wakeSource?.disarm()
        case .starved(let starvation, _):
            var recording = starvation.recording
            recording.endMicroseconds = environment.now()
            finish(recording, outcome: .monitorStopped)
        default:
            break
        }
        phase = .starting
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
    /// falls due (nil: not now, probe again). Jobs enqueued just before the hooks were armed could
    /// start unseen during the rest, so after arming a probe is enqueued (jobs of its priority and
    /// above enqueued before it start first) and, once it started, one more look must find every
    /// pool thread idle (`confirmingRest`).
    private func restIfQuiet(thresholdMicroseconds threshold: UInt64) -> WatchdogWait? {
        guard let wakeSource, looker != nil, let since = quietSince else { return nil }
        let now = environment.now()
        guard now - min(now, since) >= restAfter(threshold), wakeSource.canRest() else { return nil }
        let delayed = wakeSource.nextDelayed(after: now)
        if delayed == .unknown { return nil }
        // The first job after the rest may run on a fresh worker (libdispatch lets idle workers
        // exit after 5 s), which a job must prepare for signal captures before it can be captured
        // on a CPU. So the enqueue that wakes the watch first queues attach jobs that meet on every
        // worker the pool may have (`enqueueAttachEveryWorker`): whichever worker takes that job
        // was prepared before it. (It also notes that the hooks fired: the wake is the watchdog's,
        // which other lanes' loops post too.)
        let width = max(1, settings.poolWidth)
        restWoken.store(false, ordering: .releasing)
        wakeSource.arm(wake) { [self, attachEveryWorker] in
            restWoken.store(true, ordering: .releasing)
            attachEveryWorker?(width)
        }
        let slot = PoolProbeSlot()
        wakeSource.ownEnqueues { enqueue(slot) }
        let armed = environment.now()
        let rest = Rest(
            probe: Probe(slot: slot, enqueued: armed, threshold: threshold),
            until: { if case .due(let time) = delayed { time } else { nil } }())
        let wakeAt = min(rest.probe.deadline, armed + lookInterval(threshold))
        phase = .confirmingRest(rest, wakeAt: wakeAt)
        return .rest(until: wakeAt)
    }

    /// The hooks are armed and the rest's probe is out: rests once it started and a look found the
    /// pool idle; a job enqueued meanwhile, or a probe not started by its deadline, means probing.
    private func confirmingRest(_ rest: Rest, wakeAt: UInt64, now: UInt64) -> WatchdogWait {
        let woken = restWoken.load(ordering: .acquiring)
        if !woken, now < wakeAt { return .rest(until: wakeAt) }
        if !woken, rest.probe.slot.startedMicroseconds == nil, now < rest.probe.deadline {
            let next = min(rest.probe.deadline, now + lookInterval(rest.probe.threshold))
            phase = .confirmingRest(rest, wakeAt: next)
            return .rest(until: next)
        }
        if let started = rest.probe.slot.startedMicroseconds { probeStarted = started }
        guard !woken, rest.probe.slot.startedMicroseconds != nil, lookAtJobs(thresholdMicroseconds: rest.probe.threshold) else {
            _ = wakeSource?.disarm()
            quietSince = nil
            return sendProbe()
        }
        histogram.addRest()
        logger.debug("pool watch resting", metadata: ["hangwatch.until": "\(rest.until.map { "\($0)" } ?? "a job")"])
        phase = .resting(rest)
        return .rest(until: rest.until)
    }

    /// At rest: until the hooks see a job enqueued, or the next delayed job falls due.
    private func resting(_ rest: Rest, now: UInt64) -> WatchdogWait {
        let woken = restWoken.load(ordering: .acquiring)
        if !woken, rest.until.map({ now < $0 }) ?? true { return .rest(until: rest.until) }
        let enqueuedAt = wakeSource?.disarm()
        // A job seen from now started no earlier than the enqueue that woke the watch, or than
        // the delayed job's due time.
        let resumed = enqueuedAt ?? (woken ? now : rest.until ?? now)
        tracker.resume(at: resumed)
        quietSince = nil
        // A job enqueued to an idle pool starts at once: a look now dates its start from the
        // enqueue to within the wake-up's latency (half a look interval later, it would be off
        // by up to that).
        if enqueuedAt != nil { lookAtJobs(thresholdMicroseconds: rest.probe.threshold) }
        logger.debug("pool watch woken", metadata: ["hangwatch.by": "\(enqueuedAt != nil ? "a job enqueued" : "a delayed job due")"])
        return sendProbe()
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

    /// A probe not started by its deadline: every pool thread is captured. If one holds a job, the
    /// pool is starved (`starved`); if none does, the delay is the machine's (`awaitingProbe`).
    private func record(_ probe: Probe) -> WatchdogWait {
        let detected = environment.now()
        let process = environment.processSnapshot()
        let captured = Array(threads.capture(skipping: [], signalAllowed: !process.debuggerAttached).prefix(settings.maxThreads))
        if let images, Self.everyThreadIdle(captured, images: images.current) {
            // The probe is late, but no pool thread holds a job: nothing starves the pool. The
            // delay is the machine's (the worker waited for a CPU to wake on): it goes into the
            // start-delay histogram, and no report blames the pool.
            logger.debug("pool probe late with every pool thread idle: not a starvation", metadata: ["hangwatch.threads": "\(captured.count)"])
            return awaitingProbe(probe, wakeAt: nil, now: detected)
        }
        histogram.addStarvation()
        statistics?.hangsDetected.add(1, ordering: .relaxed)
        let id = Watchdog.nextReportID(start: environment.date(ofMicroseconds: probe.enqueued), serviceName: settings.serviceName)
        var recording = PoolRecording(
            id: id, startMicroseconds: probe.enqueued, detectedMicroseconds: detected, thresholdMicroseconds: probe.threshold,
            sampleIntervalMicroseconds: settings.sampleIntervalMicroseconds, process: process)
        recording.threads = captured.map(withWait)
        logger.debug("cooperative pool starved", metadata: ["hangwatch.id": "\(id)", "hangwatch.threads": "\(recording.threads.count)"])
        sink.poolStarved(recording)
        tracker.coverUnheld()
        return starved(Starvation(recording: recording, probe: probe), wakeAt: nil, now: detected)
    }

    /// A starvation in progress: the pool's threads looked at each sample interval (threads that
    /// appear are captured too) until the probe starts, which ends it exactly. `wakeAt` nil: the
    /// first step, before any wait.
    private func starved(_ starvation: Starvation, wakeAt: UInt64?, now: UInt64) -> WatchdogWait {
        if let wakeAt, now < wakeAt { return .at(wakeAt) }
        var recording = starvation.recording
        let probe = starvation.probe
        if wakeAt != nil {
            // Jobs seen while the pool is starved are in this report, not in reports of their own.
            lookAtJobs(thresholdMicroseconds: probe.threshold)
            tracker.coverUnheld()
            if probe.slot.startedMicroseconds == nil, recording.threads.count < settings.maxThreads {
                let more = threads.capture(
                    skipping: Set(recording.threads.map(\.tid)), signalAllowed: !recording.process.debuggerAttached)
                if !more.isEmpty {
                    recording.threads += more.prefix(settings.maxThreads - recording.threads.count).map(withWait)
                    sink.poolProgressed(recording)
                }
            }
        }
        guard let started = probe.slot.startedMicroseconds else {
            let next = environment.now() + settings.sampleIntervalMicroseconds
            phase = .starved(Starvation(recording: recording, probe: probe), wakeAt: next)
            return .at(next)
        }
        recording.endMicroseconds = max(started, probe.enqueued)
        probeStarted = started
        histogram.add(delayNanoseconds: (max(started, probe.enqueued) - probe.enqueued) * 1000)
        finish(recording, outcome: .recovered)
        return sendProbe()
    }

    private func finish(_ recording: PoolRecording, outcome: HangReport.Outcome) {
        images?.refreshIfNeeded(for: recording.threads.flatMap(\.sample.frames))
        sink.poolRecovered(recording, outcome: outcome)
        logger.debug("cooperative pool recovered", metadata: ["hangwatch.id": "\(recording.id)", "hangwatch.outcome": "\(outcome.rawValue)"])
    }

    /// Whether every pool thread captured is a worker waiting for work (none holds a job).
    static func everyThreadIdle(_ captured: [PoolThreadSample], images: ImageMap) -> Bool {
        !captured.isEmpty && captured.allSatisfy { thread in
            ReportBuilder.isIdleWorker(
                state: thread.sample.state, truncated: thread.sample.truncated,
                imagePaths: thread.sample.frames.map { address in images.imageIndex(containing: address).map { images.images[$0].path } })
        }
    }

    /// A late probe that starved nothing: looks at jobs each sample interval (as between probes)
    /// until it starts, and counts its delay. `wakeAt` nil: the first step, before any wait.
    private func awaitingProbe(_ probe: Probe, wakeAt: UInt64?, now: UInt64) -> WatchdogWait {
        if let wakeAt {
            guard now >= wakeAt else { return .at(wakeAt) }
            lookAtJobs(thresholdMicroseconds: probe.threshold)
        }
        guard let started = probe.slot.startedMicroseconds else {
            let next = environment.now() + settings.sampleIntervalMicroseconds
            phase = .awaitingProbe(probe, wakeAt: next)
            return .at(next)
        }
        probeStarted = started
        histogram.add(delayNanoseconds: (max(started, probe.enqueued) - probe.enqueued) * 1000)
        return sendProbe()
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
