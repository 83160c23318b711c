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
/// The probe's phases and the rest are here; the looks for held jobs in `PoolWatch+Jobs`, a
/// starvation in `PoolWatch+Starvation`.
///
/// One per process (`ProcessRuntime.poolWatch`): a lane of its monitor's watchdog (a thread the pool does
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
    enum Phase {
        /// No probe out: the next step sends one (the first step may go dormant instead).
        case starting
        /// The pool was never used (no worker of any of its pools exists): no probe, the hooks armed,
        /// until a job is enqueued. `confirmAt`: when a second look for a worker confirms it (a job
        /// enqueued just before the hooks were armed may have made one since); nil: confirmed.
        case dormant(confirmAt: UInt64?)
        case probing(Probe, wakeAt: UInt64)
        case confirmingRest(Rest, wakeAt: UInt64)
        case resting(Rest)
        case starved(Starvation, wakeAt: UInt64)
        /// A probe late with every pool thread idle (nothing starves the pool).
        case awaitingProbe(Probe, wakeAt: UInt64)
    }

    // Only the watchdog's thread touches the state below (internal, not private: the watch's
    // extensions in `PoolWatch+Jobs` and `PoolWatch+Starvation` use it too).
    let settings: Settings
    /// The watchdog's, as of its last step.
    var environment: (any WatchdogEnvironment)!
    var phase = Phase.starting
    let enqueue: @Sendable (PoolProbeSlot) -> Void
    /// Enqueues a job that attaches the thread of the given pool it runs on (nil: attaching is the
    /// probe's alone).
    let attach: (@Sendable (CooperativePool) -> Void)?
    /// Enqueues jobs that attach every worker a pool of the given width has (`enqueueAttachEveryWorker`).
    let attachEveryWorker: (@Sendable (Int) -> Void)?
    var attachRequests = PoolAttachRequests()
    let threads: any PoolThreadCapturing
    let sink: any PoolSink
    let looker: (any PoolThreadLooking)?
    /// Where a job's function starts (the unwind tables of `images`, unless a test scripts it).
    let functionStart: (@Sendable (UInt) -> UInt?)?
    var tracker: HeldJobTracker
    /// The open report of each held job, by thread.
    var heldJobs: [Int32: HangRecording] = [:]
    /// When the last probe job that started was enqueued: the pool had room for it, whatever ran
    /// by then (`HeldJobTracker`'s proof of room).
    var startedProbeEnqueued: UInt64?
    let histogram: PoolProbeHistogram
    /// The process's report ids (`ProcessRuntime.reportNaming`).
    let naming: ReportNaming
    let statistics: MonitorStatistics?
    let images: ImageRegistry?
    let logger: Logger
    let wakeSource: (any PoolWakeSource)?
    /// What a blocked pool thread waits on and who holds it: for each held job's samples and each
    /// thread of a starved pool.
    let waits: (any WaitInspecting)?
    /// Reads every task of the process (a starvation counts those waiting for a pool thread); nil:
    /// not in this world.
    let tasks: (@Sendable () -> TaskCensus)?
    /// Since when every look found every pool thread idle (nil: the last look did not).
    var quietSince: UInt64?
    /// Whether a probe was ever sent (before the first, a pool never used lets the watch go dormant).
    var hasProbed = false
    let stopRequested = Atomic<Bool>(false)
    /// Set by the armed hooks' first job (`restIfQuiet`): the wake they post is the watchdog's,
    /// which other lanes' loops post too.
    let restWoken = Atomic<Bool>(false)
    /// The watchdog's wake, which the armed hooks and `requestStop()` post.
    let wake: WatchdogWake
    let finished = DispatchSemaphore(value: 0)

    /// `wake`: the wake of the watchdog that steps the watch.
    init(
        settings: Settings, wake: WatchdogWake, enqueue: @escaping @Sendable (PoolProbeSlot) -> Void,
        attach: (@Sendable (CooperativePool) -> Void)? = nil, attachEveryWorker: (@Sendable (Int) -> Void)? = nil,
        threads: any PoolThreadCapturing, looker: (any PoolThreadLooking)? = nil,
        sink: any PoolSink,
        histogram: PoolProbeHistogram, naming: ReportNaming,
        statistics: MonitorStatistics?, images: ImageRegistry?, functionStart: (@Sendable (UInt) -> UInt?)? = nil,
        wakeSource: (any PoolWakeSource)? = nil, waits: (any WaitInspecting)? = nil, tasks: (@Sendable () -> TaskCensus)? = nil, logger: Logger
    ) {
        self.wakeSource = wakeSource
        self.waits = waits
        self.tasks = tasks
        self.functionStart = functionStart ?? images.map { images in { @Sendable address in images.current.functionStart(of: address) } }
        self.settings = settings
        tracker = HeldJobTracker(probedPoolWidth: max(1, settings.poolWidth))
        self.wake = wake
        self.enqueue = enqueue
        self.attach = attach
        self.attachEveryWorker = attachEveryWorker
        self.threads = threads
        self.looker = looker
        self.sink = sink
        self.histogram = histogram
        self.naming = naming
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

    func advance(_ turn: WatchdogTurn) -> WatchdogWait {
        let environment = turn.environment
        self.environment = environment
        if isStopping {
            stopNow()
            return .finished
        }
        let now = environment.now()
        switch phase {
        case .starting:
            return (hasProbed ? nil : dormantIfUnused(now: now)) ?? sendProbe()
        case .dormant(let confirmAt):
            return dormant(confirmAt: confirmAt, now: now)
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

    /// The probe period and starvation threshold now: the monitor's threshold, at least 1 ms.
    private var probeThreshold: UInt64 { max(settings.thresholdMicroseconds(), 1000) }

    /// Enqueues the next probe: a threshold later it must have started.
    func sendProbe() -> WatchdogWait {
        hasProbed = true
        let threshold = probeThreshold
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
        if probe.slot.startedMicroseconds != nil { startedProbeEnqueued = probe.enqueued }
        lookAtJobs(thresholdMicroseconds: probe.threshold)
        let looked = environment.now()
        if looked < probe.deadline { return waitProbing(probe, now: looked) }
        guard let started = probe.slot.startedMicroseconds else { return record(probe) }
        startedProbeEnqueued = probe.enqueued
        histogram.add(delayNanoseconds: (started - min(started, probe.enqueued)) * 1000)
        return restIfQuiet(thresholdMicroseconds: probe.threshold) ?? sendProbe()
    }

    /// Every step after `requestStop()`: a rest ends, a starvation and the held jobs in progress are
    /// handed on `monitor stopped`.
    private func stopNow() {
        switch phase {
        case .confirmingRest, .resting, .dormant:
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
    func enqueueOwn(_ body: () -> Void) {
        if let wakeSource { wakeSource.ownEnqueues(body) } else { body() }
    }

    /// A pool thread in no job, asleep (its idle wait), as far as the look could tell.
    static func isIdle(_ look: HeldJobTracker.Look) -> Bool {
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
        armForFirstJob(wakeSource)
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
        if rest.probe.slot.startedMicroseconds != nil { startedProbeEnqueued = rest.probe.enqueued }
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

    /// The first step, when the process never used the pool (no worker of any of its pools exists)
    /// and the hooks can wake the watch: dormant instead of probing. The first probe is what would
    /// make the pool's first worker, and with it libdispatch's worker-pool monitor, a timer that
    /// wakes the process once a second for as long as it lives (docs/performance.md, figure 3b).
    /// The hooks are armed before the look for a worker, so a job enqueued after the look wakes
    /// the watch; one enqueued before it made its worker by the second look (`dormant`).
    private func dormantIfUnused(now: UInt64) -> WatchdogWait? {
        guard let wakeSource, wakeSource.canRest(), wakeSource.nextDelayed(after: now) == PoolDelayedJobs.none,
            !threads.anyWorkerExists()
        else { return nil }
        armForFirstJob(wakeSource)
        guard !threads.anyWorkerExists() else {
            _ = wakeSource.disarm()
            return nil
        }
        let confirmAt = environment.now() + lookInterval(probeThreshold)
        phase = .dormant(confirmAt: confirmAt)
        return .rest(until: confirmAt)
    }

    /// Arms the hooks: the first job enqueued that is not the watch's own first queues an attach
    /// job for every worker the pool may have (it may run on a fresh one), then wakes the watch.
    private func armForFirstJob(_ wakeSource: any PoolWakeSource) {
        let width = max(1, settings.poolWidth)
        restWoken.store(false, ordering: .releasing)
        wakeSource.arm(wake) { [self, attachEveryWorker] in
            restWoken.store(true, ordering: .releasing)
            attachEveryWorker?(width)
        }
    }

    /// Dormant: until a job is enqueued (then probing starts, and a look dates the job from its
    /// enqueue), or until a worker appears that no enqueue the hooks saw made.
    private func dormant(confirmAt: UInt64?, now: UInt64) -> WatchdogWait {
        let woken = restWoken.load(ordering: .acquiring)
        if !woken, let confirmAt {
            if now < confirmAt { return .rest(until: confirmAt) }
            if !threads.anyWorkerExists() {
                logger.debug("pool watch dormant: this process has not used the pool")
                histogram.addRest()
                phase = .dormant(confirmAt: nil)
                return .rest(until: nil)
            }
        } else if !woken {
            return .rest(until: nil)
        }
        let enqueuedAt = wakeSource?.disarm()
        tracker.resume(at: enqueuedAt ?? now)
        if enqueuedAt != nil { lookAtJobs(thresholdMicroseconds: probeThreshold) }
        logger.debug("pool watch woken from dormancy", metadata: ["hangwatch.by": "\(enqueuedAt != nil ? "a job enqueued" : "a worker found")"])
        return sendProbe()
    }
}
