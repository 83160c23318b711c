import CoreMetrics
import Foundation
import HangWatchReport
import Logging
import OTel
import ServiceLifecycle

/// OpenTelemetry export through swift-otel (the Swift server ecosystem's OTLP SDK, built on
/// swift-log and swift-metrics, so the agent's metrics need no second instrumentation): every
/// finished hang as an OTLP log record, and the agent's metrics, over OTLP/HTTP.
///
/// Nothing is bootstrapped process-wide: the log handler and the metrics factory are used
/// directly, and swift-otel's background work runs as services in the agent's `ServiceGroup`.
public final class OTLPExport: Sendable {
    public let metricsFactory: any MetricsFactory
    /// The background services (batch processor, exporters, metric reader) to run.
    public let services: [any Service]
    public let outbox: HangLogOutbox

    /// The OTLP settings for `endpoint`, as the agent uses them (exposed for `--check-config`).
    static func configuration(_ agent: AgentConfiguration, endpoint: String, diagnostics: Logger) -> OTel.Configuration {
        var configuration = OTel.Configuration.default
        configuration.serviceName = "hangwatchd"
        configuration.resourceAttributes = ["host.name": ProcessInfo.processInfo.hostName]
        configuration.diagnosticLogger = .custom(diagnostics)
        // Batch outcomes are reported at debug level; OTelDiagnostics filters what reaches the journal.
        configuration.diagnosticLogLevel = .debug
        configuration.traces.enabled = false
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

    /// Builds the pipeline; `onDrop` counts hang records given up.
    public init(configuration agent: AgentConfiguration, endpoint: String, logger: Logger, onDrop: @escaping @Sendable (Int) -> Void) throws {
        let router = OTelDiagnostics.Router()
        let diagnostics = Logger(label: "hangwatchd.otlp") { label in OTelDiagnostics(label: label, router: router, journal: logger) }
        let configuration = Self.configuration(agent, endpoint: endpoint, diagnostics: diagnostics)
        let logs = try OTel.makeLoggingBackend(configuration: configuration)
        let metrics = try OTel.makeMetricsBackend(configuration: configuration)
        let hangLogger = Logger(label: "hangwatch.hang", factory: logs.factory)
        outbox = HangLogOutbox(
            settings: .init(capacity: agent.otlpQueueSize, maxInFlight: agent.otlpQueueSize),
            emit: { hang in Self.log(hang, to: hangLogger) }, onDrop: onDrop)
        router.outbox = outbox
        metricsFactory = metrics.factory
        services = [logs.service, metrics.service]
    }

    public func export(_ hang: FinishedHang) {
        outbox.enqueue(hang)
    }

    /// One hang as one log record: WARN, the headline as body, the facts as attributes.
    static func log(_ hang: FinishedHang, to logger: Logger) {
        var attributes: Logger.Metadata = [
            "service.name": "\(hang.reportedService)",
            "hangwatch.spool.service": "\(hang.service)",
            "hangwatch.hang.duration_ms": "\(FinishedHang.whole(hang.durationSeconds * 1000))",
            "hangwatch.hang.threshold_ms": "\(FinishedHang.whole(hang.thresholdMs))",
            "hangwatch.hang.severity": "\(hang.severity.rawValue)",
            "hangwatch.hang.count": "\(hang.count)",
            "hangwatch.hang.verdict": "\(hang.verdict)",
            "hangwatch.hang.signature": "\(hang.signature)",
            "hangwatch.hang.top_frames": .array(hang.topFrames.map { .string($0) }),
            "hangwatch.hang.started_at": "\(ReportTimestamp.format(hang.startedAt))",
            "hangwatch.report.path": "\(hang.reportPath)",
            "hangwatch.report.id": "\(hang.reportID)",
            "process.pid": "\(hang.pid)",
        ]
        if let culprit = hang.culprit { attributes["hangwatch.hang.culprit"] = "\(culprit)" }
        if let ratio = hang.onCpuRatio { attributes["hangwatch.hang.oncpu_ratio"] = "\(ratio)" }
        logger.warning("\(hang.headline)", metadata: attributes)
    }
}

/// swift-otel's diagnostic log: warnings and errors go to the journal; the batch processor's
/// per-batch outcome lines drive the `HangLogOutbox`. The message texts are swift-otel 1.x's
/// (`OTelBatchLogRecordProcessor`); the end-to-end test with a receiver that goes away and comes
/// back fails if they change.
struct OTelDiagnostics: LogHandler {
    final class Router: @unchecked Sendable {
        // Set once, before any record is emitted.
        var outbox: HangLogOutbox?
    }

    static let exported = "Exported batch."
    static let failed = "Failed to export batch."
    static let droppedWhenFull = "Log records were dropped this iteration because queue was full"
    static let batchProcessor = "OTelBatchLogRecordProcessor"

    let label: String
    let router: Router
    let journal: Logger
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    init(label: String, router: Router, journal: Logger) {
        self.label = label
        self.router = router
        self.journal = journal
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        if case .string(Self.batchProcessor)? = fields["component"], let outbox = router.outbox {
            let message = event.message.description
            let size = fields["batch_size"].flatMap { Int("\($0)") } ?? 0
            switch message {
            case Self.exported:
                outbox.delivered(size)
            case Self.failed:
                outbox.failed(size, permanent: Self.isPermanent(event.error))
            case Self.droppedWhenFull:
                outbox.lostInPipeline(fields["dropped_count"].flatMap { Int("\($0)") } ?? 0)
            default:
                break
            }
        }
        guard event.level >= .warning else { return }
        var forwarded = fields.filter { $0.key == "component" || $0.key == "batch_size" || $0.key == "dropped_count" }
        if let error = event.error { forwarded["error"] = "\(error)" }
        journal.log(level: event.level, "OTLP export: \(event.message)", metadata: forwarded)
    }

    /// A refusal that retrying will not change: an HTTP 4xx other than 429.
    static func isPermanent(_ error: (any Error)?) -> Bool {
        guard let error else { return false }
        let text = String(reflecting: error)
        guard let range = text.range(of: "requestFailed") else { return false }
        let digits = text[range.upperBound...].split(whereSeparator: { !$0.isNumber }).first.flatMap { Int($0) }
        guard let status = digits else { return false }
        return (400..<500).contains(status) && status != 429 && status != 408
    }
}
