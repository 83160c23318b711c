import Foundation
@_spi(Internal) import HangWatchReport
import Logging
import Synchronization

/// One running monitor, whole: its source and latch, its lanes of the watchdog, the report writer
/// and its store, the heartbeat. Made from the configuration and a `MonitorWorld` with no lock
/// held (the directory, the signal handler and the heartbeat file are set up here, and nothing
/// starts); `HangMonitor.start` swaps it in and `begin`s it (the source starts feeding the latch,
/// the lanes join the watchdog), `stop` `end`s it. Tests make one the same way from a scripted world
/// and step its watchdog on their own thread.
final class MonitorAssembly: Sendable {
    /// What the monitor that owns the assembly keeps across starts.
    struct Owner: Sendable {
        var id: ObjectIdentifier
        var control: WatchdogControl
        var statistics: MonitorStatistics
        var logger: Logger
        var enricher: (any HangReportEnricher)?
        /// Monitors made with it share a writer, a watchdog and an event-loop watcher.
        var sharing: MonitorSharing?
    }

    let configuration: HangMonitor.Configuration
    let world: MonitorWorld
    let owner: Owner
    let source: any ActivitySource
    /// What the source can do beyond the common lifecycle, typed by the `start…` that made it.
    let handles: HangMonitor.SourceHandles
    let latch: ActivityLatch
    let watchdog: Watchdog
    let hangLane: HangLane
    /// Answers `hangwatch dump PID` (nil: this monitor does not).
    let dumpLane: DumpLane?
    let threadSlot: ThreadSlot
    let writer: ReportWriter
    let store: ReportStore
    let builder: ReportBuilder
    let images: ImageRegistry
    let heartbeat: HeartbeatPublisher?
    let signal: Int32
    /// This start's stop: its lanes finish once it is raised (`end`).
    let stop = StopFlag()
    /// Every lane of the watchdog the assembly runs, once begun (the hang lane, the source's timer
    /// lane when it has one, the writer's hold-back lane, the dump lane when it answers dumps).
    private let lanes = Mutex<[any WatchdogLane]>([])

    /// Sets up everything `begin` needs; throws `HangMonitorError` when the directory cannot be
    /// used or the signal handler cannot be installed.
    init(
        configuration: HangMonitor.Configuration, source: any ActivitySource, handles: HangMonitor.SourceHandles,
        world: MonitorWorld, owner: Owner
    ) throws {
        self.configuration = configuration
        self.world = world
        self.owner = owner
        self.source = source
        self.handles = handles
        store = try Self.preparedStore(configuration)
        signal = configuration.captureSignal ?? CaptureSignal.defaultSignal
        try world.installCapture(signal)
        let makeWatchdog = { Watchdog(environment: world.environment) }
        watchdog = owner.sharing?.watchdog(orMake: makeWatchdog) ?? makeWatchdog()
        latch = ActivityLatch(
            busyActivities: configuration.busyActivities,
            loopHistogram: configuration.loopHistogram && configuration.heartbeatInterval != .zero, wake: watchdog.wake)
        threadSlot = ThreadSlot()
        images = ImageRegistry(logger: owner.logger)
        builder = Self.reportBuilder(configuration, world: world, signal: signal, kind: source.kind)
        writer = Self.reportWriter(
            configuration, owner: owner, world: world, store: store, builder: builder, images: images, wake: watchdog.wake)
        // The version found once for the reports, published as it is.
        heartbeat = Self.heartbeatPublisher(
            configuration, owner: owner, world: world, store: store, latch: latch, signal: signal, serviceVersion: builder.serviceVersion)
        let capture = MonitorWorld.Capture(
            signal: signal, maxFrames: configuration.maxFrames,
            timeoutNanoseconds: DurationText.nanoseconds(configuration.captureTimeout), images: images)
        hangLane = HangLane(
            settings: Self.watchdogSettings(configuration, world: world), source: source, latch: latch, control: owner.control,
            stop: stop, threadSlot: threadSlot, sampler: world.sampler(capture), sink: world.sinkBeforeWriter?(writer) ?? writer, images: images,
            statistics: owner.statistics, logger: owner.logger, heartbeat: heartbeat, waits: world.waits(capture),
            naming: world.runtime.reportNaming)
        dumpLane = Self.dumpLane(
            world: world, owner: owner, store: store, builder: builder, images: images, capture: capture,
            hasHeartbeat: heartbeat != nil, stop: stop)
    }

    /// Starts watching: busy time counts from the end of the grace period, the source feeds the
    /// latch and attaches its thread, its lanes join the watchdog, and the pool watch and dump
    /// requests are offered to this monitor. Quick: no file or signal work.
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
        var lanes: [any WatchdogLane] = [hangLane] + (source.timerLane.map { [$0] } ?? [])
        lanes.append(ReportHoldBackLane(writer: writer, stop: stop))
        if let dumpLane { lanes.append(dumpLane) }
        self.lanes.withLock { [lanes] in $0 = lanes }
        for lane in lanes {
            if world.startsThreads { watchdog.add(lane) } else { watchdog.enlist(lane) }
        }
        if configuration.watchesConcurrencyPool && world.startsThreads {
            enrollPoolWatch()
        }
        // Asked for a thread dump (`hangwatch dump`), this monitor answers from now on.
        if dumpLane != nil { world.runtime.dumps.enroll(owner.id, wake: watchdog.wake) }
    }

    /// Stops watching: a hang in progress is written `monitor stopped during hang`; waits for the
    /// lanes to finish and for queued reports to be written.
    func end() {
        stop.raise()
        source.stop()
        world.runtime.poolWatch.withdraw(owner.id)
        world.runtime.dumps.withdraw(owner.id)
        if world.startsThreads {
            for lane in lanes.withLock({ $0 }) { watchdog.join(lane) }
        }
        heartbeat?.retire()
        writer.flush()
    }

    /// A start that did not happen (the monitor was stopped while this was made): nothing began,
    /// only the heartbeat file is left to remove.
    func discard() {
        heartbeat?.retire()
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
