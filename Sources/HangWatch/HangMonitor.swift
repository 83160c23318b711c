import Foundation
@_spi(Internal) import HangWatchReport
import Logging
import Synchronization

/// Watches one source of work (a run loop, a serial queue, an event loop, or scopes a thread
/// declares) and writes a JSON report for every time it stays busy past a threshold.
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
/// loop has been busy (after ``Activity/beforeSources`` or ``Activity/afterWaiting``) for the
/// threshold, then samples the loop thread's stack every ``Configuration/sampleInterval`` until the
/// loop moves, and writes one report with the true duration, every sample and the heaviest stack.
/// Time the loop spends asleep never counts.
///
/// A monitor watches one source at a time, chosen by the `start` it is given: ``start()`` or
/// ``start(runLoop:)`` for a run loop, ``startWatchingMainQueue()`` or ``start(queue:)`` for a
/// dispatch queue, ``startWatchingScopes()`` for a thread with a loop of its own; HangWatchNIO's
/// `HangMonitor.watch(_:ticks:configuration:logger:)` makes one per SwiftNIO event loop.
///
/// Thread-safe. ``stop()`` waits for the watchdog and for queued report writes.
public final class HangMonitor: Sendable {
    /// The configuration this monitor was created with (its threshold may since have changed: see
    /// ``threshold``).
    public let configuration: Configuration
    let logger: Logger
    private let enricher: (any HangReportEnricher)?
    let statisticsStore = MonitorStatistics()
    let control: WatchdogControl
    /// Nil while stopped; `.starting` while `start` makes the assembly (no lock held meanwhile).
    let running = Mutex<Lifecycle?>(nil)
    /// Numbers the starts (`Lifecycle.starting`).
    private let starts = Atomic<UInt64>(0)
    /// Whether a scope call that could do nothing was told in the log (once per monitor and kind).
    let scopeMisuseLogged = ScopeMisuse.Logged()

    enum Lifecycle: Sendable {
        /// `start` is making its assembly; the number tells this start from a later one (after a
        /// `stop()` in between).
        case starting(UInt64)
        case running(MonitorAssembly)

        var assembly: MonitorAssembly? { if case .running(let assembly) = self { assembly } else { nil } }
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

    /// Makes a stopped monitor from a valid configuration; nothing is watched, created or installed
    /// until a `start`.
    ///
    /// Each monitor is one watch: its source, threshold and stop are its own. What a process has one
    /// of is shared: one watchdog thread for every monitor, and one writer and heartbeat per report
    /// directory (monitors writing to one directory share its rate limit and its fold of repeats,
    /// and must agree on its settings: ``start()`` throws otherwise).
    ///
    /// - Parameters:
    ///   - configuration: What to watch for and where to write; checked here
    ///     (``Configuration/validate()``).
    ///   - logger: Where the monitor tells its starts, stops and troubles (metadata keys prefixed
    ///     `hangwatch.`). The library never bootstraps logging.
    ///   - enricher: Runs on each finished report before it is written, off the monitored thread,
    ///     e.g. `Symbolicator()` from HangWatchSymbolication for names in every report. Nil: reports
    ///     keep raw addresses and build-ids, symbolicated later, on the host or elsewhere.
    /// - Throws: ``HangMonitorError/invalidConfiguration(key:value:reason:)`` naming the first
    ///   setting out of range.
    public init(
        configuration: Configuration, logger: Logger = Logger(label: "hangwatch"),
        enricher: (any HangReportEnricher)? = nil
    ) throws {
        try configuration.validate()
        self.configuration = configuration
        self.logger = logger
        self.enricher = enricher
        control = WatchdogControl(thresholdMicroseconds: DurationText.microseconds(configuration.threshold))
    }

    deinit {
        stop()
    }

    /// Starts watching `RunLoop.main`. Call it from the main thread before running the loop, or
    /// from any thread (the main thread then attaches the next time its loop runs).
    ///
    /// With ``Configuration/isEnabled`` false it does nothing (and throws nothing).
    ///
    /// - Throws: ``HangMonitorError/alreadyRunning`` if this monitor is watching already;
    ///   ``HangMonitorError/reportDirectoryUnusable(path:reason:)`` if the report directory cannot
    ///   be used; ``HangMonitorError/captureUnavailable(reason:)`` if the capture signal's handler
    ///   cannot be installed; ``HangMonitorError/invalidConfiguration(key:value:reason:)`` if
    ///   another monitor of the process writes to the same directory with other directory settings
    ///   (the key names the first that differs).
    public func start() throws {
        try start(runLoop: .main)
    }

    /// Starts watching the run loop of some thread. From another thread, the loop's thread attaches
    /// (alternate signal stack, unwinder warm-up) the next time the loop runs.
    ///
    /// - Parameter runLoop: The loop to watch, in its common modes and
    ///   ``Configuration/additionalModes`` (and any mode it is later found running in).
    /// - Throws: What ``start()`` throws, for the same reasons.
    public func start(runLoop: RunLoop) throws {
        try start(
            source: RunLoopActivitySource(
                runLoop: runLoop, busyActivities: configuration.busyActivities, additionalModes: configuration.additionalModes,
                knownLoops: ProcessRuntime.process.runLoops))
    }

    /// Starts watching the main queue by pinging it, for services that never run `RunLoop.main`:
    /// `dispatchMain()`, an `async` `@main`, MainActor work. A ping enqueued once per threshold
    /// that the queue does not run within the threshold is a hang; the thread draining the queue
    /// is captured (on Linux a libdispatch worker once `dispatchMain()` ran). See docs/sources.md
    /// for what the ping can and cannot see.
    ///
    /// - Throws: What ``start()`` throws, for the same reasons.
    public func startWatchingMainQueue() throws {
        try start(queue: .main, kind: .dispatchMain)
    }

    /// Starts watching a serial `DispatchQueue` the way ``startWatchingMainQueue()`` watches the
    /// main queue (reports say `dispatch-queue`).
    ///
    /// - Parameter queue: A serial queue (a ping must wait behind the block that holds it);
    ///   `DispatchQueue.main` is watched as ``startWatchingMainQueue()`` watches it.
    /// - Throws: What ``start()`` throws, for the same reasons.
    public func start(queue: DispatchQueue) throws {
        try start(queue: queue, kind: queue === DispatchQueue.main ? .dispatchMain : .dispatchQueue)
    }

    private func start(queue: DispatchQueue, kind: ActivitySourceKind) throws {
        try startPinging(kind: kind) { block in queue.async(execute: block) }
        if kind == .dispatchMain {
            // One job on the main actor, where the pool taught nothing yet: where the Swift
            // runtime's current-task word lies from a thread pointer, so that a main-queue hang's
            // samples say which task each ran (`QueueHangKind`).
            UnsafePoolThreadAttachments.shared.learnTaskWordOffsetOnTheMainActor()
        }
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
            watcher: ProcessRuntime.process.loopWatcher(usesIoUring: configuration.usesIoUring), enqueue: enqueue,
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

    /// Builds the monitor around `source`: the one path every kind of source starts by. The source
    /// feeds the latch and attaches its working thread; the watchdog, the sampler and the report
    /// writer are the same for every source (`MonitorAssembly`, made from the configuration and the
    /// system's `MonitorWorld` with no lock held, then swapped in). `handles`: what the source can
    /// do beyond that, typed.
    func start(source: some ActivitySource, handles: SourceHandles = .none) throws {
        guard configuration.isEnabled else {
            logger.info("hang monitor disabled by configuration", metadata: ["hangwatch.service": "\(configuration.serviceName)"])
            return
        }
        let start = starts.add(1, ordering: .relaxed).newValue
        try running.withLock { running in
            guard running == nil else { throw HangMonitorError.alreadyRunning }
            running = .starting(start)
        }
        let assembly: MonitorAssembly
        do {
            assembly = try MonitorAssembly(
                configuration: configuration, source: source, handles: handles, world: .system(),
                owner: MonitorAssembly.Owner(
                    id: ObjectIdentifier(self), control: control, statistics: statisticsStore, logger: logger, enricher: enricher))
        } catch {
            running.withLock { running in
                if case .starting(start) = running { running = nil }
            }
            throw error
        }
        let begun = try running.withLock { running -> Bool in
            // Stopped while it was made (and maybe started again since): it never begins.
            guard case .starting(start) = running else { return false }
            do {
                try assembly.begin()
            } catch {
                running = nil
                assembly.discard()
                throw error
            }
            running = .running(assembly)
            return true
        }
        guard begun else {
            assembly.discard()
            return
        }
        logger.info(
            "hang monitor started",
            metadata: [
                "hangwatch.service": "\(configuration.serviceName)",
                "hangwatch.source": "\(source.kind.rawValue)",
                "hangwatch.threshold_ms": "\(control.thresholdMicroseconds.load(ordering: .relaxed) / 1000)",
                "hangwatch.directory": "\(configuration.reportDirectory)",
            ])
    }

    /// Stops watching. A hang in progress is written with outcome `monitor stopped during hang`.
    /// Waits for the watchdog to finish and for queued reports to be written. Idempotent; the
    /// monitor can be started again. Call it before the watched loop's thread stops running its
    /// loop.
    public func stop() {
        guard let current = running.withLock({ running -> MonitorAssembly? in
            defer { running = nil }
            return running?.assembly
        }) else { return }
        current.end()
        logger.info("hang monitor stopped", metadata: ["hangwatch.service": "\(configuration.serviceName)"])
    }

    /// Whether the monitor is watching a source: true from a successful `start` to ``stop()``
    /// (false after a start that ``Configuration/isEnabled`` turned into a no-op).
    public var isRunning: Bool {
        running.withLock { $0?.assembly != nil }
    }

    /// Whether the loop's thread has run the attach step (observers installed, thread prepared for
    /// captures). Immediate when started on the loop's own thread; otherwise the loop's next turn.
    public var isAttached: Bool {
        running.withLock { $0?.assembly?.threadSlot.thread != nil }
    }

    /// Whether this process can make the io_uring an event-loop watcher polls idle loops' wakes
    /// through (`Configuration.usesIoUring`).
    package static var canPollLoopWakesThroughIoUring: Bool { (try? UnsafeLoopWakeRing(entries: 1)) != nil }

    /// How this process's event-loop watcher for `usesIoUring` watches idle loops' wakes, and why
    /// not through io_uring if not (what a group's start logs).
    package static func loopWakeMethod(usesIoUring: Bool) -> String {
        ProcessRuntime.process.loopWatcher(usesIoUring: usesIoUring).wakeMethod
    }

    /// Whether the running source is an event loop whose idle wakes come through an io_uring
    /// (never lost: `Configuration.usesIoUring`); nil when not running an event-loop source.
    package var loopWakesThroughIoUring: Bool? {
        running.withLock { $0?.assembly?.handles.loopWakesThroughIoUring }?()
    }

    /// How the running source finds its edges now (`exact`, `ping`), as reports say in `edges`;
    /// nil when not running. An event loop's source turns `exact` once its epoll instance is learnt.
    package var sourceEdges: String? {
        running.withLock { $0?.assembly?.source.edges.rawValue }
    }

    /// Suspends hang detection until the matching ``resume()`` (calls nest). For known long
    /// operations; busy time before the final ``resume()`` never counts.
    public func pause() {
        control.pause()
    }

    /// Ends a ``pause()``. Busy time counts again from now, once every ``pause()`` has had its
    /// ``resume()``.
    public func resume() {
        if control.resume(now: SystemMonotonicClock().microseconds()) { wakeWatchdog() }
    }

    /// Runs `body` with hang detection paused (``pause()`` before it, ``resume()`` after it, even
    /// when it throws).
    ///
    /// - Parameter body: The known long operation.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withoutHangDetection<T>(_ body: () throws -> T) rethrows -> T {
        pause()
        defer { resume() }
        return try body()
    }

    /// The threshold in force: ``Configuration/threshold`` until ``setThreshold(_:)`` changes it
    /// (inside a scope of ``watch(deadline:_:)`` with a deadline, that deadline).
    public var threshold: Duration {
        .microseconds(Int64(control.thresholdMicroseconds.load(ordering: .relaxed)))
    }

    /// Changes the threshold, running or not; a running monitor's watchdog is woken to judge the
    /// source by the new one at once.
    ///
    /// - Parameter threshold: The new threshold, 10 ms ... 1 h.
    /// - Throws: ``HangMonitorError/invalidConfiguration(key:value:reason:)`` with key `threshold`
    ///   when it is out of range; the threshold in force then stays.
    public func setThreshold(_ threshold: Duration) throws {
        var candidate = configuration
        candidate.threshold = threshold
        try candidate.validate()
        control.thresholdMicroseconds.store(DurationText.microseconds(threshold), ordering: .relaxed)
        wakeWatchdog()
    }

    /// Counters since this monitor was created (across its starts and stops), read now.
    public var statistics: Statistics {
        statisticsStore.snapshot(.process)
    }

    private func wakeWatchdog() {
        running.withLock { running in
            _ = running?.assembly?.latch.wake.signal()
        }
    }
}
