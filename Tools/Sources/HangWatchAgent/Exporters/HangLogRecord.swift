import HangWatchReport
import Instrumentation
import Logging

/// One hang as one OpenTelemetry log record: WARN, the headline as body, the facts as attributes
/// (their names: docs/fleet.md), the hang's labels as `hangwatch.label.<key>`, and where its
/// process runs by the semantic conventions' names (`container.id`, `k8s.pod.name`,
/// `k8s.namespace.name`, `k8s.pod.uid`, `k8s.container.name`, `k8s.node.name`: the report's
/// `resource`; the record's own resource is the agent's, one per agent). A hang under a
/// valid W3C `traceparent` label gets that trace and span as the record's `trace_id` and
/// `span_id`: the collector links the hang to the request's trace. A label that is no valid
/// traceparent is an attribute like any other, and the record has no trace link.
enum HangLogRecord {
    /// `traces`: what puts a traceparent into the context the log handler reads the record's
    /// trace from (swift-otel's tracer, exporting nothing); nil: no trace links.
    static func emit(_ hang: FinishedHang, to logger: Logger, traces: (any Instrument)? = nil) {
        let attributes = attributes(of: hang)
        guard let traces, let parent = hang.labels["traceparent"].flatMap(TraceParent.init) else {
            // The record's body is the headline (export format, not a log line of the agent's own).
            logger.warning("\(hang.headline)", metadata: attributes)
            return
        }
        var context = ServiceContext.topLevel
        traces.extract(["traceparent": parent.text], into: &context, using: TraceParentCarrier())
        ServiceContext.withValue(context) { logger.warning("\(hang.headline)", metadata: attributes) }
    }

    static func attributes(of hang: FinishedHang) -> Logger.Metadata {
        var attributes: Logger.Metadata = [
            "service.name": "\(hang.reportedService)",
            "service.version": "\(hang.version)",
            "hangwatch.spool.service": "\(hang.service)",
            "hangwatch.hang.duration_ms": "\(FinishedHang.whole(hang.durationSeconds * 1000))",
            "hangwatch.hang.threshold_ms": "\(FinishedHang.whole(hang.thresholdMs))",
            "hangwatch.hang.severity": "\(hang.severity.rawValue)",
            "hangwatch.hang.count": "\(hang.count)",
            "hangwatch.hang.verdict": "\(hang.verdict)",
            "hangwatch.hang.signature": "\(hang.signature)",
            "hangwatch.hang.signature_kind": "\(hang.signatureKind.rawValue)",
            "hangwatch.hang.top_frames": .array(hang.topFrames.map { .string($0) }),
            "hangwatch.hang.started_at": "\(ReportTimestamp.format(hang.startedAt))",
            "hangwatch.report.path": "\(hang.reportPath)",
            "hangwatch.report.id": "\(hang.reportID)",
            "process.pid": "\(hang.pid)",
        ]
        if let culprit = hang.culprit { attributes["hangwatch.hang.culprit"] = "\(culprit)" }
        if let ratio = hang.onCpuRatio { attributes["hangwatch.hang.oncpu_ratio"] = "\(ratio)" }
        for (key, value) in hang.labels { attributes["hangwatch.label." + key] = "\(value)" }
        for (name, value) in hang.resource?.attributes ?? [] { attributes[name] = "\(value)" }
        return attributes
    }

    /// The one header an extractor is asked for.
    struct TraceParentCarrier: Extractor {
        func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
    }
}
