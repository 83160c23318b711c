import HangWatchReport
import Logging
import Prometheus
import Synchronization

/// The Prometheus scrape endpoint's exporter: the agent's metrics in a registry of their own
/// (every metric with its `# HELP`), the loop histograms beside them, served by `MetricsServer`.
/// Listening starts when it is made (a taken port fails the start) and ends at `shutdown()`.
final class PrometheusExporter: HangExporter {
    let metrics: AgentMetrics
    let registry: PrometheusCollectorRegistry
    private let server: MetricsServer?
    /// The loop and pool histograms and the busy ratios by `service` label, as of the last pass.
    private let loopBusy: LoopBusyTotals

    private final class LoopBusyTotals: Sendable {
        let byLabel = Mutex<LoopBusyExposition.ByLabel>(LoopBusyExposition.ByLabel())
    }

    static let catalog: [String: PrometheusMetricsCatalog.Entry] = [
        AgentMetrics.hangsTotal: .init(
            help: "Hangs of monitored loops, by service, version (its release) and severity (moderate, severe, fatal), by their busy time: a stop or freeze is not counted."),
        AgentMetrics.hangsByVerdict: .init(
            help: "Hangs of monitored loops, by service and verdict (computing, blocked, starved, throttled, paging, stopped, deadlocked, unknown; debugger pauses are not hangs)."),
        AgentMetrics.throttledSeconds: .init(
            help: "Seconds their cgroup's CPU limit held hung threads of the service back (each hang's throttledMs)."),
        AgentMetrics.monitoredSeconds: .init(
            help: "Seconds a live monitor watched the service's loop, by service and version: hangs per monitored hour is rate(hangwatch_hangs_total) / rate(this) * 3600."),
        AgentMetrics.hangDuration: .init(help: "How long each hang kept its loop busy (a stop or freeze during it left out).", durationBuckets: AgentMetrics.durationBuckets),
        AgentMetrics.onCpuRatio: .init(
            help: "Share of each hang the stuck thread spent on a CPU (1: computing, 0: blocked).", valueBuckets: AgentMetrics.ratioBuckets),
        AgentMetrics.reportsDropped: .init(help: "Reports lost to export failures, deleted by retention, or unreadable, by reason."),
        AgentMetrics.monitors: .init(help: "Monitored processes the agent sees, by state (alive, watchdog_stuck, process_stopped)."),
        AgentMetrics.poolStarvations: .init(
            help: "Times a monitored process's cooperative pool did not start the pool watch's probe within the threshold (a starved pool)."),
        AgentMetrics.callsCutShort: .init(
            help: "System calls of monitored processes that a capture signal interrupted (EINTR); each such sample is flagged in its report."),
        AgentMetrics.deadlocks: .init(
            help: "Hang reports whose thread waited in a cycle (a deadlock: it never ends by itself), counted as soon as their first provisional report says so."),
        AgentMetrics.spoolBytes: .init(help: "Bytes of hang reports in the spool."),
        AgentMetrics.spoolReports: .init(help: "Hang reports in the spool."),
        AgentMetrics.buildInfo: .init(help: "The agent's version (always 1)."),
    ]

    /// Records into a registry; serves it on `address` when one is given, binding at once (throws
    /// `MetricsServer.BindError` when it cannot; the endpoint is said to listen only once it does).
    init(version: String, address: AgentConfiguration.ListenAddress?, logger: Logger) throws {
        let registry = PrometheusCollectorRegistry()
        let loopBusy = LoopBusyTotals()
        self.registry = registry
        self.loopBusy = loopBusy
        metrics = AgentMetrics(version: version, factory: PrometheusMetricsCatalog(registry: registry, entries: Self.catalog))
        server = try address.map { address in
            try MetricsServer(address: address, logger: logger) { Self.exposition(registry, loopBusy.byLabel.withLock { $0 }) }
        }
        if let address, !address.isLoopback {
            logger.notice("metrics are served beyond this host", metadata: ["hangwatch.address": "\(address)"])
        }
    }

    /// The port the endpoint listens on (differs from the configured one when that was 0).
    var boundPort: Int? { server?.boundPort }

    var waitsForNames: Bool { false }

    func hangFinished(_ hang: FinishedHang) { metrics.record(hang) }

    func deadlockFound(_ release: ServiceRelease) { metrics.deadlock(release) }

    func reportsDropped(_ reason: DropReason, count: Int) { metrics.dropped(reason, count: count) }

    func publish(_ gauges: SpoolGauges) {
        metrics.publish(gauges)
        let loop = LoopBusyExposition.byLabel(gauges.loopBusy, label: metrics.serviceLabel)
        let pool = LoopBusyExposition.byLabel(gauges.poolStartDelay, label: metrics.serviceLabel)
        let ratio = LoopBusyExposition.byLabel(gauges.loopBusyRatio, label: metrics.serviceLabel)
        let lag = LoopBusyExposition.byLabel(gauges.loopLag, label: metrics.serviceLabel)
        loopBusy.byLabel.withLock { $0 = LoopBusyExposition.ByLabel(loop: loop, pool: pool, ratio: ratio, lag: lag) }
    }

    /// The Prometheus text exposition of everything recorded.
    func exposition() -> [UInt8] {
        Self.exposition(registry, loopBusy.byLabel.withLock { $0 })
    }

    private static func exposition(
        _ registry: PrometheusCollectorRegistry,
        _ histograms: LoopBusyExposition.ByLabel
    ) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(8192)
        registry.emit(into: &buffer)
        buffer.append(contentsOf: LoopBusyExposition.text(histograms.loop).utf8)
        buffer.append(
            contentsOf: LoopBusyExposition.text(
                histograms.pool, name: AgentMetrics.poolStartDelay, help: LoopBusyExposition.poolStartDelayHelp
            ).utf8)
        buffer.append(contentsOf: LoopBusyExposition.ratioText(histograms.ratio).utf8)
        buffer.append(
            contentsOf: LoopBusyExposition.text(
                histograms.lag, name: AgentMetrics.loopLag, help: LoopBusyExposition.loopLagHelp, source: .runLoop
            ).utf8)
        return buffer
    }

    func shutdown() async {
        await server?.shutdown()
    }
}
