import Foundation
import HangWatchReport
import HangWatchSymbolication

/// Writes function names and source lines into new reports shortly after they land, while the
/// binaries that produced them are still on disk (a deploy replaces them). Build-ids are checked;
/// what could not be named is recorded in the report's `symbolication`.
struct ReportEnrichment: Sendable {
    let spool: Spool
    let symbolicator: Symbolicator

    init(spool: Spool, symbolicator: Symbolicator) {
        self.spool = spool
        self.symbolicator = symbolicator
    }

    /// A finished report that has not been named yet.
    static func needsNames(_ report: HangReport) -> Bool {
        report.outcome != .ongoing && report.symbolication == nil && report.frames.contains { $0.symbol == nil }
    }

    /// Names the report in `file` and rewrites it; nil if it did not need it.
    func enrich(_ file: Spool.File, now: Date = Date()) throws -> (record: HangReport.Symbolication, report: HangReport)? {
        var report = try ReportReader().read(path: spool.path(of: file))
        guard Self.needsNames(report) else { return nil }
        let summary = symbolicator.symbolicate(&report)
        let record = HangReport.Symbolication(
            at: now, by: "hangwatchd", framesNamed: summary.framesResolved, framesUnnamed: summary.framesUnresolved,
            problems: summary.imageErrors.values.map { "\($0)" }.sorted())
        report.symbolication = record
        try ReportRewriter(spool: spool).replace(file, with: report)
        return (record, report)
    }
}
