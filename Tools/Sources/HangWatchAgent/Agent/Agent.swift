import Dispatch
import Foundation
import HangWatch
import HangWatchReport
import HangWatchSymbolication
import Logging
import Synchronization

/// The host agent: keeps the spool healthy, finishes hangs whose process died, watches the
/// monitors' heartbeats, names new reports, and reports to systemd and to its exporters.
///
/// Threads: the time keeper (the main run loop) only keeps time (`PassScheduler`, inotify, the
/// `WatchdogPinger`) and is itself watched by a `HangMonitor`; the work (`SpoolKeeper`: reading,
/// rewriting, deleting) runs on one serial worker queue, a pass at a time.
final class Agent: @unchecked Sendable {
    let spool: Spool
    let keeper: SpoolKeeper
    private let context: AgentContext
    private let exports: ExportHub
    private let logger: Logger
    private let levels: JournalLogHandler.LevelBox?
    private let configurationSource: (file: String?, overrides: [String])
    private let settings: Mutex<AgentConfiguration>
    private let worker = DispatchQueue(label: "hangwatchd.worker")
    private let progress = PassProgress()
    private let stopping = StopFlag()
    /// Time-keeper state.
    private var scheduler: PassScheduler!
    private var pinger: WatchdogPinger?
    private var watcher: SpoolWatcher?
    private let selfMonitor = Mutex<HangMonitor?>(nil)

    init(
        configuration: AgentConfiguration, configurationFile: String?, overrides: [String], exports: ExportHub,
        context: AgentContext = .system, logger: Logger, levels: JournalLogHandler.LevelBox? = nil
    ) {
        spool = Spool(root: configuration.reportRoot)
        settings = Mutex(configuration)
        configurationSource = (configurationFile, overrides)
        self.exports = exports
        self.context = context
        self.logger = logger
        self.levels = levels
        let stopping = stopping
        keeper = SpoolKeeper(
            spool: spool, symbolicator: Symbolicator(debugDirectories: configuration.debugDirectories), exports: exports,
            notifier: context.notifier, clock: context.clock, processes: context.processes, progress: progress, logger: logger,
            isStopping: { stopping.isSet })
        keeper.requestPass = { [weak self] pass in self?.enqueue(pass) }
        scheduler = PassScheduler(clock: context.clock) { [weak self] pass in self?.enqueue(pass) }
    }

    var configuration: AgentConfiguration { settings.withLock { $0 } }

    // MARK: - Life cycle

    /// Checks the spool, indexes it, starts the timers and the watcher, then tells systemd it is
    /// ready. Throws `Spool.Problem` for a spool it will not manage.
    func start() async throws {
        try spool.check()
        let configuration = self.configuration
        logger.info(
            "hangwatchd starting",
            metadata: [
                "hangwatch.root": "\(spool.root)", "hangwatch.max_use": "\(AgentConfiguration.sizeText(configuration.maxUse))",
                "hangwatch.keep_free": "\(AgentConfiguration.sizeText(configuration.keepFree))",
                "hangwatch.max_age": "\(DurationText.format(configuration.maxAge))",
                "hangwatch.per_service": "\(configuration.maxReportsPerService)", "hangwatch.enrich": "\(configuration.enrich)",
                "hangwatch.version": "\(MonitorVersion.current.version)", "hangwatch.commit": "\(MonitorVersion.current.commit ?? "unknown")",
            ])
        if let ignored = SystemdNotifier.watchdogSettingsIgnored(environment: context.environment, pid: context.pid) {
            let value = context.environment["WATCHDOG_USEC"]?.prefix(40) ?? ""
            logger.warning(
                "systemd watchdog settings ignored", metadata: ["hangwatch.reason": "\(ignored)", "hangwatch.watchdog_usec": "\(value)"])
        }
        startSelfMonitor(configuration)
        // Ready once the spool is indexed, dead hangs finished and retention applied; naming the
        // backlog comes after.
        let (status, services) = await onWorker { () -> (String, [String]) in
            self.keeper.run(.full, configuration: configuration, enrich: false)
            return (self.keeper.state.statusLine(), self.keeper.state.services)
        }
        guard !stopping.isSet else { return }
        await onTimeKeeper {
            self.startTimers(configuration)
            guard self.context.watchesChanges else { return }
            self.watcher = SpoolWatcher(spool: self.spool, queue: self.context.timeKeeper) { [weak self] changed in
                self?.scheduler.servicesChanged(changed)
            }
            self.watcher?.start(services: services)
            if self.watcher == nil { self.logger.warning("no inotify: changes are seen at the next scan") }
        }
        if !context.notifier.notify(["READY": "1", "STATUS": status]), let socket = context.notifier.socketPath {
            // systemd would time the start out; outside systemd this is only a note.
            logger.warning("cannot notify systemd", metadata: ["hangwatch.notify_socket": "\(socket.prefix(108))"])
        }
        logger.info("hangwatchd ready", metadata: ["hangwatch.status": "\(status)"])
        enqueue(.liveness)
    }

    /// Called as soon as shutdown begins (from the service's graceful-shutdown handler): work in
    /// progress stops at the next report boundary.
    func beginStopping() {
        stopping.set()
    }

    /// Stops taking work, lets the current pass finish (at most `shutdownTimeout`), then stops.
    func stop() async {
        context.notifier.notify(["STOPPING": "1", "STATUS": "stopping"])
        logger.info("hangwatchd stopping")
        stopping.set()
        await onTimeKeeper {
            self.scheduler.stop()
            self.pinger?.stop()
            self.watcher?.stop()
            self.watcher = nil
        }
        let drained = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let done = DispatchSemaphore(value: 0)
            worker.async {
                self.keeper.flushMonitoredTime()
                done.signal()
            }
            let timeout = DurationText.nanoseconds(configuration.shutdownTimeout)
            DispatchQueue.global().async {
                continuation.resume(returning: done.wait(timeout: .now() + .nanoseconds(Int(timeout))) == .success)
            }
        }
        if !drained { logger.warning("work still running at the shutdown deadline; exiting anyway (writes are atomic)") }
        selfMonitor.withLock { $0?.stop() }
        await exports.shutdown()
        logger.info("hangwatchd stopped")
    }

    /// Re-reads the configuration (SIGHUP). An invalid one is rejected and the old one kept.
    func reload() async {
        context.notifier.notify(["RELOADING": "1", "MONOTONIC_USEC": "\(context.clock.monotonicNanoseconds / 1000)"])
        let old = configuration
        do {
            var new = try AgentConfiguration.load(file: configurationSource.file, overrides: configurationSource.overrides)
            if new.exportSettingsDiffer(from: old) {
                logger.warning("metrics and OTLP settings take effect at the next start")
            }
            if new.reportRoot != old.reportRoot {
                logger.warning("HANGWATCHD_REPORT_ROOT changes take effect at the next start", metadata: ["hangwatch.root": "\(old.reportRoot)"])
                new.reportRoot = old.reportRoot
            }
            settings.withLock { $0 = new }
            levels?.level = new.logLevel
            if new.selfThreshold != old.selfThreshold {
                selfMonitor.withLock { monitor in
                    monitor?.stop()
                    monitor = nil
                }
                startSelfMonitor(new)
            }
            let applied = new
            await onTimeKeeper { self.startTimers(applied) }
            logger.info("configuration reloaded")
            let status = await onWorker { self.keeper.state.statusLine() }
            context.notifier.notify(["READY": "1", "STATUS": status])
        } catch {
            logger.error("configuration rejected; keeping the previous one", metadata: ["hangwatch.error": "\(error)"])
            let status = await onWorker { self.keeper.state.statusLine() }
            context.notifier.notify(["READY": "1", "STATUS": "configuration rejected (\(error)); \(status)"])
        }
        await runPass(.full)
    }

    /// The agent's own main loop, watched like any service's (its reports land in the spool).
    private func startSelfMonitor(_ configuration: AgentConfiguration) {
        guard context.watchesItself, configuration.selfThreshold != .zero else { return }
        do {
            let monitorConfiguration = HangMonitor.Configuration(
                serviceName: "hangwatchd", threshold: configuration.selfThreshold, reportDirectory: spool.root + "/hangwatchd")
            let monitor = try HangMonitor(configuration: monitorConfiguration, logger: logger)
            try monitor.start()
            selfMonitor.withLock { $0 = monitor }
        } catch {
            logger.warning("the agent's own loop is not watched", metadata: ["hangwatch.error": "\(error)"])
        }
    }

    // MARK: - Time keeper

    /// (Re)starts the pass timers and the watchdog pings; on the time keeper.
    private func startTimers(_ configuration: AgentConfiguration) {
        scheduler.start(checkInterval: configuration.checkInterval, scanInterval: configuration.scanInterval)
        pinger?.stop()
        pinger = SystemdNotifier.watchdogInterval(environment: context.environment, pid: context.pid).map {
            WatchdogPinger(interval: $0, clock: context.clock, notifier: context.notifier, progress: progress, logger: logger)
        }
        pinger?.start()
    }

    // MARK: - Worker

    func enqueue(_ pass: SpoolPass) {
        worker.async { [self] in keeper.run(pass, configuration: configuration) }
    }

    /// Runs a pass on the worker and waits for it.
    func runPass(_ pass: SpoolPass) async {
        await onWorker { self.keeper.run(pass, configuration: self.configuration) }
    }

    /// Waits until the passes queued so far have run.
    func drain() async {
        await onWorker {}
    }

    /// The current status line.
    func status() async -> String {
        await onWorker { self.keeper.state.statusLine() }
    }

    // MARK: - Hops

    private func onWorker<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            worker.async { continuation.resume(returning: body()) }
        }
    }

    private func onTimeKeeper(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            context.timeKeeper.async {
                body()
                continuation.resume()
            }
        }
    }
}

/// Set once shutdown begins; read by the work at each report boundary.
private final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
