import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Logging
import Testing

/// A monitor made as `HangMonitor.start` makes one (`MonitorAssembly`), from a scripted world: the
/// loop's activities, stops, stalls and threshold changes are events of a `ScriptedClock`, samples
/// come from a `ScriptedSampler`, and the watchdog runs on the test's thread. What its hang lane
/// hands on is recorded (`sink`) on its way to the monitor's real writer, which writes reports into
/// `directory`. Every decision is then a function of the script: no threads, no sleeps, the same
/// result on every run.
final class WatchdogHarness {
    typealias Activity = HangMonitor.Activity

    let clock: ScriptedClock
    let environment: FakeWatchdogEnvironment
    let sampler: ScriptedSampler
    let sink = RecordingSink()
    let source = ScriptedSource()
    let control: WatchdogControl
    let statistics = MonitorStatistics()
    /// Where the reports go (a joined harness writes to the first one's, through its writer).
    let directory: ReportDirectory
    /// The monitor as started: its latch, lanes, watchdog and writer.
    let assembly: MonitorAssembly
    var latch: ActivityLatch { assembly.latch }
    var writer: ReportWriter { assembly.writer }
    /// The monitored thread the watchdog finds attached (nil: not attached yet).
    var thread: MonitoredThread? = .scripted

    /// When the script starts: `t(0)`.
    let origin: UInt64

    /// `joining`: another loop of the same process (`run(together:)`): the same scripted time and
    /// runtime (so the same watchdog), the same directory (so the same writer), a latch, source,
    /// sampler and control of its own.
    /// `configure`: the monitor's configuration beyond these settings; `logger`: the monitor's.
    init(
        thresholdMilliseconds: UInt64 = 250, sampleIntervalMilliseconds: UInt64 = 50, maxSamples: Int = 100,
        clockResolutionMicroseconds: UInt64 = 4_000, busy: Set<Activity> = [.beforeSources, .afterWaiting],
        joining other: WatchdogHarness? = nil, configure: (inout HangMonitor.Configuration) -> Void = { _ in },
        logger: Logger = Logger(label: "hangwatch.tests", factory: { _ in SwiftLogNoOpLogHandler() }),
        taskLayout: SwiftTaskLayout = .recognised, processEnvironment: [String: String] = [:], waits: ScriptedWaitInspector? = nil,
        dumps: MonitorWorld.Dumps? = nil, pool: MonitorWorld.Pool? = nil, scriptedClock: ScriptedClock? = nil,
        resource: WorkloadIdentity? = nil
    ) {
        clock = other?.clock ?? scriptedClock ?? ScriptedClock()
        origin = other?.origin ?? clock.now
        environment = other?.environment ?? FakeWatchdogEnvironment(clock: clock)
        sampler = ScriptedSampler(clock: clock)
        control = WatchdogControl(thresholdMicroseconds: thresholdMilliseconds * 1000)
        directory = other?.directory ?? ReportDirectory()
        var configuration = HangMonitor.Configuration(
            serviceName: "scripted", threshold: .milliseconds(Int64(thresholdMilliseconds)), reportDirectory: directory.path)
        configuration.sampleInterval = .milliseconds(Int64(sampleIntervalMilliseconds))
        configuration.maxSamplesPerHang = maxSamples
        configuration.busyActivities = busy
        configuration.heartbeatInterval = .zero
        configuration.watchesConcurrencyPool = pool != nil
        configure(&configuration)
        var world = MonitorWorld.scripted(
            environment: environment, clock: clock, sampler: sampler, clockResolutionMicroseconds: clockResolutionMicroseconds,
            sinkBeforeWriter: { [sink] writer in
                sink.forward = writer
                return sink
            })
        world.taskLayout = taskLayout
        if let waits { world.waits = { _ in waits } }
        world.dumps = dumps
        if let pool { world.pool = { _ in pool } }
        // Loops of one watchdog are of one process: one runtime (the watchdog, the directory's
        // writer, report ids, dump serving).
        if let other { world.runtime = other.assembly.world.runtime }
        // The process's environment is the script's; its executable has no build-id.
        world.serviceVersion = { ServiceVersion.resolve(configured: $0, environment: processEnvironment, buildID: { nil }) }
        world.resource = resource
        let owner = MonitorAssembly.Owner(
            id: ObjectIdentifier(control), control: control, statistics: statistics, logger: logger, enricher: nil)
        assembly = try! MonitorAssembly(configuration: configuration, source: source, handles: .none, world: world, owner: owner)
        restart = { [source] in try! MonitorAssembly(configuration: configuration, source: source, handles: .none, world: world, owner: owner) }
        if other == nil {
            // The writer's queue is done with what was handed to it before the script goes on.
            clock.beforeTimeMoves = { [weak writer = assembly.writer] in writer?.queue.sync {} }
        }
    }

    /// Another start of the same monitor (its control and statistics): what
    /// `HangMonitor.start` makes when it is started again.
    let restart: () -> MonitorAssembly

    /// The script's instant `milliseconds` after its start, in the clock's microseconds.
    func t(_ milliseconds: Double) -> UInt64 { origin + UInt64(milliseconds * 1000) }

    /// Milliseconds since the script's start of clock instant `microseconds`.
    func ms(_ microseconds: UInt64) -> Double { Double(Int64(microseconds) - Int64(origin)) / 1000 }

    /// The loop records `activity` at `milliseconds` (as its observer would; wakes a parked watchdog
    /// on an idle-to-busy edge).
    func loop(_ activity: Activity, at milliseconds: Double) {
        loop(activity, at: milliseconds, seenAt: milliseconds)
    }

    /// The loop records `activity` stamped `milliseconds`, but only at `seen` does the record reach
    /// the latch (the observer was preempted between reading the clock and storing).
    func loop(_ activity: Activity, at milliseconds: Double, seenAt seen: Double) {
        let time = t(milliseconds)
        clock.at(t(seen)) { [latch] in latch.record(activity.rawValue, atMicroseconds: time) }
    }

    /// One loop iteration's work: busy from `start` for `duration` milliseconds, then asleep.
    func busy(from start: Double, for duration: Double, as activity: Activity = .afterWaiting) {
        loop(activity, at: start)
        loop(.beforeWaiting, at: start + duration)
    }

    /// `HangMonitor.stop()` at `milliseconds`: the lanes stop, and once the watchdog let them go,
    /// the monitor's reports are through the writer and the directory is let go (the last monitor
    /// of it closes it: held reports written, its lanes finish).
    func stop(at milliseconds: Double) {
        clock.at(t(milliseconds)) { [assembly] in assembly.end() }
    }

    /// Runs `action` at `milliseconds`, then wakes the watchdog as the monitor's control calls do.
    func control(at milliseconds: Double, _ action: @escaping (WatchdogControl) -> Void) {
        clock.at(t(milliseconds)) { [control, latch] in
            action(control)
            latch.wake.signal()
        }
    }

    /// Runs the watchdog until it is stopped (by a `stop(at:)`, or when the script has nothing left
    /// while it waits for the loop), with `lanes` beside the monitor's own. (Reports may still be
    /// being written: `writer.flush()` waits for them.)
    func run(with lanes: [any WatchdogLane] = []) {
        clock.whenScriptEnds = { [assembly] in assembly.end() }
        begin()
        for lane in lanes { assembly.watchdog.add(lane) }
        assembly.watchdog.run()
    }

    /// `HangMonitor.start`'s part after the assembly is made: the monitored thread attached (when
    /// `thread` is set), the lanes enlisted on the watchdog.
    func begin() {
        if let thread { assembly.threadSlot.set(thread) }
        try! assembly.begin()
    }

    /// Runs one watchdog over every harness in `harnesses` (made `joining` the first) until each is
    /// stopped (by its `stop(at:)`, or all of them when the script has nothing left).
    static func run(together harnesses: [WatchdogHarness]) {
        let first = harnesses[0]
        first.clock.whenScriptEnds = {
            for harness in harnesses { harness.assembly.end() }
        }
        for harness in harnesses { harness.begin() }
        first.assembly.watchdog.run()
    }

    /// The hangs handed on as ended, with their outcome.
    var hangs: [(recording: HangRecording, outcome: HangReport.Outcome)] { sink.ended }
}

/// What the watchdog handed on, in order.
final class RecordingSink: HangSink, @unchecked Sendable {
    enum Event {
        case started(HangRecording)
        case progressed(HangRecording)
        case ended(HangRecording, HangReport.Outcome)
    }

    private(set) var events: [Event] = []
    /// Where each event goes on to as it happens (a real `ReportWriter`, say).
    var forward: (any HangSink)?

    func hangStarted(_ recording: HangRecording) {
        events.append(.started(recording))
        forward?.hangStarted(recording)
    }
    func hangProgressed(_ recording: HangRecording) {
        events.append(.progressed(recording))
        forward?.hangProgressed(recording)
    }
    func hangEnded(_ recording: HangRecording, outcome: HangReport.Outcome) {
        events.append(.ended(recording, outcome))
        forward?.hangEnded(recording, outcome: outcome)
    }

    var started: [HangRecording] {
        events.compactMap { if case .started(let recording) = $0 { recording } else { nil } }
    }
    var progressed: [HangRecording] {
        events.compactMap { if case .progressed(let recording) = $0 { recording } else { nil } }
    }
    var ended: [(recording: HangRecording, outcome: HangReport.Outcome)] {
        events.compactMap { if case .ended(let recording, let outcome) = $0 { (recording, outcome) } else { nil } }
    }
}

extension MonitorWorld {
    /// Scripted time and samples; the watchdog stepped by the test (no thread); no signal handler;
    /// `sinkBeforeWriter` sees each recording before the writer.
    static func scripted(
        environment: FakeWatchdogEnvironment, clock: ScriptedClock, sampler: ScriptedSampler, clockResolutionMicroseconds: UInt64 = 4_000,
        sinkBeforeWriter: (@Sendable (any HangSink) -> any HangSink)? = nil
    ) -> MonitorWorld {
        MonitorWorld(
            runtime: ProcessRuntime(environment: environment, startsThreads: false), clock: clock,
            clockResolutionMicroseconds: clockResolutionMicroseconds, installCapture: { _ in }, sampler: { _ in sampler }, waits: { _ in nil },
            host: "test-host", pid: 4242, process: HangReport.Process(executable: "/usr/bin/scripted", startTimeTicks: 1),
            sinkBeforeWriter: sinkBeforeWriter)
    }
}

/// A source whose confirmation the test decides; it feeds nothing itself (the script does).
final class ScriptedSource: ActivitySource, @unchecked Sendable {
    let kind = ActivitySourceKind.runLoop
    /// The answer to each `confirmBusy()`.
    var confirmation: () -> BusyConfirmation = { .busy(context: "kCFRunLoopDefaultMode") }
    private(set) var confirmations = 0

    func start(edges: ActivityLatch, attach: @escaping @Sendable () -> Void) throws {}

    func confirmBusy() -> BusyConfirmation {
        confirmations += 1
        return confirmation()
    }

    func stop() {}
    var edges: ActivityEdges { .exact }
}

extension ReportWriter {
    /// Waits until everything handed on so far has been through the policy (and written, where it
    /// was admitted), without writing held reports early.
    func waitUntilQueueIsEmpty() {
        queue.sync {}
    }
}

/// A `WaitInspecting` whose looks the test scripts: what each look at a blocked thread finds
/// (`next`, given the sample in hand, stamped with the scripted time), and every look asked for.
final class ScriptedWaitInspector: WaitInspecting, @unchecked Sendable {
    var next: (_ sample: StackSample) -> WaitObservation? = { _ in nil }
    /// Every look: the thread, the sample's time, whether a holder could be signalled.
    private(set) var asked: [(tid: Int32, microseconds: UInt64, signalAllowed: Bool)] = []

    init() {}

    func inspect(tid: Int32, sample: StackSample, signalAllowed: Bool) -> WaitObservation? {
        asked.append((tid, sample.microseconds, signalAllowed))
        return next(sample)
    }

    /// A thread blocked in `futex` on the mutex at `address`, as the sampler reads it from `/proc`
    /// (its call's arguments in `blockedKey`: what makes the lane ask what it waits on).
    static func blockedOnMutex(address: UInt = 0x7f00_0040) -> StackSample {
        var sample = ScriptedSampler.blocked([0x2010, 0x1020, 0x1030], syscall: Syscalls.futex)
        sample.blockedKey = [UInt(Syscalls.futex), address, 0x80, 0, 0, 0, 0x2010]
        return sample
    }
}
