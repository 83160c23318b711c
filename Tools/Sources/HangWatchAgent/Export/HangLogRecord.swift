import HangWatchReport
import Logging

/// One hang as one OpenTelemetry log record: WARN, the headline as body, the facts as attributes
/// (their names: docs/fleet.md).
enum HangLogRecord {
    static func emit(_ hang: FinishedHang, to logger: Logger) {
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
        // The record's body is the headline (export format, not a log line of the agent's own).
        logger.warning("\(hang.headline)", metadata: attributes)
    }
}
