import Foundation
import HangWatchReport

/// A hang the agent has just seen finish (or repeat): what the metrics count and the OTLP log
/// record carries. Built from the report once, so exporters never read files.
struct FinishedHang: Sendable, Equatable {
    enum Severity: String, Sendable, CaseIterable {
        /// Shorter than `HANGWATCHD_SEVERE_AFTER`.
        case moderate
        /// At least `HANGWATCHD_SEVERE_AFTER`.
        case severe
        /// The process exited (or was killed) during the hang.
        case fatal
    }

    /// The spool directory the report is in: the metrics' `service` label (a directory exists
    /// only when an administrator made it, so the label's values stay few).
    var service: String
    /// The service name the monitor wrote into the report (the log record's `service.name`).
    var reportedService: String
    /// The service's release the report names (`serviceVersion`), or `unversioned`: the metrics'
    /// `version` label, the log record's `service.version`.
    var version: String = MonitoredTime.unversioned
    var severity: Severity
    /// How many hangs this stands for: 1, or the repeats a monitor folded into the report since
    /// the agent last looked.
    var count: Int
    /// Each hang's busy duration (for folded repeats, their mean: the report keeps only the total):
    /// its duration less the time its process was stopped (frozen, stopped by a signal or a
    /// debugger), which is no code's.
    var durationSeconds: Double
    var onCpuRatio: Double?
    var verdict: String
    /// The report's verdict (the metrics' `verdict` label: a fixed set).
    var verdictKind: HangReport.Verdict = .unknown
    /// The time the cgroup's CPU limit held the hung thread back (`throttledMs`), this report's own
    /// hang only (folded repeats carry none).
    var throttledSeconds: Double = 0
    /// The signature the report is grouped by (`HangReport.grouping`), and what it hashes.
    var signature: String
    var signatureKind: HangReport.SignatureKind
    /// The labels in effect when the hang was seen (`HangReport.labels`).
    var labels: [String: String]
    var topFrames: [String]
    /// The first frame of the service's own code on the heaviest stack (what `hangwatch list` shows).
    var culprit: String?
    var reportPath: String
    var reportID: String
    var pid: Int32
    var thresholdMs: Double
    var startedAt: Date
    /// Where the process that hung runs, its container and pod (`HangReport.resource`): the log
    /// record's `container.id` and `k8s.*` attributes. Never a metrics label (docs/fleet.md).
    var resource: WorkloadIdentity? = nil

    /// Whether `report` counts as a hang at all: a finished one, not a debugger's pause, and busy
    /// past its threshold once the time its process was stopped is taken out (a loop frozen
    /// mid-iteration is not a hang because of the freeze).
    static func counts(_ report: HangReport) -> Bool {
        guard report.outcome != .ongoing, report.context.verdict != .debugger else { return false }
        guard report.context.stoppedMs != nil else { return true }
        return busyMilliseconds(report) >= report.thresholdMs
    }

    /// The report's duration less the time its process was stopped; never negative (a file may say
    /// anything).
    static func busyMilliseconds(_ report: HangReport) -> Double {
        let stopped = report.context.stoppedMs.map { $0.isFinite ? max(0, $0) : 0 } ?? 0
        let duration = report.durationMs.isFinite ? report.durationMs : 0
        return max(0, duration - stopped)
    }

    /// How many hangs `report` stands for (itself and its folded repeats). The count comes from a
    /// file: a negative one counts as none, and one over `maxRepeats` as `maxRepeats`, so that sums
    /// over a whole spool (and the metrics' counters) never overflow.
    static func hangCount(_ report: HangReport) -> Int {
        1 + min(max(0, report.repeats?.count ?? 0), maxRepeats)
    }

    /// More repeats than a monitor's rate limit lets it fold in a thousand years.
    static let maxRepeats = 1 << 40

    /// The hangs in `report` not yet counted (`alreadyCounted` of them were), or nil.
    static func newHangs(
        in report: HangReport, service: String, alreadyCounted: Int, path: String, severeAfter: Duration
    ) -> FinishedHang? {
        guard counts(report) else { return nil }
        let total = hangCount(report)
        guard total > alreadyCounted else { return nil }
        let added = total - alreadyCounted
        let repeatsMs = report.repeats?.totalDurationMs ?? 0
        let durationMs: Double
        if alreadyCounted == 0 {
            durationMs = (busyMilliseconds(report) + repeatsMs) / Double(added)
        } else {
            // Only repeats are new; the report keeps their total, not each one.
            durationMs = repeatsMs / Double(max(1, report.repeats?.count ?? 1))
        }
        let severe = DurationText.nanoseconds(severeAfter)
        let severity: Severity =
            report.outcome == .processExited ? .fatal : (durationMs * 1e6 >= Double(severe) ? .severe : .moderate)
        let summary = ReportSummary(report: report, path: path)
        var hang = FinishedHang(
            service: service, reportedService: report.service, version: report.serviceVersion?.version ?? MonitoredTime.unversioned,
            severity: severity, count: added, durationSeconds: durationMs / 1000,
            onCpuRatio: report.context.onCpuRatio, verdict: HangReportSummary.verdictLine(report), verdictKind: report.context.verdict,
            throttledSeconds: alreadyCounted == 0 ? throttledSeconds(report) : 0, signature: summary.signature,
            signatureKind: summary.signatureKind, labels: summary.labels, topFrames: Array(summary.stack.prefix(5)), culprit: summary.topFrame, reportPath: path, reportID: report.id, pid: report.pid,
            thresholdMs: report.thresholdMs, startedAt: report.startedAt)
        hang.resource = summary.resource
        return hang
    }

    /// The report's throttled time, seconds: at most its busy duration (a file may say anything).
    static func throttledSeconds(_ report: HangReport) -> Double {
        guard let throttled = report.context.throttledMs, throttled.isFinite, throttled > 0 else { return 0 }
        return min(throttled, busyMilliseconds(report)) / 1000
    }

    /// The same hang with the names and verdict of `report` (after the agent named its frames).
    func renamed(from report: HangReport) -> FinishedHang {
        var hang = self
        let summary = ReportSummary(report: report, path: reportPath)
        hang.topFrames = Array(summary.stack.prefix(5))
        hang.culprit = summary.topFrame
        hang.verdict = HangReportSummary.verdictLine(report)
        // Named now: grouped by names, as `hangwatch top` groups it.
        hang.signature = summary.signature
        hang.signatureKind = summary.signatureKind
        return hang
    }

    /// The log record's body: what a person reads first in the log view.
    var headline: String {
        let milliseconds = Self.whole(durationSeconds * 1000)
        let culprit = (self.culprit ?? topFrames.first).map { " in \($0)" } ?? ""
        return "\(reportedService.isEmpty ? "(unnamed service)" : reportedService) hung \(milliseconds) ms\(culprit): \(verdict)"
    }

    /// `value` rounded, as an integer when it has one: a report file's 1e308 has none, and must not
    /// bring the agent down.
    static func whole(_ value: Double) -> String {
        Int(exactly: value.rounded()).map(String.init) ?? String(format: "%.3g", value)
    }
}
