import Foundation
import HangWatchReport
import HangWatchSymbolication
import Logging

/// The agent's work, one pass at a time: checks the spool root, indexes what changed
/// (`SpoolIndexer`), finishes dead hangs (`DeadHangSweep`), checks the monitors (`MonitorWatch`),
/// applies retention (`RetentionKeeper`), names new reports (`ReportNamer`), then tells systemd
/// (`STATUS=`, when it changed) and the exporters (gauges) how things stand.
///
/// Confined to one thread at a time (the agent's worker queue; a test's own thread). Every input
/// comes through its parts (the spool, a clock, a process table, the exporters, a notifier), so a
/// test can run passes directly, with scripted processes and time that moves only when it says.
final class SpoolKeeper: @unchecked Sendable {
    let spool: Spool
    let state = SpoolState()
    private let indexer: SpoolIndexer
    private let deadHangs: DeadHangSweep
    private let monitors: MonitorWatch
    private let retention: RetentionKeeper
    private let namer: ReportNamer
    private let monitoredTime: MonitoredTimeKeeper
    private let exports: ExportHub
    private let status: StatusReporter
    private let clock: any AgentClock
    private let progress: PassProgress
    private let logger: Logger
    private let isStopping: @Sendable () -> Bool
    /// The root failed its check (replaced by a symlink, say): passes do nothing until it passes.
    private var rootRefused = false

    /// A pass that could not finish its work asks for another through this.
    var requestPass: @Sendable (SpoolPass) -> Void = { _ in }

    init(
        spool: Spool, symbolicator: Symbolicator, exports: ExportHub, notifier: any SystemdNotifying, clock: any AgentClock,
        processes: any ProcessTable, progress: PassProgress = PassProgress(), logger: Logger,
        isStopping: @escaping @Sendable () -> Bool = { false }
    ) {
        self.spool = spool
        self.exports = exports
        self.clock = clock
        self.progress = progress
        self.logger = logger
        self.isStopping = isStopping
        status = StatusReporter(notifier: notifier)
        indexer = SpoolIndexer(spool: spool, exports: exports, logger: logger)
        deadHangs = DeadHangSweep(spool: spool, processes: processes, exports: exports, logger: logger, isStopping: isStopping)
        monitors = MonitorWatch(spool: spool, processes: processes, clock: clock, exports: exports, logger: logger)
        retention = RetentionKeeper(spool: spool, processes: processes, exports: exports, logger: logger)
        monitoredTime = MonitoredTimeKeeper(spool: spool, logger: logger)
        namer = ReportNamer(spool: spool, symbolicator: symbolicator, clock: clock, exports: exports, logger: logger, isStopping: isStopping)
    }

    /// Runs one pass with `configuration` (`enrich` false: no naming this time, as before the
    /// agent says it is ready).
    func run(_ pass: SpoolPass, configuration: AgentConfiguration, enrich: Bool = true) {
        guard !isStopping() else { return }
        progress.begin(at: clock.monotonicNanoseconds)
        defer { progress.end() }
        guard rootIsSafe() else { return }
        let now = clock.now
        switch pass {
        case .full: indexer.index(nil, into: state, configuration: configuration, now: now)
        case .services(let services): indexer.index(services, into: state, configuration: configuration, now: now)
        case .liveness: break
        }
        deadHangs.sweep(state, configuration: configuration, now: now)
        monitors.check(state, configuration: configuration)
        monitoredTime.flush(state.monitoredSeconds, nowMonotonic: clock.monotonicNanoseconds, now: now)
        retention.apply(state, configuration: configuration, now: now)
        if enrich && configuration.enrich && !namer.nameDue(state, configuration: configuration, now: now) {
            requestPass(.liveness)
        }
        status.update(state.statusLine())
        exports.publish(gauges)
    }

    /// Writes the monitored time not yet in the services' files (the agent is stopping).
    func flushMonitoredTime() {
        guard rootIsSafe() else { return }
        monitoredTime.flush(state.monitoredSeconds, nowMonotonic: clock.monotonicNanoseconds, now: clock.now, force: true)
    }

    /// The spool as the exporters see it.
    var gauges: SpoolGauges {
        SpoolGauges(
            reports: state.reports.count, bytes: state.totalBytes, monitors: state.monitorStates, services: state.services,
            loopBusy: state.loopBusy, loopLag: state.loopLag, poolStartDelay: state.poolStartDelay, poolStarvations: state.poolStarvations,
            callsCutShort: state.callsCutShort, monitoredSeconds: state.monitoredSeconds, loopBusyRatio: state.loopBusyRatios)
    }

    /// Checks the root again before a pass (as at start): a root replaced by a symlink, or made
    /// unsafe, is left alone (nothing read, rewritten or deleted through it) until it is restored.
    private func rootIsSafe() -> Bool {
        do {
            try spool.check()
        } catch {
            if !rootRefused {
                rootRefused = true
                logger.error("the spool root is unsafe; leaving it alone until it is restored", metadata: ["hangwatch.error": "\(error)"])
                status.update("spool unsafe, nothing done: \(error)")
            }
            return false
        }
        if rootRefused {
            rootRefused = false
            logger.notice("the spool root is safe again", metadata: ["hangwatch.root": "\(spool.root)"])
        }
        return true
    }
}
