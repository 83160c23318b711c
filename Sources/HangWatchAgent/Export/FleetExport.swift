import Logging
import ServiceLifecycle
import Synchronization

/// Everything that leaves the host: the metrics (Prometheus endpoint, OTLP) and the hang log
/// records (OTLP). The agent tells it what happened; it never reads the spool itself.
public final class FleetExport: Sendable {
    public let metrics: AgentMetrics
    public let server: MetricsServer?
    public let otlp: OTLPExport?

    public static let version = "0.1.0"

    /// Starts the metrics endpoint (if configured) and builds the OTLP pipeline (if configured;
    /// its services must run, see `services`). Throws `MetricsServer.BindError` when the
    /// endpoint's address cannot be bound.
    public init(configuration: AgentConfiguration, logger: Logger) throws {
        let metricsBox = Mutex<AgentMetrics?>(nil)
        let otlp = try configuration.otlpEndpoint.map { endpoint in
            try OTLPExport(configuration: configuration, endpoint: endpoint, logger: logger) { dropped in
                metricsBox.withLock { $0 }?.dropped(.export, count: dropped)
            }
        }
        let metrics = AgentMetrics(version: Self.version, extraFactories: otlp.map { [$0.metricsFactory] } ?? [])
        metricsBox.withLock { $0 = metrics }
        self.metrics = metrics
        self.otlp = otlp
        server = try configuration.metricsListen.map { try MetricsServer(address: $0, metrics: metrics, logger: logger) }
        if let listen = configuration.metricsListen, !listen.isLoopback {
            logger.notice("metrics are served beyond this host", metadata: ["address": "\(listen)"])
        }
    }

    /// swift-otel's background work, to run in the agent's service group.
    public var services: [any Service] { otlp?.services ?? [] }

    /// Counts a hang in the metrics.
    func count(_ hang: FinishedHang) {
        metrics.record(hang)
    }

    /// Sends a hang's log record (once its frames are named, when the agent names them).
    func log(_ hang: FinishedHang) {
        otlp?.export(hang)
    }

    /// Whether hang log records are exported at all.
    var logsHangs: Bool { otlp != nil }

    public func shutdown() {
        server?.shutdown()
    }
}
