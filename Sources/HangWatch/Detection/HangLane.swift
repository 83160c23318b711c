import Dispatch
import Foundation
import HangWatchReport
import Logging

/// One watched source's lane of the watchdog: what it decides about that source's latch, and the
/// hang it is recording. A `Watchdog` thread steps every lane it holds (`advance`), then waits for
/// the earliest time one of them asked for or for a busy edge of a parked one; so one thread
/// watches a whole event-loop group, and a hang recorded on one loop never delays detecting one on
/// another (a lane samples its hang between the waits, it does not block in it).
///
/// Only the watchdog's thread touches a lane, except `finished` (signalled when it is done).
final class HangLane: WatchdogLane, @unchecked Sendable {
    let settings: Watchdog.Settings
    let source: any ActivitySource
    let latch: ActivityLatch
    let control: WatchdogControl
    private let threadSlot: ThreadSlot
    /// This start's stop (`MonitorAssembly.end`).
    private let stop: StopFlag
    private let sampler: any StackSampling
    private let sink: any HangSink
    /// Nil in tests that script samples: no image table to keep current.
    private let images: ImageRegistry?
    private let statistics: MonitorStatistics
    private let logger: Logger
    /// What the lane last saw, for its directory's heartbeat (`HeartbeatLane`, on the same thread).
    private let seen = HeartbeatLane.Seen()
    /// What a blocked thread waits on and who holds it, looked at with each of its samples.
    private let waits: (any WaitInspecting)?
    /// The process's report ids (`ProcessRuntime.reportNaming`).
    private let naming: ReportNaming
    /// Signalled once the lane has finished (stopped, its hang in progress handed on).
    let finished = DispatchSemaphore(value: 0)

    private enum Phase {
        case watching
        /// The watchdog woke late for a stretch past its threshold (the process was stopped or
        /// starved): the loop gets until `until` to move before it is called a hang.
        case confirming(snapshot: ActivitySnapshot, start: UInt64, context: String?, until: UInt64)
        case recording(Hang)
    }

    /// A hang being recorded: its samples so far and when the next is due.
    private struct Hang {
        var recording: HangRecording
        let snapshot: ActivitySnapshot
        let thread: MonitoredThread?
        let whyNoThread: StackSample.Failure
        var provisionalSamples: Int
        var provisionalAt: UInt64
        var nextSample: UInt64
    }

    private var phase = Phase.watching
    /// The near misses sampled so far, for the lead-up of the next hang (only while the source
    /// keeps a flight recorder: `HangDetector.looksForNearMisses`).
    private var nearMisses = NearMissLog()
    /// The loop thread's CPU readings while it was busy, for the lead-up of the next hang and the
    /// watch's recent windows (only while the source keeps a flight recorder).
    let cpuReadings: LeadUpCPUReadings?
    /// The last step found the loop busy: the next that finds it idle reads the stretch's end.
    private var sawBusy = false
    /// The tasks the wakes found running while the piece of this latch word was busy (where the
    /// source knows its thread's current-task word): a hang of that piece starts its reads with
    /// them, so they date its job from before the threshold (`RunLoopHangKind.fromTasks`).
    private var busyTasks: (word: UInt64, tasks: SampledTasks)?
    /// The deadline of the last `.until`, to tell how late the watchdog woke for it.
    private var deadline: UInt64?
    /// While watching a busy stretch: its threshold's deadline, which a wait for its near miss
    /// (half-way) comes before. How late the watchdog woke is measured from it: a stop or
    /// starvation is judged by the time past the threshold, not past the half-way look.
    private var thresholdDeadline: UInt64?
    /// How late the watchdog woke for the last threshold deadline, and whether that looked like a
    /// stopped process rather than a starved one.
    private var oversleep: UInt64 = 0
    private var stopSuspected = false
    /// When the last hang recorded began (its latch word's time): a late stretch that is that
    /// hang (it ended as the watchdog began to record it) is not reported twice.
    private var lastRecordedStart: UInt64?
    /// The watched thread's context probe (its cgroups, a stop's evidence), made at the first need.
    private var probe: (thread: MonitoredThread, probe: any HangContextProbing)?
    /// The context counters read at the first look at the current busy stretch (its latch word),
    /// and whose thread they are: where a hang's figures start, rather than a threshold later
    /// (a freeze, a stop or a limit's throttling before detection counts).
    private var edge: (word: UInt64, tid: Int32, counters: HangContextCounters)?
    /// Reads every task of the process (a main queue's hang counts those queued behind it); nil:
    /// not in this world.
    private let tasks: (@Sendable () -> TaskCensus)?

    init(
        settings: Watchdog.Settings, source: any ActivitySource, latch: ActivityLatch, control: WatchdogControl,
        stop: StopFlag, threadSlot: ThreadSlot, sampler: any StackSampling, sink: any HangSink, images: ImageRegistry?,
        statistics: MonitorStatistics, logger: Logger, waits: (any WaitInspecting)? = nil,
        naming: ReportNaming, tasks: (@Sendable () -> TaskCensus)? = nil
    ) {
        self.naming = naming
        self.tasks = tasks
        self.stop = stop
        self.waits = waits
        self.settings = settings
        self.source = source
        self.latch = latch
        self.control = control
        self.threadSlot = threadSlot
        self.sampler = sampler
        self.sink = sink
        self.images = images
        self.statistics = statistics
        self.logger = logger
        cpuReadings = latch.leadUp.map { LeadUpCPUReadings(buckets: $0.buckets) }
    }

    private func detector() -> HangDetector {
        HangDetector(
            thresholdMicroseconds: control.thresholdMicroseconds.load(ordering: .relaxed), busyMask: settings.busyMask,
            clockResolutionMicroseconds: settings.clockResolutionMicroseconds, looksForNearMisses: latch.leadUp != nil)
    }

    /// The watchdog's wait ended at `woke` without a wake-up, `before` and `after` its own
    /// counters around it: if this lane's deadline had passed, note how late it woke for it.
    private func noteLateWake(_ timedOut: WatchdogTurn.TimedOut) {
        let (woke, before, after) = (timedOut.woke, timedOut.before, timedOut.after)
        guard var deadline, woke >= deadline else { return }
        if case .watching = phase, let thresholdDeadline {
            // Woke for a near miss: late only if past the threshold too.
            guard woke >= thresholdDeadline else {
                oversleep = 0
                stopSuspected = false
                return
            }
            deadline = thresholdDeadline
        }
        let late = woke - deadline
        switch phase {
        case .watching:
            oversleep = late
            if let before, let after {
                // Only the wait's own lateness can be a stop: a turn that ran past the deadline
                // before the wait began (off its CPU before its counters were read, or in its
                // lanes' steps) is the watchdog's, not a stopped process. Judged a stop, the hang
                // would get a second look, and one that ends during it is lost.
                let inWait = timedOut.lateInWait(for: deadline)
                stopSuspected = inWait > 0 && Watchdog.lateBecauseStopped(late: inWait, before: before, after: after)
            } else {
                // Without its own counters the watchdog cannot tell a stop from starvation.
                stopSuspected = late > 0
            }
        case .recording(var hang):
            // Woke far too late, and not for want of a CPU: the process was stopped (SIGSTOP, a
            // debugger) while hung. That time is not the code's.
            // (From the deadline, not only the wait's: a stop often lands in a turn that samples,
            // before its wait. Misjudged, a starved turn flags the report, and loses nothing.)
            // Each such stop adds its lateness to the time the report says the process was stopped.
            guard late < UInt64(Int64.max), late > max(100_000, 4 * hang.recording.sampleIntervalMicroseconds), let before, let after,
                Watchdog.lateBecauseStopped(late: late, before: before, after: after)
            else { return }
            hang.recording.stopSuspected = true
            // A debugger that stopped it is still attached now, if it is to be seen at all.
            hang.recording.context.noteStop(lateMicroseconds: late, tracerPID: probe?.probe.counters(at: woke).tracerPID)
            phase = .recording(hang)
        case .confirming:
            break
        }
    }

    /// Decides what the source's latch shows now, records and samples a hang, and says when to be
    /// stepped again. Called by the watchdog's thread after every wait (a wake-up for another
    /// lane included: every step is safe to repeat early).
    func advance(_ turn: WatchdogTurn) -> WatchdogWait {
        if let timedOut = turn.timedOut { noteLateWake(timedOut) }
        thresholdDeadline = nil
        let wait = decide(turn.environment)
        if case .until(let time) = wait { deadline = time } else { deadline = nil }
        return wait
    }

    private func decide(_ environment: any WatchdogEnvironment) -> WatchdogWait {
        while true {
            switch phase {
            case .recording(var hang):
                if let wait = step(&hang, environment) { return wait }
                continue
            case .confirming(let snapshot, let start, let context, let until):
                if latch.snapshot() != snapshot || stop.isRaised {
                    logger.debug("watchdog woke late; the loop caught up", metadata: ["hangwatch.oversleep_ms": "\(oversleep / 1000)"])
                    // The stretch that just ended is the stopped one, forgiven: not a late hang.
                    _ = latch.takeLateStretch(nowMicroseconds: environment.now())
                    oversleep = 0
                    phase = .watching
                    continue
                }
                if environment.now() < until { return .until(until) }
                startRecording(start: start, snapshot: snapshot, context: context, stopSuspected: stopSuspected, environment)
                oversleep = 0
                continue
            case .watching:
                break
            }
            if stop.isRaised { return .finished }
            let snapshot = latch.snapshot()
            reportLateStretch(environment)
            if control.isPaused {
                tick(.paused, snapshot)
                oversleep = 0
                return park(snapshot, environment)
            }
            let now = environment.now()
            let countFrom = control.countFromMicroseconds.load(ordering: .acquiring)
            let verdict = detector().evaluate(
                snapshot, now: now, countFrom: countFrom, nearMissSampled: nearMisses.sampled(word: snapshot.word))
            if case .idle = verdict { tick(.idle, snapshot) } else { tick(.watching, snapshot) }
            switch verdict {
            case .idle:
                if sawBusy { notePace(environment) }
                sawBusy = false
                oversleep = 0
                return park(snapshot, environment)
            case .waitUntil(let deadline):
                notePace(environment, edge: noteBusyEdge(snapshot, environment))
                noteBusyTask(snapshot, environment)
                sawBusy = true
                let start = max(snapshot.microseconds, countFrom)
                thresholdDeadline = start + control.thresholdMicroseconds.load(ordering: .relaxed) + settings.clockResolutionMicroseconds
                return .until(deadline)
            case .nearMiss(let start):
                noteBusyEdge(snapshot, environment)
                sampleNearMiss(snapshot, start: start, environment)
                continue
            case .hang(let start):
                guard case .busy(let context) = source.confirmBusy() else {
                    // Not busy after all (a run loop asleep in a mode it did not observe, now observed).
                    latch.markIdle(ifUnchanged: snapshot)
                    oversleep = 0
                    continue
                }
                let threshold = control.thresholdMicroseconds.load(ordering: .relaxed)
                if oversleep > max(20_000, threshold / 5) && stopSuspected {
                    // The watchdog itself woke late, and not for want of a CPU: this process was
                    // stopped (SIGSTOP, a debugger), and so was the loop, mid-iteration. Let the
                    // loop catch up before calling it a hang: the stop is not its code's time.
                    // (Late for want of a CPU, the loop really has been busy this long: it is
                    // recorded at once, while it still is, its report saying what the machine
                    // did; a second look would lose a hang that ends during it.)
                    let confirmation = min(threshold / 2, 100_000)
                    phase = .confirming(snapshot: snapshot, start: start, context: context, until: environment.now() + confirmation)
                    continue
                }
                startRecording(start: start, snapshot: snapshot, context: context, stopSuspected: false, environment)
                oversleep = 0
            }
        }
    }

    /// A hang the watchdog did not see while it lasted: kept off its CPU from the loop's busy edge
    /// until after the loop moved again, it finds the loop idle. The loop's own edges, kept by the
    /// latch (`takeLateStretch`), say when it began and ended; it is reported with those, and with
    /// no stack (none could be taken), rather than lost.
    private func reportLateStretch(_ environment: any WatchdogEnvironment) {
        let threshold = control.thresholdMicroseconds.load(ordering: .relaxed)
        latch.setLateStretchThreshold(microseconds: threshold + settings.clockResolutionMicroseconds)
        let now = environment.now()
        guard let late = latch.takeLateStretch(nowMicroseconds: now), !control.isPaused, late.start != lastRecordedStart,
            late.start >= control.countFromMicroseconds.load(ordering: .acquiring)
        else { return }
        statistics.hangsDetected.add(1, ordering: .relaxed)
        let id = naming.nextID(start: environment.date(ofMicroseconds: late.start), serviceName: settings.serviceName)
        let lateness = now &- min(now, late.start + threshold + settings.clockResolutionMicroseconds)
        var recording = HangRecording(
            id: id, startMicroseconds: late.start, detectedMicroseconds: now, activity: late.activity, mode: nil,
            thresholdMicroseconds: threshold, thread: threadSlot.capture.thread, process: environment.processSnapshot(), baseline: nil,
            watchdogOversleepMicroseconds: lateness, stopSuspected: false, maxSamples: settings.maxSamples,
            sampleIntervalMicroseconds: settings.sampleIntervalMicroseconds)
        recording.edges = source.edges
        // Detected after it ended (the report's detectedAt is later than its endedAt: so it was).
        recording.add(StackSample(microseconds: late.end, frames: [], method: nil, truncated: false, failure: .endedBeforeTheWatchdogRan))
        recording.endMicroseconds = late.end
        nearMisses.forget(startMicroseconds: late.start)
        logger.debug("hang seen late", metadata: ["hangwatch.id": "\(id)", "hangwatch.oversleep_ms": "\(lateness / 1000)"])
        sink.hangStarted(recording)
        sink.hangEnded(recording, outcome: .recovered)
        lastRecordedStart = late.start
    }

    /// Blocks until the loop leaves idle (or a control call wakes the watchdog).
    private func park(_ snapshot: ActivitySnapshot, _ environment: any WatchdogEnvironment) -> WatchdogWait {
        .park(WatchdogPark(latch: latch, snapshot: snapshot, stop: stop), deadline: nil)
    }

    private func tick(_ state: HeartbeatPublisher.State, _ snapshot: ActivitySnapshot) {
        seen.note(state, word: snapshot.word)
    }

    /// What this lane gives its directory's heartbeat.
    func heartbeatMember(owner: ObjectIdentifier) -> HeartbeatLane.Member {
        HeartbeatLane.Member(
            owner: owner, seen: seen, latch: latch, control: control, statistics: statistics, pagesLeadUp: source.kind == .runLoop)
    }

    private func startRecording(
        start startMicroseconds: UInt64, snapshot: ActivitySnapshot, context: String?, stopSuspected: Bool,
        _ environment: any WatchdogEnvironment
    ) {
        latch.setRecordingHang(true)
        lastRecordedStart = snapshot.microseconds
        statistics.hangsDetected.add(1, ordering: .relaxed)
        let detected = environment.now()
        let (thread, whyNoThread) = threadSlot.capture
        let id = naming.nextID(start: environment.date(ofMicroseconds: startMicroseconds), serviceName: settings.serviceName)
        var recording = HangRecording(
            id: id, startMicroseconds: startMicroseconds, detectedMicroseconds: detected, activity: snapshot.activity,
            mode: context, thresholdMicroseconds: control.thresholdMicroseconds.load(ordering: .relaxed),
            thread: thread, process: environment.processSnapshot(), baseline: thread.flatMap(environment.schedule(of:)),
            watchdogOversleepMicroseconds: oversleep, stopSuspected: stopSuspected, maxSamples: settings.maxSamples,
            sampleIntervalMicroseconds: settings.sampleIntervalMicroseconds)
        recording.edges = source.edges
        // First: the loop is still in the piece that hung, so the recorder holds only what led up to it.
        recording.leadUp = latch.leadUp.flatMap { recorder -> LeadUpRecord? in
            guard source.leadUpCovers(windowUnits: UInt64(recorder.buckets) * UnsafeLeadUpRecorder.bucketUnits, before: snapshot.word >> 8)
            else { return nil }
            var leadUp = LeadUpRecord.read(recorder, onset: snapshot)
            leadUp.nearMisses = nearMisses.before(
                onset: snapshot.microseconds, word: snapshot.word, windowMicroseconds: UInt64(leadUp.buckets.count) * 100_000)
            notePace(environment)
            if let cpuReadings { leadUp.cpu = cpuReadings.log.figures(of: LeadUpRecord.spans(of: leadUp.buckets, endingAt: leadUp.onsetUnits)) }
            return leadUp
        }
        nearMisses.forget(word: snapshot.word)
        // The reads before the threshold: the source's own looks' and the wakes' in this piece.
        recording.tasks = source.tasksAtLooks()
        if let busyTasks, busyTasks.word == snapshot.word { recording.tasks = recording.tasks?.adding(busyTasks.tasks) ?? busyTasks.tasks }
        busyTasks = nil
        noteContextAtDetection(&recording, snapshot: snapshot, stopSuspected: stopSuspected, environment)
        logger.debug("hang detected", metadata: ["hangwatch.id": "\(id)"])
        takeSample(&recording, thread: thread, whyNoThread: whyNoThread, hang: snapshot, environment)
        noteLabels(&recording, thread: thread)
        noteQueuedTasks(&recording, environment)
        sink.hangStarted(recording)
        phase = .recording(
            Hang(
                recording: recording, snapshot: snapshot, thread: thread, whyNoThread: whyNoThread,
                provisionalSamples: recording.samples.count, provisionalAt: detected,
                nextSample: detected + recording.sampleIntervalMicroseconds))
    }

    /// A hang of the main queue (the main actor's executor): every task read once, here at
    /// detection, after the first sample (the hung thread's stack comes first) and before the
    /// first report: the tasks queued behind the hang are still queued now, while at its end they
    /// are running or done. On the watchdog's thread, bounded as a task dump is
    /// (`UnsafeTaskCensusTaker`); the cost is the report's `queuedTasks.tookMs`.
    private func noteQueuedTasks(_ recording: inout HangRecording, _ environment: any WatchdogEnvironment) {
        guard source.kind == .dispatchMain, let tasks else { return }
        let started = environment.now()
        let census = tasks()
        recording.queuedTasks = QueuedTaskCensus(queue: .mainActor, census: census, tookMicroseconds: environment.now() &- started)
    }

    /// One step of a hang being recorded: ends it when the loop moved (or the monitor stops),
    /// samples it when a sample is due. Returns the next wait, or nil when the hang is over.
    private func step(_ hang: inout Hang, _ environment: any WatchdogEnvironment) -> WatchdogWait? {
        tick(.recording, hang.snapshot)
        if let end = HangDetector.endOfHang(started: hang.snapshot, latest: latch.snapshot()) {
            hang.recording.end(at: end)
            noteContextAtEnd(&hang.recording, environment)
            finish(hang.recording, outcome: .recovered)
            return nil
        }
        let now = environment.now()
        if stop.isRaised {
            hang.recording.endMicroseconds = now
            noteContextAtEnd(&hang.recording, environment)
            finish(hang.recording, outcome: .monitorStopped)
            return nil
        }
        if now < hang.nextSample {
            phase = .recording(hang)
            return .until(hang.nextSample)
        }
        takeSample(&hang.recording, thread: hang.thread, whyNoThread: hang.whyNoThread, hang: hang.snapshot, environment)
        noteLabels(&hang.recording, thread: hang.thread)
        if hang.recording.samples.last?.failure == .threadExited {
            // The stretch will never end by itself: count it as over, and wait for the next busy
            // edge (from another thread) instead of finding the same stretch again.
            hang.recording.endMicroseconds = now
            latch.markIdle(ifUnchanged: hang.snapshot)
            noteContextAtEnd(&hang.recording, environment)
            finish(hang.recording, outcome: .recovered)
            return nil
        }
        // Refresh the provisional report as samples double, and at least every 30 s, so a hang
        // that never ends leaves most of its samples behind.
        if hang.recording.samples.count >= 2 * hang.provisionalSamples
            || now - hang.provisionalAt >= Watchdog.provisionalRefreshMicroseconds
        {
            hang.provisionalSamples = hang.recording.samples.count
            hang.provisionalAt = now
            sink.hangProgressed(hang.recording)
        }
        hang.nextSample = max(now, hang.nextSample) + hang.recording.sampleIntervalMicroseconds
        phase = .recording(hang)
        return .until(hang.nextSample)
    }

    /// A piece past half the threshold (`HangDetector`'s `nearMiss`): one sample of the thread, kept
    /// in `nearMisses` for the lead-up of the next hang. A loop found asleep in a mode it did not
    /// observe is marked idle, as at a hang. A sample completed after the piece ended keeps no
    /// stack (what ran then is not the near miss's).
    private func sampleNearMiss(_ snapshot: ActivitySnapshot, start: UInt64, _ environment: any WatchdogEnvironment) {
        guard case .busy = source.confirmBusy() else {
            latch.markIdle(ifUnchanged: snapshot)
            return
        }
        let (thread, whyNoThread) = threadSlot.capture
        var sample: StackSample
        if let thread {
            sample = sampler.sample(thread, previous: nil, signalAllowed: !environment.processSnapshot().debuggerAttached)
        } else {
            sample = StackSample(microseconds: environment.now(), frames: [], method: nil, truncated: false, failure: whyNoThread)
        }
        if latch.snapshot() != snapshot, !sample.frames.isEmpty {
            sample = StackSample(
                microseconds: sample.microseconds, frames: [], method: nil, truncated: false,
                onCPUNanoseconds: sample.onCPUNanoseconds, runQueueNanoseconds: sample.runQueueNanoseconds, failure: .endedDuringCapture)
        }
        if sample.failure != nil && sample.frames.isEmpty && sample.failure != .endedDuringCapture {
            statistics.captureFailures.add(1, ordering: .relaxed)
        }
        nearMisses.add(NearMissLog.Entry(word: snapshot.word, startMicroseconds: start, sample: sample))
        statistics.nearMisses.add(1, ordering: .relaxed)
    }

    /// The probe of the thread the lane would capture now (made for it at the first need).
    private func contextProbe(_ environment: any WatchdogEnvironment) -> (any HangContextProbing)? {
        guard let thread = threadSlot.capture.thread else { return nil }
        if let probe, probe.thread.tid == thread.tid, probe.thread.startTimeTicks == thread.startTimeTicks { return probe.probe }
        let made = environment.contextProbe(for: thread)
        probe = made.map { (thread, $0) }
        return made
    }

    /// The first look at a busy stretch (its latch word new): its context counters, so that a hang
    /// it becomes counts throttling, a freeze or a stop from here. Once per stretch.
    /// Returns the counters when it read them.
    @discardableResult
    private func noteBusyEdge(_ snapshot: ActivitySnapshot, _ environment: any WatchdogEnvironment) -> HangContextCounters? {
        guard edge?.word != snapshot.word, let probe = contextProbe(environment), let thread = self.probe?.thread else { return nil }
        let counters = probe.edge(at: environment.now())
        edge = (snapshot.word, thread.tid, counters)
        return counters
    }

    /// A wake while the loop is busy: the task its thread runs, where the source knows the
    /// thread's current-task word (`busyTasks`; a few reads a piece, one per wake), read before
    /// the look that confirms the piece still runs.
    private func noteBusyTask(_ snapshot: ActivitySnapshot, _ environment: any WatchdogEnvironment) {
        guard let thread = threadSlot.capture.thread, let word = source.taskWord(of: thread.tid) else { return }
        // A read that found no task dates nothing (a job seen later began after it): not kept.
        guard let task = UnsafeCurrentTaskSlot.taskID(slot: word), task != 0, latch.snapshot() == snapshot else { return }
        var tasks = SampledTasks()
        if let busyTasks, busyTasks.word == snapshot.word { tasks = busyTasks.tasks }
        tasks.note(task, at: environment.now())
        busyTasks = (snapshot.word, tasks)
    }

    /// A wake while the loop is busy, or the look that found a stretch ended: the thread's CPU
    /// readings for the lead-up (`edge`: the busy edge's counters, just read).
    private func notePace(_ environment: any WatchdogEnvironment, edge: HangContextCounters? = nil) {
        guard let cpuReadings, let probe = contextProbe(environment), let tid = self.probe?.thread.tid else { return }
        cpuReadings.log.note(edge ?? probe.pace(at: environment.now()), tid: tid)
    }

    /// At detection: the facts (the limit, the freezer's cgroup, the pressure's source) and the
    /// counters the figures start from: the busy stretch's first look's, when it looked at this
    /// thread (with the tracer now), else detection's.
    private func noteContextAtDetection(
        _ recording: inout HangRecording, snapshot: ActivitySnapshot, stopSuspected: Bool, _ environment: any WatchdogEnvironment
    ) {
        guard let probe = contextProbe(environment), let thread = recording.thread, self.probe?.thread.tid == thread.tid else { return }
        recording.context.facts = probe.facts()
        var start = probe.counters(at: environment.now())
        recording.context.note(counters: start)
        let fromEdge = edge.map { $0.word == snapshot.word && $0.tid == thread.tid } ?? false
        if fromEdge, let edge {
            let tracer = start.tracerPID
            start = edge.counters
            start.tracerPID = tracer
        }
        recording.context.start = start
        if stopSuspected { recording.context.noteStop(lateMicroseconds: oversleep, tracerPID: nil, beforeStart: !fromEdge) }
    }

    /// At the end (the loop moved, the monitor stopped): the counters the figures end with.
    private func noteContextAtEnd(_ recording: inout HangRecording, _ environment: any WatchdogEnvironment) {
        guard recording.context.start != nil, let probe = probe?.probe else { return }
        let end = probe.counters(at: environment.now())
        recording.context.note(counters: end)
        recording.context.end = end
    }

    private func finish(_ recording: HangRecording, outcome: HangReport.Outcome) {
        // The loop moved: a thread stuck in dlopen has left it, so the loader may be asked again.
        images?.refreshIfNeeded(for: recording.samples.flatMap(\.frames))
        sink.hangEnded(recording, outcome: outcome)
        logger.debug("hang ended", metadata: ["hangwatch.id": "\(recording.id)", "hangwatch.outcome": "\(outcome.rawValue)"])
        latch.setRecordingHang(false)
        phase = .watching
        oversleep = 0
    }

    /// The labels in effect on the hung thread (`HangMonitor.withLabels`), until some are found.
    private func noteLabels(_ recording: inout HangRecording, thread: MonitoredThread?) {
        guard recording.labels == nil, let thread else { return }
        let sets = LabelsInEffect.read(thread)
        if !sets.isEmpty { recording.labels = sets }
    }

    /// Samples the hung thread into `recording`. A sample completed after the loop moved on
    /// (`hang`, its latch word when the hang began, is gone) may show what came after the hang (the
    /// loop asleep in its own wait): its stack is not kept. On a busy machine the watchdog can be
    /// taken off its CPU between its look at the latch and the sample for many milliseconds.
    private func takeSample(
        _ recording: inout HangRecording, thread: MonitoredThread?, whyNoThread: StackSample.Failure, hang: ActivitySnapshot,
        _ environment: any WatchdogEnvironment
    ) {
        var sample: StackSample
        var taskReads: (before: UInt64?, after: UInt64?)?
        if let thread {
            // Where the source knows the thread's current-task word: the task it ran before and after.
            let taskWord = source.taskWord(of: thread.tid)
            let taskBefore = taskWord.flatMap(UnsafeCurrentTaskSlot.taskID(slot:))
            sample = sampler.sample(
                thread, previous: recording.samples.last, signalAllowed: !recording.process.debuggerAttached)
            // A stack that stopped in code no known image holds (a library still being loaded):
            // learn the image without the loader's lock and take the stack again.
            if sample.truncated, !sample.frames.isEmpty, images?.learnDuringHang(addresses: sample.frames) == true {
                sample = sampler.sample(thread, previous: nil, signalAllowed: !recording.process.debuggerAttached)
            }
            if let taskWord {
                let taskAfter = UnsafeCurrentTaskSlot.taskID(slot: taskWord)
                if let taskBefore, taskBefore != 0, taskAfter == taskBefore { sample.taskID = taskBefore }
                taskReads = (taskBefore, taskAfter)
            }
        } else {
            sample = StackSample(
                microseconds: environment.now(), frames: [], method: nil, truncated: false, failure: whyNoThread)
        }
        let movedOn = latch.snapshot() != hang
        // The reads count only while the hang lasted: after it, the thread may run the next job.
        if let taskReads, !movedOn {
            var tasks = recording.tasks ?? SampledTasks()
            tasks.note(taskReads.before, at: sample.microseconds)
            tasks.note(taskReads.after, at: sample.microseconds)
            recording.tasks = tasks
        }
        if movedOn, !sample.frames.isEmpty {
            // What the thread was doing then is after the hang: none of it is the hang's. A sample
            // after the first is left out (the hang is over; the next step ends it); the first is
            // kept without its stack, so that the report says what happened.
            guard recording.samples.isEmpty else { return }
            sample = StackSample(
                microseconds: sample.microseconds, frames: [], method: nil, truncated: false,
                onCPUNanoseconds: sample.onCPUNanoseconds, runQueueNanoseconds: sample.runQueueNanoseconds, failure: .endedDuringCapture)
        }
        if sample.failure != nil && sample.frames.isEmpty && sample.failure != .endedDuringCapture {
            statistics.captureFailures.add(1, ordering: .relaxed)
        }
        let look = (recording.context.facts == nil ? nil : probe?.probe).map { $0.look(at: sample.microseconds) }
        if let look { recording.context.note(look: look, sample: sample) }
        // The sample's own scheduler counters (and the look's throttling) go on the CPU readings:
        // the next hang's lead-up covers this one too, however long it lasted.
        if let cpuReadings, let thread, let onCPU = sample.onCPUNanoseconds, let queued = sample.runQueueNanoseconds {
            cpuReadings.log.note(
                HangContextCounters(
                    microseconds: sample.microseconds, schedule: ProcTask.SchedStat(onCPUNanoseconds: onCPU, runQueueNanoseconds: queued),
                    throttling: look?.throttling),
                tid: thread.tid)
        }
        if let thread, let waits, sample.failure == nil, sample.blockedKey != nil,
            let observation = waits.inspect(tid: thread.tid, sample: sample, signalAllowed: !recording.process.debuggerAttached)
        {
            recording.add(wait: observation)
        }
        recording.add(sample)
    }
}
