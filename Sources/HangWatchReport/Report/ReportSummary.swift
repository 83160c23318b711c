#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// What the list and grouping views need of one report: a few hundred bytes, kept in the index
/// so a directory of ten thousand reports is listed without re-reading them.
public struct ReportSummary: Codable, Sendable, Equatable {
    public var path: String
    public var id: String
    public var service: String
    public var host: String
    public var pid: Int32
    public var threadName: String?
    public var startedAt: Date
    public var durationMs: Double
    public var thresholdMs: Double
    public var outcome: HangReport.Outcome
    public var verdict: HangReport.Verdict
    public var onCpuRatio: Double?
    public var blockedIn: String?
    /// The signature the report is grouped by (`HangReport.grouping`): by function names when its
    /// heaviest stack is named, else by addresses (`signatureKind` says which).
    public var signature: String
    /// What `signature` hashes: `names` (one group across builds) or `addresses` (this build's).
    public var signatureKind: HangReport.SignatureKind = .addresses
    /// The labels in effect when the hang was seen (`HangReport.labels`); empty when none were.
    public var labels: [String: String] = [:]
    /// The release of the service that hung (`HangReport.serviceVersion?.version`, bounded as the
    /// monitor bounds it); nil when the report has none (monitors before it, dumps).
    public var serviceVersion: String?
    /// Where the process that hung runs, its container and pod (`HangReport.resource`, bounded as
    /// the monitor bounds it); nil when the report has none.
    public var resource: WorkloadIdentity?
    /// The heaviest stack's first app frame, for display.
    public var topFrame: String?
    /// The heaviest stack's first frames, for display (innermost first, at most 12).
    public var stack: [String]
    /// Repeats folded into this report: how many, their total and longest duration, and when the
    /// last one started (the report's own start when there are none).
    public var repeats: Int
    public var repeatsTotalMs: Double = 0
    public var repeatsMaxMs: Double = 0
    public var lastSeen: Date

    /// This report's hang and its folded repeats: total time.
    public var totalMs: Double { durationMs + repeatsTotalMs }
    /// The longest of this report's hang and its folded repeats.
    public var maxMs: Double { max(durationMs, repeatsMaxMs) }

    /// A summary from its parts (the index stores them field by field).
    public init(
        path: String, id: String, service: String, host: String, pid: Int32, threadName: String?, startedAt: Date,
        durationMs: Double, thresholdMs: Double, outcome: HangReport.Outcome, verdict: HangReport.Verdict,
        onCpuRatio: Double?, blockedIn: String?, signature: String, topFrame: String?, stack: [String], repeats: Int,
        repeatsTotalMs: Double = 0, repeatsMaxMs: Double = 0, lastSeen: Date? = nil,
        signatureKind: HangReport.SignatureKind = .addresses, labels: [String: String] = [:], serviceVersion: String? = nil,
        resource: WorkloadIdentity? = nil
    ) {
        self.resource = resource
        self.signatureKind = signatureKind
        self.labels = labels
        self.serviceVersion = serviceVersion
        self.path = path
        self.id = id
        self.service = service
        self.host = host
        self.pid = pid
        self.threadName = threadName
        self.startedAt = startedAt
        self.durationMs = durationMs
        self.thresholdMs = thresholdMs
        self.outcome = outcome
        self.verdict = verdict
        self.onCpuRatio = onCpuRatio
        self.blockedIn = blockedIn
        self.signature = signature
        self.topFrame = topFrame
        self.stack = stack
        self.repeats = repeats
        self.repeatsTotalMs = repeatsTotalMs
        self.repeatsMaxMs = repeatsMaxMs
        self.lastSeen = max(startedAt, lastSeen ?? startedAt)
    }

    public init(report: HangReport, path: String) {
        self.path = path
        id = report.id
        service = report.service
        host = report.host
        pid = report.pid
        threadName = report.thread.name
        startedAt = report.startedAt
        durationMs = report.durationMs
        thresholdMs = report.thresholdMs
        outcome = report.outcome
        verdict = report.context.verdict
        onCpuRatio = report.context.onCpuRatio
        blockedIn = report.context.blockedIn
        let grouping = report.grouping
        signature = grouping.signature
        signatureKind = grouping.kind
        labels = report.labels ?? [:]
        // A file may say anything: control characters, a megabyte, nothing. What the monitor would
        // have written of it, and an empty version is none.
        serviceVersion = report.serviceVersion.map { ServiceVersion.bounded($0.version) }.flatMap { $0.isEmpty ? nil : $0 }
        resource = report.resource?.bounded()
        topFrame = FrameNaming.topAppFrame(report).map { FrameNaming.displayName($0, images: report.images) }
        stack = (report.heaviestStack?.frames ?? []).prefix(12).map { FrameNaming.displayName($0, images: report.images) }
        repeats = report.repeats?.count ?? 0
        repeatsTotalMs = report.repeats?.totalDurationMs ?? 0
        repeatsMaxMs = report.repeats?.maxDurationMs ?? 0
        lastSeen = max(report.startedAt, report.repeats?.lastAt ?? report.startedAt)
    }

    /// `computing`, `futex`, `starved`, ...: what the thread was doing, in a word.
    public var stateWord: String {
        switch verdict {
        case .blocked:
            switch blockedIn {
            case nil: return "blocked"
            case "clock_nanosleep", "nanosleep": return "sleep"
            case let call?: return call
            }
        default: return verdict.rawValue
        }
    }
}
