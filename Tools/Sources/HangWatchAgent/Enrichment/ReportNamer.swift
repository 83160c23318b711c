import Foundation
import HangWatchReport
import HangWatchSymbolication
import Logging

/// Names the frames of new reports once they have been left alone for `enrichDelay` (while the
/// binaries that produced them are still on disk), newest first, for at most `budget` of wall
/// time per pass; a report it could not rewrite is tried again a minute later. Hangs held for
/// names go out when their report is named, or as they are when it will not be.
struct ReportNamer {
    let spool: Spool
    let symbolicator: Symbolicator
    let clock: any AgentClock
    let exports: ExportHub
    let logger: Logger
    let isStopping: @Sendable () -> Bool

    /// Naming works this long per pass at most, then lets other work in.
    static let budget: TimeInterval = 2
    /// A report that could not be named is tried again after this.
    static let retryAfter: TimeInterval = 60

    /// Names the reports that are due. Returns false when it stopped for its budget with reports
    /// left (another pass should follow soon).
    @discardableResult
    func nameDue(_ state: SpoolState, configuration: AgentConfiguration, now: Date) -> Bool {
        let delay = Int64(DurationText.nanoseconds(configuration.enrichDelay))
        let nowNanoseconds = Int64(now.timeIntervalSince1970 * 1e9)
        let due = state.reports.filter { _, entry in
            entry.needsNames && entry.file.modifiedNanoseconds + delay <= nowNanoseconds
                && (entry.retryNamesAfter.map { $0 <= now } ?? true)
        }.sorted { $0.value.startedAt > $1.value.startedAt }
        guard !due.isEmpty else { return true }
        let enrichment = ReportEnrichment(spool: spool, symbolicator: symbolicator)
        let started = clock.now
        for (index, (key, entry)) in due.enumerated() {
            if isStopping() { return true }
            if clock.now.timeIntervalSince(started) > Self.budget {
                logger.debug("more reports to name; continuing in the next pass", metadata: ["hangwatch.left": "\(due.count - index)"])
                return false
            }
            let path = spool.path(of: entry.file)
            do {
                if let (record, report) = try enrichment.enrich(entry.file, now: now) {
                    if let record {
                        exports.namesSettled(reportPath: path, named: report)
                        state.enrichedReports += 1
                        logger.info(
                            "report named",
                            metadata: [
                                "hangwatch.path": "\(path)", "hangwatch.named": "\(record.framesNamed)",
                                "hangwatch.unnamed": "\(record.framesUnnamed)", "hangwatch.problems": "\(record.problems.count)",
                            ])
                        for problem in record.problems { logger.debug("symbolication problem", metadata: ["hangwatch.problem": "\(problem)"]) }
                    }
                    if let host = report.process.hostPid {
                        logger.debug("report given the host's pid", metadata: ["hangwatch.path": "\(path)", "hangwatch.pid": "\(report.pid)", "hangwatch.host_pid": "\(host)"])
                    }
                }
                state.refresh(key, in: spool, outcome: entry.outcome, needsNames: false)
                exports.namesSettled(reportPath: path, named: nil)
            } catch {
                state.reports[key]?.retryNamesAfter = now.addingTimeInterval(Self.retryAfter)
                exports.namesSettled(reportPath: path, named: nil)
                logger.debug("report not named yet", metadata: ["hangwatch.path": "\(path)", "hangwatch.error": "\(error)"])
            }
        }
        return true
    }
}
