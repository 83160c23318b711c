import HangWatch
import Dispatch
import Foundation
import HangWatchReport
import HangWatchSymbolication
import Logging
import Synchronization

/// The host agent: keeps the spool healthy, finishes hangs whose process died, watches the
/// monitors' heartbeats, names new reports, and reports to systemd.
///
/// Threads: the main run loop only keeps time (timers, inotify, the systemd watchdog ping) and is
/// itself watched by a `HangMonitor`; the work (reading, rewriting, deleting) runs on one serial
/// worker queue. The watchdog ping is sent only while the worker is idle or its current pass is
/// younger than `maxPassDuration`, so a stuck agent stops pinging and systemd restarts it.
public final class Agent: @unchecked Sendable {
    public let spool: Spool
    private let logger: Logger
    private let levels: JournalLogHandler.LevelBox
    private let notifier: SystemdNotifier
    private let configurationSource: (file: String?, overrides: [String])
    private let settings: Mutex<AgentConfiguration>
    private let worker = DispatchQueue(label: "hangwatchd.worker")
    private let state = SpoolState()
    private let symbolicator: Symbolicator
    private let busySince = Atomic<UInt64>(0)
    private let stopping = Atomic<Bool>(false)
    private let lastStatus = Mutex<String>("")
    /// Main-queue state.
    private var timers: [Timer] = []
    private var watcher: SpoolWatcher?
    private var pendingServices: Set<String>? = []
    private var flushScheduled = false
    private var selfMonitor: HangMonitor?
    /// Metrics and OTLP (nil: nothing leaves the host). Told about hangs on the worker queue.
    public let export: FleetExport?
    /// Worker state: the first scan takes what is in the spool as already seen.
    private var baselineTaken = false
    /// Worker state: the root failed its check (replaced by a symlink, say); passes do nothing.
    private var rootRefused = false

    /// A pass running longer than this stops the systemd watchdog ping.
    public static let maxPassDuration: UInt64 = 120_000_000_000
    /// Enrichment works this long per pass at most, then lets other work in.
    static let enrichmentBudget: TimeInterval = 2

    public init(
        configuration: AgentConfiguration, configurationFile: String?, overrides: [String], logger: Logger,
        levels: JournalLogHandler.LevelBox, notifier: SystemdNotifier = SystemdNotifier(), export: FleetExport? = nil
    ) {
        self.export = export
        spool = Spool(root: configuration.reportRoot)
        settings = Mutex(configuration)
        configurationSource = (configurationFile, overrides)
        self.logger = logger
        self.levels = levels
        self.notifier = notifier
        symbolicator = Symbolicator(debugDirectories: configuration.debugDirectories)
    }

    public var configuration: AgentConfiguration { settings.withLock { $0 } }

    // MARK: - Life cycle

    /// Checks the spool, indexes it, starts the timers and the watcher, then tells systemd it is
    /// ready. Throws `Spool.Problem` for a spool it will not manage.
    public func start() async throws {
        try spool.check()
        let configuration = self.configuration
        logger.info(
            "hangwatchd starting",
            metadata: [
                "root": "\(spool.root)", "max_use": "\(configuration.maxUse)", "keep_free": "\(configuration.keepFree)",
                "max_age": "\(DurationText.format(configuration.maxAge))", "per_service": "\(configuration.maxReportsPerService)",
                "enrich": "\(configuration.enrich)",
            ])
        if let ignored = SystemdNotifier.watchdogSettingsIgnored() {
            let value = ProcessInfo.processInfo.environment["WATCHDOG_USEC"]?.prefix(40) ?? ""
            logger.warning("systemd watchdog settings ignored", metadata: ["reason": "\(ignored)", "watchdog_usec": "\(value)"])
        }
        startSelfMonitor(configuration)
        // Ready once the spool is indexed, dead hangs finished and retention applied; naming the
        // backlog comes after.
        let (status, services) = await onWorker { () -> (String, [String]) in
            self.performPass(.full, enrich: false)
            return (self.state.statusLine(), self.state.services)
        }
        guard !stopping.load(ordering: .acquiring) else { return }
        await onMain {
            self.startTimers(configuration)
            self.watcher = SpoolWatcher(spool: self.spool, queue: .main) { [weak self] changed in self?.servicesChanged(changed) }
            self.watcher?.start(services: services)
            if self.watcher == nil { self.logger.warning("no inotify: changes are seen at the next scan") }
        }
        if !notifier.notify(["READY": "1", "STATUS": status]), let socket = notifier.socketPath {
            // systemd would time the start out; outside systemd this is only a note.
            logger.warning("cannot notify systemd", metadata: ["notify_socket": "\(socket.prefix(108))"])
        }
        logger.info("hangwatchd ready", metadata: ["status": "\(status)"])
        enqueue(.liveness)
    }

    /// Called as soon as shutdown begins (from a signal handler's task): work in progress stops at
    /// the next report boundary.
    public func beginStopping() {
        stopping.store(true, ordering: .releasing)
    }

    /// Stops taking work, lets the current pass finish (at most `shutdownTimeout`), then stops.
    public func stop() async {
        notifier.notify(["STOPPING": "1", "STATUS": "stopping"])
        logger.info("hangwatchd stopping")
        stopping.store(true, ordering: .releasing)
        await onMain {
            self.timers.forEach { $0.invalidate() }
            self.timers = []
            self.watcher?.stop()
            self.watcher = nil
        }
        let drained = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let done = DispatchSemaphore(value: 0)
            worker.async { done.signal() }
            let timeout = DurationText.nanoseconds(configuration.shutdownTimeout)
            DispatchQueue.global().async {
                continuation.resume(returning: done.wait(timeout: .now() + .nanoseconds(Int(timeout))) == .success)
            }
        }
        if !drained { logger.warning("work still running at the shutdown deadline; exiting anyway (writes are atomic)") }
        selfMonitor?.stop()
        export?.shutdown()
        logger.info("hangwatchd stopped")
    }

    /// Re-reads the configuration (SIGHUP). An invalid one is rejected and the old one kept.
    public func reload() async {
        notifier.notify(["RELOADING": "1", "MONOTONIC_USEC": "\(SystemdNotifier.monotonicMicroseconds())"])
        let old = configuration
        do {
            var new = try AgentConfiguration.load(file: configurationSource.file, overrides: configurationSource.overrides)
            if new.exportSettingsDiffer(from: old) {
                logger.warning("metrics and OTLP settings take effect at the next start")
            }
            if new.reportRoot != old.reportRoot {
                logger.warning(
                    "HANGWATCHD_REPORT_ROOT changes take effect at the next start", metadata: ["root": "\(old.reportRoot)"])
                new.reportRoot = old.reportRoot
            }
            settings.withLock { $0 = new }
            levels.level = new.logLevel
            if new.selfThreshold != old.selfThreshold {
                selfMonitor?.stop()
                selfMonitor = nil
                startSelfMonitor(new)
            }
            let applied = new
            await onMain { self.startTimers(applied) }
            logger.info("configuration reloaded")
            let status = await onWorker { self.state.statusLine() }
            notifier.notify(["READY": "1", "STATUS": status])
        } catch {
            logger.error("configuration rejected; keeping the previous one", metadata: ["error": "\(error)"])
            let status = await onWorker { self.state.statusLine() }
            notifier.notify(["READY": "1", "STATUS": "configuration rejected (\(error)); \(status)"])
        }
        await runPass(.full)
    }

    /// The agent's own main loop, watched like any service's (its reports land in the spool).
    private func startSelfMonitor(_ configuration: AgentConfiguration) {
        guard configuration.selfThreshold != .zero else { return }
        do {
            var monitorConfiguration = HangMonitor.Configuration(
                serviceName: "hangwatchd", threshold: configuration.selfThreshold, reportDirectory: spool.root + "/hangwatchd")
            let monitor = try HangMonitor(configuration: monitorConfiguration, logger: logger)
            try monitor.start()
            selfMonitor = monitor
        } catch {
            logger.warning("the agent's own loop is not watched", metadata: ["error": "\(error)"])
        }
    }

    // MARK: - Main loop: time keeping

    private func startTimers(_ configuration: AgentConfiguration) {
        timers.forEach { $0.invalidate() }
        timers = []
        func every(_ interval: Duration, _ action: @escaping @Sendable () -> Void) {
            let seconds = Double(DurationText.nanoseconds(interval)) / 1e9
            // Not Timer(timeInterval:): on Linux (swift-corelibs-foundation) it fires at once.
            let timer = Timer(fire: Date(timeIntervalSinceNow: seconds), interval: seconds, repeats: true) { _ in action() }
            timer.tolerance = seconds / 10
            RunLoop.main.add(timer, forMode: .common)
            timers.append(timer)
        }
        every(configuration.checkInterval) { [weak self] in self?.enqueue(.liveness) }
        every(configuration.scanInterval) { [weak self] in self?.enqueue(.full) }
        if let interval = SystemdNotifier.watchdogInterval() {
            every(interval) { [weak self] in self?.pingWatchdog() }
            pingWatchdog()
        }
    }

    private func pingWatchdog() {
        let started = busySince.load(ordering: .acquiring)
        if started != 0, MonitorHealth.monotonicNanoseconds() - started > Self.maxPassDuration {
            logger.error("a pass has been running for over 2 minutes; no longer telling systemd all is well")
            return
        }
        notifier.notify("WATCHDOG=1")
    }

    /// inotify (on the main queue): collect the services that changed, then scan them together.
    private func servicesChanged(_ changed: Set<String>?) {
        if let changed, let pending = pendingServices {
            pendingServices = pending.union(changed)
        } else {
            pendingServices = nil
        }
        guard !flushScheduled else { return }
        flushScheduled = true
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.2) { [weak self] in
            guard let self else { return }
            flushScheduled = false
            let services = pendingServices
            pendingServices = []
            enqueue(services.map { .services($0) } ?? .full)
        }
    }

    // MARK: - Worker: the work

    enum Pass: Sendable {
        case full
        case services(Set<String>)
        case liveness
    }

    private func enqueue(_ pass: Pass) {
        worker.async { [self] in performPass(pass) }
    }

    /// Runs a pass on the worker and waits for it.
    func runPass(_ pass: Pass) async {
        await onWorker { self.performPass(pass) }
    }

    private func performPass(_ pass: Pass, enrich: Bool = true) {
        guard !stopping.load(ordering: .acquiring) else { return }
        busySince.store(MonitorHealth.monotonicNanoseconds(), ordering: .releasing)
        defer { busySince.store(0, ordering: .releasing) }
        guard rootIsSafe() else { return }
        let configuration = self.configuration
        let now = Date()
        switch pass {
        case .full, .services:
            var covering: Set<String>?
            if case .services(let services) = pass { covering = services }
            do {
                let scan = try spool.scan(only: covering)
                let export = self.export
                let finished = state.update(
                    with: scan, covering: covering, spool: spool, logger: logger, baseline: !baselineTaken,
                    severeAfter: configuration.severeAfter, newlyUnreadable: { export?.metrics.dropped(.unreadable, count: $0) })
                baselineTaken = true
                logSkipped(scan.skipped, fullScan: covering == nil)
                for hang in finished { hangFinished(hang, needsNames: configuration.enrich) }
                for hang in state.logsOfVanishedReports { export?.log(hang) }
                state.logsOfVanishedReports = []
                for service in scan.services { export?.metrics.serviceSeen(service) }
                removeLeftoverTemporaries(scan.temporaries, now: now)
            } catch {
                logger.error("cannot scan the spool", metadata: ["root": "\(spool.root)", "error": "\(error)"])
            }
        case .liveness:
            break
        }
        finishOrphanedHangs(now: now, configuration: configuration)
        checkMonitors(configuration)
        applyRetention(configuration, now: now)
        if enrich && configuration.enrich { enrichDueReports(configuration, now: now) }
        publishStatus()
        publishGauges()
    }

    /// Checks the root again before a pass (as at start): a root replaced by a symlink, or made
    /// unsafe, is left alone (nothing read, rewritten or deleted through it) until it is restored.
    private func rootIsSafe() -> Bool {
        do {
            try spool.check()
        } catch {
            if !rootRefused {
                rootRefused = true
                logger.error("the spool root is unsafe; leaving it alone until it is restored", metadata: ["error": "\(error)"])
                let status = "spool unsafe, nothing done: \(error)"
                lastStatus.withLock { $0 = status }
                notifier.notify(["STATUS": status])
            }
            return false
        }
        if rootRefused {
            rootRefused = false
            logger.notice("the spool root is safe again", metadata: ["root": "\(spool.root)"])
        }
        return true
    }

    /// Logs each entry the scan left alone once (again if its reason changes).
    private func logSkipped(_ skipped: [(path: String, reason: String)], fullScan: Bool) {
        var current: [String: String] = fullScan ? [:] : state.skippedEntries
        for (path, reason) in skipped {
            if state.skippedEntries[path] != reason {
                logger.warning("spool entry left alone", metadata: ["path": "\(path)", "reason": "\(reason)"])
            }
            current[path] = reason
        }
        state.skippedEntries = current
    }

    private func finishOrphanedHangs(now: Date, configuration: AgentConfiguration) {
        let finisher = HangFinisher(spool: spool)
        for (key, entry) in state.reports where entry.outcome == .ongoing {
            if stopping.load(ordering: .relaxed) { return }
            guard HangFinisher.exitReason(pid: entry.pid, startTimeTicks: entry.processStartTicks, status: ProcessStatus.read(pid: entry.pid)) != nil
            else { continue }
            do {
                if case .finished(let report) = try finisher.finishIfOrphaned(entry.file, now: now) {
                    state.finishedHangs += 1
                    logger.warning(
                        "fatal hang: the process exited during a hang",
                        metadata: [
                            "service": "\(report.service)", "id": "\(report.id)", "pid": "\(report.pid)",
                            "lasted_at_least_ms": "\(Int(report.durationMs))", "reason": "\(report.processExit?.reason ?? "")",
                        ])
                    refresh(key, outcome: report.outcome, needsNames: ReportEnrichment.needsNames(report))
                    let counted = state.reports[key]?.countedHangs ?? 0
                    if let hang = FinishedHang.newHangs(
                        in: report, service: key.service, alreadyCounted: counted, path: spool.path(of: entry.file),
                        severeAfter: configuration.severeAfter)
                    {
                        state.reports[key]?.countedHangs = counted + hang.count
                        hangFinished(hang, needsNames: configuration.enrich)
                    }
                }
            } catch {
                logger.warning("cannot finish a provisional report", metadata: ["path": "\(spool.path(of: entry.file))", "error": "\(error)"])
            }
        }
    }

    /// Re-reads the file's identity after the agent rewrote it.
    private func refresh(_ key: SpoolState.Key, outcome: HangReport.Outcome, needsNames: Bool) {
        guard var entry = state.reports[key], let file = spool.file(service: key.service, name: key.name) else { return }
        entry.file = file
        entry.outcome = outcome
        entry.needsNames = needsNames
        state.reports[key] = entry
    }

    private func checkMonitors(_ configuration: AgentConfiguration) {
        let now = MonitorHealth.monotonicNanoseconds()
        for (key, file) in state.heartbeatFiles {
            let heartbeat: MonitorHeartbeat
            do {
                heartbeat = try MonitorHeartbeat.read(path: spool.path(of: file))
            } catch {
                state.monitors[key] = nil
                continue
            }
            let health = MonitorHealth.assess(
                heartbeat, status: ProcessStatus.read(pid: heartbeat.pid), nowMonotonicNanoseconds: now,
                grace: configuration.heartbeatGrace)
            let previous = state.monitors[key]?.health
            let metadata: Logger.Metadata = ["service": "\(key.service)", "pid": "\(heartbeat.pid)", "state": "\(health.summary)"]
            switch health {
            case .stale:
                do {
                    try spool.remove(file)
                    logger.debug("removed a heartbeat left by a process that is gone", metadata: metadata)
                } catch {
                    logger.debug("cannot remove a stale heartbeat", metadata: ["error": "\(error)"])
                }
                state.heartbeatFiles[key] = nil
                state.monitors[key] = nil
                continue
            case .processStopped, .watchdogSilent:
                if previous.map({ !$0.isProblem }) ?? true {
                    logger.warning(
                        health == .processStopped ? "a monitored process is stopped" : "a monitor's watchdog has stopped ticking",
                        metadata: metadata)
                }
            case .healthy, .stopped:
                if previous?.isProblem == true { logger.info("a flagged monitor is healthy again", metadata: metadata) }
            }
            if let loop = heartbeat.loopBusy, let metrics = export?.metrics {
                metrics.loopBusy(service: key.service, added: loop.since(state.monitors[key]?.heartbeat?.loopBusy))
            }
            state.monitors[key] = (heartbeat, health)
        }
    }

    private func applyRetention(_ configuration: AgentConfiguration, now: Date) {
        let candidates = state.reports.values.map { entry in
            RetentionPlan.Candidate(
                file: entry.file, startedAt: entry.startedAt,
                isProtected: entry.outcome == .ongoing
                    && HangFinisher.exitReason(
                        pid: entry.pid, startTimeTicks: entry.processStartTicks, status: ProcessStatus.read(pid: entry.pid)) == nil)
        }
        let plan = RetentionPlan(candidates: candidates, limits: RetentionPlan.Limits(configuration), freeBytes: spool.freeBytes(), now: now)
        for (file, reason) in plan.deletions {
            do {
                try spool.remove(file)
                let key = SpoolState.Key(service: file.service, name: file.name)
                // A log record still waiting for names goes out as it is: the hang happened.
                if let held = state.reports[key]?.unsentLog { export?.log(held) }
                state.reports[key] = nil
                state.deletedReports += 1
                export?.metrics.dropped(.retention)
                logger.info("report deleted", metadata: ["path": "\(spool.path(of: file))", "reason": "\(reason.rawValue)"])
            } catch {
                logger.warning("report not deleted", metadata: ["error": "\(error)"])
            }
        }
    }

    private func removeLeftoverTemporaries(_ files: [Spool.File], now: Date) {
        // A write in progress takes milliseconds; an hour-old temporary file is a crashed writer's.
        let cutoff = Int64(now.timeIntervalSince1970 - 3600) * 1_000_000_000
        for file in files where file.modifiedNanoseconds < cutoff {
            try? spool.remove(file)
        }
    }

    private func enrichDueReports(_ configuration: AgentConfiguration, now: Date) {
        let delay = Int64(DurationText.nanoseconds(configuration.enrichDelay))
        let nowNanoseconds = Int64(now.timeIntervalSince1970 * 1e9)
        let due = state.reports.filter { _, entry in
            entry.needsNames && entry.file.modifiedNanoseconds + delay <= nowNanoseconds
                && (entry.retryNamesAfter.map { $0 <= now } ?? true)
        }.sorted { $0.value.startedAt > $1.value.startedAt }
        guard !due.isEmpty else { return }
        let enrichment = ReportEnrichment(spool: spool, symbolicator: symbolicator)
        let started = Date()
        for (index, (key, entry)) in due.enumerated() {
            if stopping.load(ordering: .relaxed) { return }
            if Date().timeIntervalSince(started) > Self.enrichmentBudget {
                logger.debug("more reports to name; continuing in the next pass", metadata: ["left": "\(due.count - index)"])
                enqueue(.liveness)
                return
            }
            do {
                if let (record, report) = try enrichment.enrich(entry.file, now: now) {
                    sendHeldLog(key, named: report)
                    state.enrichedReports += 1
                    logger.info(
                        "report named",
                        metadata: [
                            "path": "\(spool.path(of: entry.file))", "named": "\(record.framesNamed)",
                            "unnamed": "\(record.framesUnnamed)", "problems": "\(record.problems.count)",
                        ])
                    for problem in record.problems { logger.debug("symbolication problem", metadata: ["problem": "\(problem)"]) }
                }
                refresh(key, outcome: entry.outcome, needsNames: false)
                sendHeldLog(key, named: nil)
            } catch {
                state.reports[key]?.retryNamesAfter = now.addingTimeInterval(60)
                sendHeldLog(key, named: nil)
                logger.debug("report not named yet", metadata: ["path": "\(spool.path(of: entry.file))", "error": "\(error)"])
            }
        }
    }

    /// Counts a hang at once; its log record waits for names when the agent will name the report
    /// (a record with raw addresses helps no one), and goes out as it is when naming fails.
    private func hangFinished(_ hang: FinishedHang, needsNames: Bool) {
        guard let export else { return }
        export.count(hang)
        guard export.logsHangs else { return }
        let key = SpoolState.Key(service: hang.service, name: (hang.reportPath as NSString).lastPathComponent)
        if needsNames, state.reports[key]?.needsNames == true {
            state.reports[key]?.unsentLog = hang
        } else {
            export.log(hang)
        }
    }

    /// Sends the log record a report's naming held back (`report`: the named report, if any).
    private func sendHeldLog(_ key: SpoolState.Key, named report: HangReport?) {
        guard let hang = state.reports[key]?.unsentLog else { return }
        state.reports[key]?.unsentLog = nil
        export?.log(report.map { hang.renamed(from: $0) } ?? hang)
    }

    private func publishGauges() {
        guard let metrics = export?.metrics else { return }
        metrics.spool(reports: state.reports.count, bytes: state.totalBytes)
        var counts: [AgentMetrics.MonitorState: Int] = [:]
        for (_, monitor) in state.monitors {
            switch monitor.health {
            case .healthy: counts[.alive, default: 0] += 1
            case .watchdogSilent: counts[.watchdogStuck, default: 0] += 1
            case .processStopped: counts[.processStopped, default: 0] += 1
            case .stopped, .stale: break
            }
        }
        metrics.monitors(counts)
    }

    private func publishStatus() {
        let status = state.statusLine()
        let changed = lastStatus.withLock { last -> Bool in
            defer { last = status }
            return last != status
        }
        if changed { notifier.notify(["STATUS": status]) }
    }

    /// The current status line (for tests and logs).
    public func status() async -> String {
        await onWorker { self.state.statusLine() }
    }

    /// Monitors and their health, by "service/file" (for tests and, later, metrics).
    public func monitorHealth() async -> [String: MonitorHealth] {
        await onWorker {
            Dictionary(uniqueKeysWithValues: self.state.monitors.map { ("\($0.key.service)/\($0.key.name)", $0.value.health) })
        }
    }

    // MARK: - Hops

    private func onWorker<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            worker.async { continuation.resume(returning: body()) }
        }
    }

    private func onMain(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.main.async {
                body()
                continuation.resume()
            }
        }
    }
}
