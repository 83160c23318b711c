import Foundation
@_spi(Internal) import HangWatchReport
import HangWatchSymbolication

/// Writes function names and source lines into new reports shortly after they land, while the
/// binaries that produced them are still on disk (a deploy replaces them), and, for a process in a
/// pid namespace of its own (a container's), the pid the host knows it by. Build-ids are checked;
/// what could not be named is recorded in the report's `symbolication`.
struct ReportEnrichment: Sendable {
    let spool: Spool
    let symbolicator: Symbolicator
    let processes: any ProcessTable
    /// The agent's own pid namespace: a report from another one gets the host's pid.
    let ownPIDNamespace: UInt64?

    init(spool: Spool, symbolicator: Symbolicator, processes: any ProcessTable = ProcFileSystem(),
        ownPIDNamespace: UInt64? = NamespacedProcess.ownPIDNamespace)
    {
        self.spool = spool
        self.symbolicator = symbolicator
        self.processes = processes
        self.ownPIDNamespace = ownPIDNamespace
    }

    /// A finished report that has not been named yet.
    static func needsNames(_ report: HangReport) -> Bool {
        report.outcome != .ongoing && report.symbolication == nil && report.frames.contains { $0.symbol == nil }
    }

    /// A finished report from another pid namespace than `own` without the host's pid.
    static func needsHostPID(_ report: HangReport, own: UInt64? = NamespacedProcess.ownPIDNamespace) -> Bool {
        guard report.outcome != .ongoing, report.process.hostPid == nil, let namespace = report.process.pidNamespace, namespace != 0 else {
            return false
        }
        return namespace != own
    }

    /// Something to write into the report: names, or the host's pid.
    static func needsEnrichment(_ report: HangReport) -> Bool { needsNames(report) || needsHostPID(report) }

    /// Names the report in `file` and fills in the host's pid where they are missing, and rewrites
    /// it; nil if nothing was written (`record`: nil when it needed no names).
    func enrich(_ file: Spool.File, now: Date = Date()) throws -> (record: HangReport.Symbolication?, report: HangReport)? {
        var report = try ReportReader().read(path: spool.path(of: file))
        var record: HangReport.Symbolication?
        if Self.needsNames(report) {
            let summary = symbolicator.symbolicate(&report)
            record = HangReport.Symbolication(
                at: now, by: "hangwatchd", framesNamed: summary.framesResolved, framesUnnamed: summary.framesUnresolved,
                problems: summary.imageErrors.values.map { "\($0)" }.sorted())
            report.symbolication = record
        }
        var hostPID: Int32?
        if Self.needsHostPID(report, own: ownPIDNamespace) {
            hostPID = processes.hostPID(of: report.pid, pidNamespace: report.process.pidNamespace, startTicks: report.process.startTimeTicks)
                .flatMap { $0 != report.pid ? $0 : nil }
            report.process.hostPid = hostPID
        }
        guard record != nil || hostPID != nil else { return nil }
        try ReportRewriter(spool: spool).replace(file, with: report)
        return (record, report)
    }
}
