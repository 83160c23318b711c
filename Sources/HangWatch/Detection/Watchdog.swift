import Dispatch
import Foundation
import HangWatchReport
import Logging
import Synchronization

/// The watchdog. It sleeps while the loop sleeps (parked on the latch's semaphore, woken by the
/// loop's next idle-to-busy transition), sleeps until the threshold deadline while the loop is
/// busy, and when the deadline passes with no progress it records the hang: samples every
/// `sampleInterval` until the loop moves, then hands the finished hang to the sink.
///
/// Everything it decides depends only on the time and waits of its `environment`, the latch's
/// words, the source's confirmation and the samples its `sampler` returns: `run()` runs on its
/// own thread in a monitor (`start()`), or on a test's thread against a scripted environment.
final class Watchdog: @unchecked Sendable {
    struct Settings: Sendable {
        var busyMask: UInt8
        var sampleIntervalMicroseconds: UInt64
        var maxSamples: Int
        var clockResolutionMicroseconds: UInt64
        var serviceName: String
        /// With a heartbeat, the watchdog wakes at least this often to publish it.
        var heartbeatIntervalMicroseconds: UInt64 = 0
    }

    private let settings: Settings
    private let source: any ActivitySource
    private let latch: ActivityLatch
    private let control: WatchdogControl
    private let threadSlot: ThreadSlot
    private let sampler: any StackSampling
    private let environment: any WatchdogEnvironment
    private let sink: any HangSink
    /// Nil in tests that script samples: no image table to keep current.
    private let images: ImageRegistry?
    private let statistics: MonitorStatistics
    private let logger: Logger
    private let heartbeat: HeartbeatPublisher?
    private let finished = DispatchSemaphore(value: 0)
    /// Numbers hangs across every monitor in the process, so report ids (and file names) of
    /// monitors sharing a directory never collide.
    private static let hangSequence = Atomic<Int>(0)

    /// The id of a new report (watchdog or pool watch): its start on the wall clock (`namingTime`),
    /// the service, the pid and the process-wide sequence number.
    static func nextReportID(start: Date, serviceName: String) -> String {
        let sequence = hangSequence.add(1, ordering: .relaxed).newValue
        return ReportTimestamp.compact(namingTime(start)) + "-" + serviceName + "-" + String(getpid()) + "-" + String(sequence)
    }

    init(
        settings: Settings, source: any ActivitySource, latch: ActivityLatch, control: WatchdogControl,
        threadSlot: ThreadSlot, sampler: any StackSampling, environment: any WatchdogEnvironment, sink: any HangSink,
        images: ImageRegistry?, statistics: MonitorStatistics, logger: Logger, heartbeat: HeartbeatPublisher? = nil
    ) {
        self.settings = settings
        self.source = source
        self.latch = latch
        self.control = control
        self.threadSlot = threadSlot
        self.sampler = sampler
        self.environment = environment
        self.sink = sink
        self.images = images
        self.statistics = statistics
        self.logger = logger
        self.heartbeat = heartbeat
    }

    /// The watchdog thread's name, as `top -H` and `/proc/<pid>/task/*/comm` show it (15 bytes at most).
    static let threadName = "hangwatch-wdog"

    /// Runs the watchdog on a thread of its own until `control.stopRequested` is set and `join()`ed.
    func start() {
        NamedThread.start(Self.threadName, stackSize: 1 << 20) { [self] in
            self.run()
            self.finished.signal()
        }
    }

    /// Waits for the watchdog thread to finish after `control.stopRequested` was set.
    func join() {
        latch.wake.signal()
        finished.wait()
    }

    private func detector() -> HangDetector {
        HangDetector(
            thresholdMicroseconds: control.thresholdMicroseconds.load(ordering: .relaxed), busyMask: settings.busyMask,
            clockResolutionMicroseconds: settings.clockResolutionMicroseconds)
    }

    /// The watchdog's loop, until `control.stopRequested` is set.
    func run() {
        var oversleep: UInt64 = 0
        var stopSuspected = false
        while !control.isStopping {
            let snapshot = latch.snapshot()
            if control.isPaused {
                tick(.paused, snapshot)
                park(whileUnchanged: snapshot)
                oversleep = 0
                continue
            }
            let now = environment.now()
            let countFrom = control.countFromMicroseconds.load(ordering: .acquiring)
            let verdict = detector().evaluate(snapshot, now: now, countFrom: countFrom)
            if case .idle = verdict { tick(.idle, snapshot) } else { tick(.watching, snapshot) }
            switch verdict {
            case .idle:
                park(whileUnchanged: snapshot)
                oversleep = 0
            case .waitUntil(let deadline):
                let before = environment.ownSchedule()
                if !environment.wait(latch.wake, until: deadline) {
                    let woke = environment.now()
                    oversleep = woke > deadline ? woke - deadline : 0
                    if oversleep > 0, let before, let after = environment.ownSchedule() {
                        stopSuspected = Self.lateBecauseStopped(late: oversleep, before: before, after: after)
                    }
                }
            case .hang(let start):
                guard case .busy(let context) = source.confirmBusy() else {
                    // Not busy after all (a run loop asleep in a mode it did not observe, now observed).
                    latch.markIdle(ifUnchanged: snapshot)
                    oversleep = 0
                    continue
                }
                let threshold = control.thresholdMicroseconds.load(ordering: .relaxed)
                let late = oversleep > max(20_000, threshold / 5)
                if late {
                    // The watchdog itself woke late: this process was stopped or starved. Let the
                    // loop catch up before calling it a hang.
                    let confirmation = min(threshold / 2, 100_000)
                    _ = environment.wait(latch.wake, until: environment.now() + confirmation)
                    if latch.snapshot() != snapshot || control.isStopping {
                        logger.debug("watchdog woke late; the loop caught up", metadata: ["hangwatch.oversleep_ms": "\(oversleep / 1000)"])
                        oversleep = 0
                        continue
                    }
                }
                record(startMicroseconds: start, snapshot: snapshot, context: context, oversleep: oversleep,
                       stopSuspected: late && stopSuspected)
                oversleep = 0
            }
        }
    }

    /// Blocks until the loop leaves idle (or a control call wakes us), unless it already has. With
    /// a heartbeat, wakes at least once per heartbeat interval to publish it.
    private func park(whileUnchanged snapshot: ActivitySnapshot) {
        let current = latch.park()
        if current == snapshot && !control.isStopping {
            let deadline = heartbeat == nil ? nil : environment.now() + settings.heartbeatIntervalMicroseconds
            _ = environment.wait(latch.wake, until: deadline)
        }
        latch.unpark()
    }

    private func tick(_ state: HeartbeatPublisher.State, _ snapshot: ActivitySnapshot) {
        heartbeat?.tick(
            state, activityWord: snapshot.word, hangsDetected: UInt64(statistics.hangsDetected.load(ordering: .relaxed)),
            hangsSuppressed: UInt64(statistics.hangsSuppressed.load(ordering: .relaxed)),
            thresholdMicroseconds: control.thresholdMicroseconds.load(ordering: .relaxed), loopHistogram: latch.loopHistogram)
    }

    /// The last time put into a report id, in milliseconds since 1970 (process-wide).
    private static let lastNamingMilliseconds = Atomic<Int64>(0)

    /// The time a report id starts with: the hang's start on the wall clock, but never earlier than
    /// the previous id's. Ids sort oldest first, and retention removes the first ones: after the
    /// wall clock is set back, a new report must not pass for an old one.
    static func namingTime(_ start: Date) -> Date {
        let wanted = Int64((start.timeIntervalSince1970 * 1000).rounded(.down))
        var previous = lastNamingMilliseconds.load(ordering: .relaxed)
        while true {
            let chosen = max(wanted, previous + 1)
            let (exchanged, original) = lastNamingMilliseconds.compareExchange(
                expected: previous, desired: chosen, ordering: .relaxed)
            if exchanged { return Date(timeIntervalSince1970: Double(chosen) / 1000) }
            previous = original
        }
    }

    private func record(
        startMicroseconds: UInt64, snapshot: ActivitySnapshot, context: String?, oversleep: UInt64, stopSuspected: Bool
    ) {
        latch.setRecordingHang(true)
        defer { latch.setRecordingHang(false) }
        statistics.hangsDetected.add(1, ordering: .relaxed)
        let detected = environment.now()
        let (thread, vacancy) = threadSlot.capture
        let id = Self.nextReportID(start: environment.date(ofMicroseconds: startMicroseconds), serviceName: settings.serviceName)
        var recording = HangRecording(
            id: id, startMicroseconds: startMicroseconds, detectedMicroseconds: detected, activity: snapshot.activity,
            mode: context, thresholdMicroseconds: control.thresholdMicroseconds.load(ordering: .relaxed),
            thread: thread, process: environment.processSnapshot(), baseline: thread.flatMap(environment.schedule(of:)),
            watchdogOversleepMicroseconds: oversleep, stopSuspected: stopSuspected, maxSamples: settings.maxSamples,
            sampleIntervalMicroseconds: settings.sampleIntervalMicroseconds)
        recording.edges = source.edges
        logger.debug("hang detected", metadata: ["hangwatch.id": "\(id)"])

        takeSample(&recording, thread: thread, vacancy: vacancy)
        sink.hangStarted(recording)

        var provisionalSamples = recording.samples.count
        var provisionalAt = detected
        var nextSample = detected + recording.sampleIntervalMicroseconds
        var outcome = HangReport.Outcome.recovered
        while true {
            if control.isStopping {
                recording.endMicroseconds = environment.now()
                outcome = .monitorStopped
                break
            }
            let before = environment.ownSchedule()
            if !environment.wait(latch.wake, until: nextSample), !recording.stopSuspected {
                // Woke far too late, and not for want of a CPU: the process was stopped (SIGSTOP,
                // a debugger) while hung. That time is not the code's.
                let late = environment.now() &- nextSample
                if late < UInt64(Int64.max), late > max(100_000, 4 * recording.sampleIntervalMicroseconds),
                    let before, let after = environment.ownSchedule()
                {
                    recording.stopSuspected = Self.lateBecauseStopped(late: late, before: before, after: after)
                }
            }
            tick(.recording, snapshot)
            if let end = HangDetector.endOfHang(started: snapshot, latest: latch.snapshot()) {
                recording.end(at: end)
                break
            }
            if control.isStopping { continue }
            let now = environment.now()
            if now < nextSample { continue }
            takeSample(&recording, thread: thread, vacancy: vacancy)
            if recording.samples.last?.failure == .threadExited {
                // The stretch will never end by itself: count it as over, and wait for the next
                // busy edge (from another thread) instead of finding the same stretch again.
                recording.endMicroseconds = now
                latch.markIdle(ifUnchanged: snapshot)
                break
            }
            // Refresh the provisional report as samples double, and at least every 30 s, so a hang
            // that never ends leaves most of its samples behind.
            if recording.samples.count >= 2 * provisionalSamples || now - provisionalAt >= Self.provisionalRefreshMicroseconds {
                provisionalSamples = recording.samples.count
                provisionalAt = now
                sink.hangProgressed(recording)
            }
            nextSample = max(now, nextSample) + recording.sampleIntervalMicroseconds
        }
        // The loop moved: a thread stuck in dlopen has left it, so the loader may be asked again.
        images?.refreshIfNeeded(for: recording.samples.flatMap(\.frames))
        sink.hangEnded(recording, outcome: outcome)
        logger.debug("hang ended", metadata: ["hangwatch.id": "\(id)", "hangwatch.outcome": "\(outcome.rawValue)"])
    }

    private func takeSample(_ recording: inout HangRecording, thread: MonitoredThread?, vacancy: StackSample.Failure) {
        var sample: StackSample
        if let thread {
            sample = sampler.sample(
                thread, previous: recording.samples.last, signalAllowed: !recording.process.debuggerAttached)
            // A stack that stopped in code no known image holds (a library still being loaded):
            // learn the image without the loader's lock and take the stack again.
            if sample.truncated, !sample.frames.isEmpty, images?.learnDuringHang(addresses: sample.frames) == true {
                sample = sampler.sample(thread, previous: nil, signalAllowed: !recording.process.debuggerAttached)
            }
        } else {
            sample = StackSample(
                microseconds: environment.now(), frames: [], method: nil, truncated: false, failure: vacancy)
        }
        if sample.failure != nil && sample.frames.isEmpty {
            statistics.captureFailures.add(1, ordering: .relaxed)
        }
        recording.add(sample)
    }

    /// Whether the watchdog, `late` microseconds late out of a wait, was stopped rather than starved.
    /// Starved, the time was spent runnable on a run queue (its own schedstat from `before` to
    /// `after` shows it); stopped (SIGSTOP, a debugger), it was not.
    static func lateBecauseStopped(late: UInt64, before: ProcTask.SchedStat, after: ProcTask.SchedStat) -> Bool {
        let queued = (after.runQueueNanoseconds &- before.runQueueNanoseconds) / 1000
        return queued * 2 < late
    }

    /// A long hang's provisional report is rewritten at least this often.
    static let provisionalRefreshMicroseconds: UInt64 = 30_000_000
}
