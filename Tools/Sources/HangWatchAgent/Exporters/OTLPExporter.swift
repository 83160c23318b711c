import CoreMetrics
import Foundation
import HangWatchReport
import Logging
import OTel
import ServiceLifecycle

/// OpenTelemetry export through swift-otel (the Swift server ecosystem's OTLP SDK, built on
/// swift-log and swift-metrics, so the agent's metrics need no second instrumentation): the
/// agent's metrics over OTLP/HTTP (this exporter), and every finished hang as an OTLP log record
/// (`logRecords`, an exporter of its own: it waits for names), linked to its request's trace when
/// it carries a `traceparent` label (swift-otel's tracer reads it; no span is exported).
///
/// Nothing is bootstrapped process-wide: the log handler and the metrics factory are used
/// directly, and swift-otel's background work (`services`) runs in the agent's `ServiceGroup`,
/// which stops it after the agent (so it flushes what the agent handed over last).
final class OTLPExporter: HangExporter {
    let metrics: AgentMetrics
    let logRecords: HangLogOutbox
    /// The background services (batch processor, exporters, metric reader) to run.
    let services: [any Service]

    /// The OTLP settings for `endpoint`, as the agent uses them. The resource is the agent's: its
    /// host, and where the agent itself runs (`identity`, read as a monitor reads its own: a
    /// sidecar's pod is its service's, a DaemonSet's names the node), by the semantic conventions'
    /// names; each hang's own container and pod are attributes of its log record (`HangLogRecord`).
    static func configuration(
        _ agent: AgentConfiguration, endpoint: String, diagnostics: Logger, identity: WorkloadIdentity? = WorkloadIdentity.ofThisProcess()
    ) -> OTel.Configuration {
        var configuration = OTel.Configuration.default
        configuration.serviceName = "hangwatchd"
        configuration.resourceAttributes = ["host.name": ProcessInfo.processInfo.hostName]
        for (name, value) in identity?.attributes ?? [] { configuration.resourceAttributes[name] = value }
        configuration.diagnosticLogger = .custom(diagnostics)
        // Batch outcomes are reported at debug level; OTelDiagnostics filters what reaches the journal.
        configuration.diagnosticLogLevel = .debug
        // No spans are made or sent: the tracer only reads a hang's traceparent into the context
        // its log record takes its trace_id and span_id from (HangLogRecord).
        configuration.traces.enabled = true
        configuration.traces.exporter = .none
        let headers = agent.otlpHeaders.map { ($0.name, $0.value) }
        let wire: OTel.Configuration.OTLPExporterConfiguration.`Protocol` = agent.otlpProtocol == .json ? .httpJSON : .httpProtobuf

        configuration.logs.enabled = true
        configuration.logs.level = .info
        configuration.logs.exporter = .otlp
        configuration.logs.otlpExporter.endpoint = endpoint + "/v1/logs"
        configuration.logs.otlpExporter.protocol = wire
        configuration.logs.otlpExporter.headers = headers
        configuration.logs.otlpExporter.timeout = .seconds(10)
        configuration.logs.batchLogRecordProcessor.scheduleDelay = .seconds(1)
        configuration.logs.batchLogRecordProcessor.exportTimeout = .seconds(30)
        configuration.logs.batchLogRecordProcessor.maxQueueSize = agent.otlpQueueSize
        configuration.logs.batchLogRecordProcessor.maxExportBatchSize = min(512, agent.otlpQueueSize)

        configuration.metrics.enabled = true
        configuration.metrics.exporter = .otlp
        configuration.metrics.otlpExporter.endpoint = endpoint + "/v1/metrics"
        configuration.metrics.otlpExporter.protocol = wire
        configuration.metrics.otlpExporter.headers = headers
        configuration.metrics.otlpExporter.timeout = .seconds(10)
        configuration.metrics.exportInterval = agent.otlpMetricsInterval
        configuration.metrics.defaultDurationHistogramBuckets = AgentMetrics.durationBuckets
        configuration.metrics.valueHistogramBuckets = [AgentMetrics.onCpuRatio: AgentMetrics.ratioBuckets]
        return configuration
    }

    /// Builds the pipeline; `onDrop` counts hang records the outbox gave up.
    init(
        configuration agent: AgentConfiguration, endpoint: String, version: String, logger: Logger,
        onDrop: @escaping @Sendable (Int) -> Void
    ) throws {
        let router = OTelDiagnostics.Router()
        let diagnostics = Logger(label: "hangwatchd.otlp") { label in OTelDiagnostics(label: label, router: router, journal: logger) }
        let configuration = Self.configuration(agent, endpoint: endpoint, diagnostics: diagnostics)
        let logs = try OTel.makeLoggingBackend(configuration: configuration)
        let metricsBackend = try OTel.makeMetricsBackend(configuration: configuration)
        let traces = try OTel.makeTracingBackend(configuration: configuration)
        let tracer = traces.factory
        let hangLogger = Logger(label: "hangwatch.hang", factory: logs.factory)
        logRecords = HangLogOutbox(
            settings: .init(capacity: agent.otlpQueueSize, maxInFlight: agent.otlpQueueSize),
            emit: { hang in HangLogRecord.emit(hang, to: hangLogger, traces: tracer) }, onDrop: onDrop)
        router.outbox = logRecords
        metrics = AgentMetrics(version: version, factory: metricsBackend.factory)
        services = [logs.service, metricsBackend.service, traces.service]
    }

    var waitsForNames: Bool { false }

    func hangFinished(_ hang: FinishedHang) { metrics.record(hang) }

    func deadlockFound(_ release: ServiceRelease) { metrics.deadlock(release) }

    func reportsDropped(_ reason: DropReason, count: Int) { metrics.dropped(reason, count: count) }

    func publish(_ gauges: SpoolGauges) { metrics.publish(gauges) }

    /// Nothing to let go of: swift-otel's services flush and stop with the service group.
    func shutdown() async {}
}
