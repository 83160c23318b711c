import Foundation
@_spi(Internal) import HangWatchReport
import Logging
import Synchronization

/// Watches a run loop and writes a JSON report for every time it stays busy past a threshold.
///
/// ```swift
/// import Foundation
/// import HangWatch
///
/// let monitor = try HangMonitor(configuration: .init(serviceName: "billing",
///                                                    threshold: .milliseconds(250),
///                                                    reportDirectory: "/var/lib/hangwatch/reports"))
/// try monitor.start()          // RunLoop.main; start(runLoop:) for another thread's loop
/// RunLoop.main.run()
/// ```
///
/// Observers on the loop record each activity in a shared word; a watchdog thread sleeps until the
/// loop has been busy (after `beforeSources` or `afterWaiting`) for the threshold, then samples the
/// loop thread's stack every `sampleInterval` until the loop moves, and writes one report with the
/// true duration, every sample and the heaviest stack. Time the loop spends asleep never counts.
///
/// Thread-safe. `stop()` waits for the watchdog and for queued report writes.
public final class HangMonitor: Sendable {
    /// The configuration this monitor was created with (`threshold` may since have changed: see
    /// `threshold`).
    public let configuration: Configuration
    let logger: Logger
    private let enricher: (any HangReportEnricher)?
    let statisticsStore = MonitorStatistics()
    let control: WatchdogControl
    private let running = Mutex<Running?>(nil)
    /// Monitors created with the same sharing report through one writer and are watched by one
    /// watchdog thread (a SwiftNIO group's loops).
    private let sharing: MonitorSharing?

    private struct Running: Sendable {
        var source: any ActivitySource
        var handles: SourceHandles
        var latch: ActivityLatch
        var watchdog: Watchdog
        /// Its lanes of the watchdog: the hang lane, and the source's timer lane if it has one.
        var lanes: [any WatchdogLane]
        var writer: ReportWriter
        var threadSlot: ThreadSlot
        var heartbeat: HeartbeatPublisher?
    }

    /// What the running source can do beyond the lifecycle every source shares, kept typed by the
    /// `start…` that made the source (no downcast of `any ActivitySource`).
    struct SourceHandles: Sendable {
        /// The scopes `enterWork()`, `leaveWork()` and `watch(deadline:_:)` mark
        /// (`startWatchingScopes()`).
        var scopes: ScopeActivitySource?
        /// Whether the event loop's idle wakes come through an io_uring (`startPinging(eventLoop:...)`).
        var loopWakesThroughIoUring: (@Sendable () -> Bool)?

        /// A source that can do nothing beyond the common lifecycle (run loops, queues).
        static let none = SourceHandles()
    }

    /// Validates `configuration` (throwing `HangMonitorError.invalidConfiguration` naming the bad
    /// setting). `enricher` runs on each finished report before it is written, off the monitored
    /// thread, e.g. `Symbolicator()` from HangWatchSymbolication for names in every report.
    public convenience init(
        configuration: Configuration, logger: Logger = Logger(label: "hangwatch"),
        enricher: (any HangReportEnricher)? = nil
    ) throws {
        try self.init(configuration: configuration, logger: logger, enricher: enricher, sharing: nil)
    }

    /// The same, reporting through `sharing`'s writer with every other monitor made with it: one
    /// rate limit, and the same culprit on two of their loops is one report with its repeats. The
    /// first monitor to start makes the writer; its configuration's directory, limits and
    /// retention apply to all.
    package init(
        configuration: Configuration, logger: Logger = Logger(label: "hangwatch"),
        enricher: (any HangReportEnricher)? = nil, sharing: MonitorSharing?
    ) throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        self.enricher = enricher
        self.sharing = sharing
        control = WatchdogControl(thresholdMicroseconds: DurationText.microseconds(configuration.threshold))
    }

    deinit {
        stop()
    }

    /// Starts watching `RunLoop.main`. Call it from the main thread before running the loop, or
    /// from any thread (the main thread then attaches the next time its loop runs).
    public func start() throws {
        try start(runLoop: .main)
    }

    /// Starts watching `runLoop`, the run loop of some thread. From another thread, the loop's
    /// thread attaches (alternate signal stack, unwinder warm-up) the next time the loop runs.
    public func start(runLoop: RunLoop) throws {
        try start(
            source: RunLoopActivitySource(
                runLoop: runLoop, busyActivities: configuration.busyActivities, additionalModes: configuration.additionalModes))
    }

    /// Starts watching work the calling thread declares: `enterWork()` / `leaveWork()` or
    /// `watch(deadline:_:)`, for a thread that runs a loop of its own (no CFRunLoop). Work that
    /// stays inside a scope past the threshold (or the scope's deadline) is a hang, captured and
    /// reported like a run loop's, with `source` `scope`. Calls from other threads are ignored.
    public func startWatchingScopes() throws {
        let source = ScopeActivitySource(thread: pthread_self())
        try start(source: source, handles: SourceHandles(scopes: source))
    }

    /// Starts watching the main queue by pinging it, for services that never run `RunLoop.main`:
    /// `dispatchMain()`, an `async` `@main`, MainActor work. A ping enqueued once per threshold
    /// that the queue does not run within the threshold is a hang; the thread draining the queue
    /// is captured (on Linux a libdispatch worker once `dispatchMain()` ran). See docs/sources.md
    /// for what the ping can and cannot see.
    public func startWatchingMainQueue() throws {
        try start(queue: .main, kind: .dispatchMain)
    }

    /// Starts watching a serial `DispatchQueue` the same way (reports say `dispatch-queue`).
    public func start(queue: DispatchQueue) throws {
        try start(queue: queue, kind: queue === DispatchQueue.main ? .dispatchMain : .dispatchQueue)
    }

    private func start(queue: DispatchQueue, kind: ActivitySourceKind) throws {
        try startPinging(kind: kind) { block in queue.async(execute: block) }
    }

    /// Starts watching anything that runs closures in order on one thread at a time by pinging it
    /// through `enqueue` (for HangWatchNIO's event loops; reports say `nio-eventloop`). Under
    /// load a busy loop gets a ping at each look, whose answer is a boundary. With
    /// `lastIterationEnd` (when the loop last finished an iteration, `CLOCK_MONOTONIC` ns; nil
    /// before its first), those iterations are the boundaries under load instead, and no ping goes
    /// out before a hang is declared.
    package func startPinging(
        eventLoop enqueue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        lastIterationEnd: (@Sendable () -> UInt64?)? = nil
    ) throws {
        let control = control
        let source = EventLoopActivitySource(
            thresholdMicroseconds: { control.thresholdMicroseconds.load(ordering: .relaxed) },
            intervalMicroseconds: DurationText.microseconds(configuration.sampleInterval),
            watcher: sharing?.loopWatcher(orMake: { [configuration] in EventLoopWatcher(usesIoUring: configuration.usesIoUring) })
                ?? EventLoopWatcher(usesIoUring: configuration.usesIoUring), enqueue: enqueue,
            lastIterationEnd: lastIterationEnd)
        try start(source: source, handles: SourceHandles(loopWakesThroughIoUring: { source.wakesThroughIoUring }))
    }

    private func startPinging(kind: ActivitySourceKind, enqueue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) throws {
        let control = control
        try start(
            source: QueueActivitySource(
                kind: kind, thresholdMicroseconds: { control.thresholdMicroseconds.load(ordering: .relaxed) },
                intervalMicroseconds: DurationText.microseconds(
                    configuration.looksAtQueueThreads ? configuration.sampleInterval : configuration.threshold),
                looker: configuration.looksAtQueueThreads ? LinuxQueueThreadLooker() : nil,
                enqueue: enqueue))
    }

    /// Marks the start of work on the thread that called `startWatchingScopes()`. Scopes nest:
    /// only the outermost counts. Costs a lock and one atomic store.
    public func enterWork() {
        scopeSource()?.enter()
    }

    /// Marks the end of the work `enterWork()` began.
    public func leaveWork() {
        scopeSource()?.leave()
    }

    /// Runs `body` as one scope of work; with a `deadline` (10 ms ... 1 h), that is its threshold
    /// instead of the configured one (restored afterwards; the outermost scope's deadline wins).
    public func watch<T>(deadline: Duration? = nil, _ body: () throws -> T) rethrows -> T {
        guard let source = scopeSource() else { return try body() }
        var restore: UInt64?
        if let deadline, !source.isBusy {
            let limited = min(max(DurationText.microseconds(deadline), 10_000), 3_600_000_000)
            restore = control.thresholdMicroseconds.exchange(limited, ordering: .relaxed)
        }
        source.enter()
        defer {
            source.leave()
            if let restore { control.thresholdMicroseconds.store(restore, ordering: .relaxed) }
        }
        return try body()
    }

    /// The scope source, when scopes are watched and the caller is their thread.
    private func scopeSource() -> ScopeActivitySource? {
        guard let source = running.withLock({ $0?.handles.scopes }), source.isOwnThread else { return nil }
        return source
    }

    /// Builds the monitor around `source`: the one path every kind of source starts by. The source
    /// feeds the latch and attaches its working thread; the watchdog, the sampler and the report
    /// writer are the same for every source. `handles`: what the source can do beyond that, typed.
    func start(source: some ActivitySource, handles: SourceHandles = .none) throws {
        guard configuration.isEnabled else {
            logger.info("hang monitor disabled by configuration", metadata: ["hangwatch.service": "\(configuration.serviceName)"])
            return
        }
        try running.withLock { running in
            guard running == nil else { throw HangMonitorError.alreadyRunning }
            let store = try preparedStore()
            let signal = configuration.captureSignal ?? CaptureSignal.defaultSignal
            try UnsafeCaptureBridge.install(signal: signal)

            let environment = SystemWatchdogEnvironment()
            control.stopRequested.store(false, ordering: .releasing)
            control.countFromMicroseconds.store(
                environment.now() + DurationText.microseconds(configuration.startupGracePeriod), ordering: .releasing)

            let makeWatchdog = { Watchdog(environment: environment) }
            let watchdog = sharing?.watchdog(orMake: makeWatchdog) ?? makeWatchdog()
            let latch = ActivityLatch(
                busyActivities: configuration.busyActivities,
                loopHistogram: configuration.loopHistogram && configuration.heartbeatInterval != .zero, wake: watchdog.wake)
            let threadSlot = ThreadSlot()
            let images = ImageRegistry(logger: logger)
            let builder = reportBuilder(signal: signal, environment: environment, kind: source.kind)
            let writer = reportWriter(store: store, builder: builder, images: images)
            let heartbeat = heartbeatPublisher(store: store, latch: latch, signal: signal)
            let sampler = LinuxStackSampler(
                signal: signal, maxFrames: configuration.maxFrames,
                timeoutNanoseconds: DurationText.nanoseconds(configuration.captureTimeout), clock: SystemMonotonicClock())

            source.useCaptureSelector(
                CaptureSelector(select: { threadSlot.select(tid: $0) }, vacate: { threadSlot.vacate($0) }))
            try source.start(edges: latch, attach: attachStep(signal: signal, threadSlot: threadSlot))
            let lane = watchdogLane(
                source: source, latch: latch, threadSlot: threadSlot, sampler: sampler, writer: writer, images: images,
                heartbeat: heartbeat)
            let lanes: [any WatchdogLane] = [lane] + (source.timerLane.map { [$0] } ?? [])
            for lane in lanes { watchdog.add(lane) }
            if configuration.watchesConcurrencyPool {
                enrollPoolWatch(watchdog: watchdog, writer: writer, images: images, signal: signal)
            }
            if heartbeat != nil {
                // Found by its heartbeat file, it can be asked for a thread dump (`hangwatch dump`).
                enrollDumps(watchdog: watchdog, store: store, builder: builder, images: images)
            }
            running = Running(
                source: source, handles: handles, latch: latch, watchdog: watchdog, lanes: lanes, writer: writer, threadSlot: threadSlot,
                heartbeat: heartbeat)
            logger.info(
                "hang monitor started",
                metadata: [
                    "hangwatch.service": "\(configuration.serviceName)",
                    "hangwatch.source": "\(source.kind.rawValue)",
                    "hangwatch.threshold_ms": "\(control.thresholdMicroseconds.load(ordering: .relaxed) / 1000)",
                    "hangwatch.directory": "\(configuration.reportDirectory)",
                ])
        }
    }

    /// Stops watching. A hang in progress is written with outcome `monitor stopped during hang`.
    /// Waits for the watchdog to finish and for queued reports to be written. Idempotent; the
    /// monitor can be started again.
    public func stop() {
        guard let current = running.withLock({ running -> Running? in
            defer { running = nil }
            return running
        }) else { return }
        control.stopRequested.store(true, ordering: .releasing)
        current.source.stop()
        PoolWatchRegistry.withdraw(ObjectIdentifier(self))
        DumpRegistry.withdraw(ObjectIdentifier(self))
        for lane in current.lanes { current.watchdog.join(lane) }
        current.heartbeat?.retire()
        current.writer.flush()
        logger.info("hang monitor stopped", metadata: ["hangwatch.service": "\(configuration.serviceName)"])
    }

    /// Whether the monitor is watching a loop.
    public var isRunning: Bool {
        running.withLock { $0 != nil }
    }

    /// Whether the loop's thread has run the attach step (observers installed, thread prepared for
    /// captures). Immediate when started on the loop's own thread; otherwise the loop's next turn.
    public var isAttached: Bool {
        running.withLock { $0?.threadSlot.thread != nil }
    }

    /// Whether this process can make the io_uring an event-loop watcher polls idle loops' wakes
    /// through (`Configuration.usesIoUring`).
    package static var canPollLoopWakesThroughIoUring: Bool { (try? UnsafeLoopWakeRing(entries: 1)) != nil }

    /// Whether the running source is an event loop whose idle wakes come through an io_uring
    /// (never lost: `Configuration.usesIoUring`); nil when not running an event-loop source.
    package var loopWakesThroughIoUring: Bool? {
        running.withLock { $0?.handles.loopWakesThroughIoUring }?()
    }

    /// How the running source finds its edges now (`exact`, `ping`), as reports say in `edges`;
    /// nil when not running. An event loop's source turns `exact` once its epoll instance is learnt.
    package var sourceEdges: String? {
        running.withLock { $0?.source.edges.rawValue }
    }

    /// Suspends hang detection until the matching `resume()` (calls nest). For known long
    /// operations; busy time before the final `resume()` never counts.
    public func pause() {
        control.pause()
    }

    /// Ends a `pause()`. Busy time counts again from now.
    public func resume() {
        if control.resume(now: SystemMonotonicClock().microseconds()) { wakeWatchdog() }
    }

    /// Runs `body` with hang detection paused.
    public func withoutHangDetection<T>(_ body: () throws -> T) rethrows -> T {
        pause()
        defer { resume() }
        return try body()
    }

    /// The current threshold.
    public var threshold: Duration {
        .microseconds(Int64(control.thresholdMicroseconds.load(ordering: .relaxed)))
    }

    /// Changes the threshold while running (10 ms ... 1 h).
    public func setThreshold(_ threshold: Duration) throws {
        var candidate = configuration
        candidate.threshold = threshold
        try candidate.validate()
        control.thresholdMicroseconds.store(DurationText.microseconds(threshold), ordering: .relaxed)
        wakeWatchdog()
    }

    /// Counters since this monitor was created.
    public var statistics: Statistics {
        statisticsStore.snapshot
    }

    private func wakeWatchdog() {
        running.withLock { running in
            _ = running?.latch.wake.signal()
        }
    }
}

/// The steps of `start(source:handles:)`, in the order it takes them.
extension HangMonitor {
    /// The report directory, made (with the configured access) and cleared of stale temporary files.
    private func preparedStore() throws -> ReportStore {
        let store = ReportStore(
            directory: configuration.reportDirectory, access: configuration.sharedWithAgent ? .sharedWithAgent : .private)
        do {
            try store.prepare()
            try store.removeStaleTemporaryFiles(olderThan: 3600)
        } catch {
            throw HangMonitorError.reportDirectoryUnusable(path: configuration.reportDirectory, reason: "\(error)")
        }
        return store
    }

    private func reportBuilder(signal: Int32, environment: SystemWatchdogEnvironment, kind: ActivitySourceKind) -> ReportBuilder {
        ReportBuilder(
            service: configuration.serviceName, host: ProcessSnapshot.hostName(), pid: getpid(),
            process: HangReport.Process(
                executable: ProcessSnapshot.executablePath(), startTimeTicks: ProcessSnapshot.processStartTimeTicks()),
            signal: signal, maxFrames: configuration.maxFrames,
            wallClock: { environment.date(ofMicroseconds: $0) }, source: kind)
    }

    /// The writer of this monitor's reports: the sharing's, when monitors share one (the first to
    /// start makes it).
    private func reportWriter(store: ReportStore, builder: ReportBuilder, images: ImageRegistry) -> ReportWriter {
        let makeWriter = { [configuration, enricher, statisticsStore, logger] in
            ReportWriter(
                store: store,
                retention: RetentionPolicy(maxReports: configuration.maxReports, maxBytes: configuration.maxReportBytes),
                policy: ReportPolicy(
                    limiter: ReportRateLimiter(burst: configuration.reportBurst, perMinute: configuration.reportsPerMinute),
                    repeats: RepeatTracker(windowMicroseconds: DurationText.microseconds(configuration.repeatWindow))),
                enricher: enricher, statistics: statisticsStore, logger: logger, builder: builder, images: images,
                clock: SystemMonotonicClock())
        }
        return sharing?.writer(orMake: makeWriter) ?? makeWriter()
    }

    /// The heartbeat file the host agent reads, when one is configured and can be made (else a
    /// warning: the agent cannot tell whether this watchdog is alive).
    private func heartbeatPublisher(store: ReportStore, latch: ActivityLatch, signal: Int32) -> HeartbeatPublisher? {
        guard configuration.heartbeatInterval != .zero else { return nil }
        do {
            return try HeartbeatPublisher(
                directory: store.directory, access: store.access, interval: configuration.heartbeatInterval,
                thresholdMicroseconds: control.thresholdMicroseconds.load(ordering: .relaxed), loopHistogram: latch.loopHistogram,
                poolDelays: { [owner = ObjectIdentifier(self)] in
                    PoolWatchRegistry.activeOwner() == owner ? PoolProbeHistogram.shared.snapshot : nil
                }, dumpSignal: signal)
        } catch {
            logger.warning(
                "no heartbeat file: the host agent cannot tell whether this monitor's watchdog is alive",
                metadata: ["hangwatch.directory": "\(configuration.reportDirectory)", "hangwatch.error": "\(error)"])
            return nil
        }
    }

    /// What the source runs on each thread that does its work: prepares the thread for captures
    /// (alternate signal stack, unwinder) and makes it the one `threadSlot` names.
    private func attachStep(signal: Int32, threadSlot: ThreadSlot) -> @Sendable () -> Void {
        { [logger, configuration] in
            let attachment = UnsafeCaptureBridge.attachCurrentThread(
                alternateStackSize: configuration.alternateSignalStackSize, signal: signal)
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

    /// The watchdog lane that decides this monitor's hangs, samples them and hands them to `writer`.
    private func watchdogLane(
        source: some ActivitySource, latch: ActivityLatch, threadSlot: ThreadSlot, sampler: LinuxStackSampler, writer: ReportWriter,
        images: ImageRegistry, heartbeat: HeartbeatPublisher?
    ) -> HangLane {
        HangLane(
            settings: Watchdog.Settings(
                busyMask: Activity.mask(configuration.busyActivities),
                sampleIntervalMicroseconds: DurationText.microseconds(configuration.sampleInterval),
                maxSamples: configuration.maxSamplesPerHang,
                clockResolutionMicroseconds: SystemMonotonicClock.coarseResolutionMicroseconds(),
                serviceName: configuration.serviceName,
                heartbeatIntervalMicroseconds: DurationText.microseconds(configuration.heartbeatInterval)),
            source: source, latch: latch, control: control, threadSlot: threadSlot, sampler: sampler,
            sink: writer, images: images, statistics: statisticsStore, logger: logger, heartbeat: heartbeat,
            waits: LinuxWaitInspector(
                images: images, maxFrames: configuration.maxFrames,
                timeoutNanoseconds: DurationText.nanoseconds(configuration.captureTimeout)))
    }
}
