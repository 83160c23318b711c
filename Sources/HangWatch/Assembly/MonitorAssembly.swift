import Foundation
@_spi(Internal) import HangWatchReport
import Logging
import Synchronization

/// One start of a monitor, whole: the handle `start` makes, with what is this watch's own (its
/// source and latch, its hang lane and the source's timer lane, its threshold through the owner's
/// control, its stop) and its places in what the process shares (`ProcessRuntime`: the watchdog
/// its lanes join, the report directory whose writer and heartbeat it shares with every monitor
/// writing there, the pool watch it offers to run). Made from the configuration and a
/// `MonitorWorld` with no lock held (the directory prepared, the signal handler installed, the
/// directory held, nothing started); `HangMonitor.start` swaps it in and `begin`s it, `stop` `end`s
/// it. Tests make one the same way from a scripted world and step the watchdog on their own thread.
final class MonitorAssembly: Sendable {
    /// What the monitor that owns the assembly keeps across starts.
    struct Owner: Sendable {
        var id: ObjectIdentifier
        var control: WatchdogControl
        var statistics: MonitorStatistics
        var logger: Logger
        var enricher: (any HangReportEnricher)?
    }

    let configuration: HangMonitor.Configuration
    let world: MonitorWorld
    let owner: Owner
    let source: any ActivitySource
    /// What the source can do beyond the common lifecycle, typed by the `start…` that made it.
    let handles: HangMonitor.SourceHandles
    let latch: ActivityLatch
    let hangLane: HangLane
    let threadSlot: ThreadSlot
    /// The report directory, shared with the other monitors of the process writing to it.
    let directory: SharedReportDirectory
    /// This monitor's reports, on their way to the directory's writer.
    let reports: MonitorReports
    let builder: ReportBuilder
    let images: ImageRegistry
    let signal: Int32
    /// This start's stop: its lanes finish once it is raised (`end`).
    let stop = StopFlag()
    /// This start's own lanes of the watchdog, once begun (the hang lane, the source's timer lane
    /// when it has one).
    private let lanes = Mutex<[any WatchdogLane]>([])
    /// Whether `end` ran, and whether the directory was let go (by `end` or `discard`): once each.
    private let ended = Atomic<Bool>(false)
    private let released = Atomic<Bool>(false)

    /// The process's watchdog, which this start's lanes join.
    var watchdog: Watchdog { world.runtime.watchdog }
    /// The directory's writer.
    var writer: ReportWriter { directory.writer }

    /// Sets up everything `begin` needs; throws `HangMonitorError` when the directory cannot be
    /// used, when monitors already writing to it have other directory settings, or when the signal
    /// handler cannot be installed.
    init(
        configuration: HangMonitor.Configuration, source: any ActivitySource, handles: HangMonitor.SourceHandles,
        world: MonitorWorld, owner: Owner
    ) throws {
        self.configuration = configuration
        self.world = world
        self.owner = owner
        self.source = source
        self.handles = handles
        let runtime = world.runtime
        let store = try Self.preparedStore(configuration)
        signal = configuration.captureSignal ?? CaptureSignal.defaultSignal
        try world.installCapture(signal)
        if configuration.stampsContinueSignal { world.installContinueStamp() }
        latch = ActivityLatch(
            busyActivities: configuration.busyActivities,
            loopHistogram: configuration.loopHistogram && configuration.heartbeatInterval != .zero,
            leadUpBuckets: source.kind == .runLoop || source.kind == .nioEventLoop ? configuration.leadUpBuckets : 0,
            leadUpWrittenBySource: source.kind == .nioEventLoop, wake: runtime.watchdog.wake)
        threadSlot = ThreadSlot()
        images = runtime.images(logger: owner.logger)
        builder = Self.reportBuilder(configuration, world: world, signal: signal, kind: source.kind)
        let capture = MonitorWorld.Capture(
            signal: signal, maxFrames: configuration.maxFrames,
            timeoutNanoseconds: DurationText.nanoseconds(configuration.captureTimeout), images: images)
        directory = try Self.heldDirectory(
            configuration, store: store, owner: owner, world: world, builder: builder, images: images, capture: capture)
        reports = MonitorReports(
            writer: directory.writer, builder: builder,
            origin: ReportOrigin(statistics: owner.statistics, logger: owner.logger, enricher: owner.enricher))
        hangLane = HangLane(
            settings: Self.watchdogSettings(configuration, world: world), source: source, latch: latch, control: owner.control,
            stop: stop, threadSlot: threadSlot, sampler: world.sampler(capture), sink: world.sinkBeforeWriter?(reports) ?? reports,
            images: images, statistics: owner.statistics, logger: owner.logger, waits: world.waits(capture),
            naming: runtime.reportNaming, tasks: world.dumps?.tasks?.census)
    }

    /// Starts watching: busy time counts from the end of the grace period, the source feeds the
    /// latch and attaches its thread, the directory's heartbeat speaks for it from the watchdog's
    /// next turn, its lanes join the watchdog, and the pool watch is offered to it. Quick: no file or signal work.
    func begin() throws {
        let control = owner.control
        control.countFromMicroseconds.store(
            world.environment.now() + DurationText.microseconds(configuration.startupGracePeriod), ordering: .releasing)
        source.useCaptureSelector(
            CaptureSelector(
                select: { [threadSlot] in threadSlot.select(tid: $0) }, vacate: { [threadSlot] in threadSlot.vacate($0) },
                adopt: { [threadSlot] in threadSlot.adopt($0) }))
        try source.start(edges: latch, attach: attachStep())
        if let unavailable = world.taskLayout.description {
            owner.logger.warning("part of the diagnosis is unavailable", metadata: ["hangwatch.reason": "\(unavailable)"])
        }
        // The heartbeat counts the monitor before its lanes join: their joining wakes the
        // watchdog, whose turn then publishes a page that speaks for it (its threshold, its
        // loop histogram).
        directory.heartbeat?.add(hangLane.heartbeatMember(owner: owner.id))
        // A recent-window dump lists the watch (and reads its recorder) until it ends.
        world.runtime.dumps.add(
            WatchedSource(
                id: ObjectIdentifier(self), monitor: owner.id, kind: source.kind, service: configuration.serviceName, latch: latch,
                threadSlot: threadSlot, control: owner.control, cpuReadings: hangLane.cpuReadings,
                covers: { [source] in source.leadUpCovers(windowUnits: $0, before: $1) }))
        let lanes: [any WatchdogLane] = [hangLane] + (source.timerLane.map { [$0] } ?? [])
        self.lanes.withLock { $0 = lanes }
        for lane in lanes { watchdog.add(lane) }
        if configuration.watchesConcurrencyPool, let pool = world.pool {
            enrollPoolWatch(pool)
        }
    }

    /// Stops watching: a hang in progress is written `monitor stopped during hang`; waits for the
    /// lanes to finish and for this monitor's reports to be through the directory's writer (the
    /// last monitor of the directory closes it: held reports written, the heartbeat removed).
    /// Once; on scripted time it may be the script's own step that asks, and the rest then follows
    /// when the watchdog's `run()` has let the lanes go.
    func end() {
        guard !ended.exchange(true, ordering: .relaxed) else { return }
        stop.raise()
        source.stop()
        world.runtime.dumps.removeWatch(ObjectIdentifier(self))
        world.runtime.poolWatch.withdraw(owner.id)
        watchdog.remove(lanes.withLock { $0 }) { [self] in
            directory.heartbeat?.remove(owner.id)
            writer.drain()
            release()
        }
    }

    /// A start that did not happen (the monitor was stopped while this was made): nothing began,
    /// only the directory is let go.
    func discard() {
        release()
    }

    private func release() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        world.runtime.directories.release(directory, in: world.runtime)
    }

    /// What the source runs on each thread that does its work: prepares the thread for captures
    /// (alternate signal stack, unwinder) and makes it the one `threadSlot` names.
    private func attachStep() -> @Sendable () -> Void {
        { [threadSlot, signal, logger = owner.logger, stackSize = configuration.alternateSignalStackSize] in
            let attachment = UnsafeCaptureBridge.attachCurrentThread(alternateStackSize: stackSize, signal: signal)
            let task = ProcTask(tid: attachment.tid)
            threadSlot.set(
                MonitoredThread(
                    tid: attachment.tid, startTimeTicks: task.stat()?.startTimeTicks ?? 0,
                    stackLow: attachment.stackLow, stackHigh: attachment.stackHigh, name: task.name(),
                    isMain: attachment.tid == getpid()))
            if let error = attachment.alternateStackError {
                logger.warning(
                    "no alternate signal stack for the monitored thread",
                    metadata: ["hangwatch.error": "\(SystemCallError(call: "sigaltstack", code: error).reason)"])
            }
        }
    }
}
