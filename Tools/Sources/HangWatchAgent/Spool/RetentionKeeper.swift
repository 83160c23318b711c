import Foundation
import Logging

/// Applies `RetentionPlan` to the spool: deletes what it chooses, through `Spool.remove` (never
/// through a symlink, never a file replaced since the scan), and logs each deletion with why. A
/// hang still going on in a live process is never chosen.
struct RetentionKeeper {
    let spool: Spool
    let processes: any ProcessTable
    let exports: ExportHub
    let logger: Logger

    func apply(_ state: SpoolState, configuration: AgentConfiguration, now: Date) {
        let candidates = state.reports.values.map { entry in
            RetentionPlan.Candidate(
                file: entry.file, startedAt: entry.startedAt,
                isProtected: entry.outcome == .ongoing
                    && HangFinisher.exitReason(
                        pid: entry.pid, startTimeTicks: entry.processStartTicks,
                        status: processes.status(of: entry.pid, pidNamespace: entry.pidNamespace, startTicks: entry.processStartTicks)) == nil)
        }
        let plan = RetentionPlan(candidates: candidates, limits: RetentionPlan.Limits(configuration), freeBytes: spool.freeBytes(), now: now)
        for (file, reason) in plan.deletions {
            do {
                try spool.remove(file)
                // A hang held for names goes out as it is: the hang happened.
                exports.namesSettled(reportPath: spool.path(of: file), named: nil)
                state.reports[SpoolState.Key(service: file.service, name: file.name)] = nil
                state.deletedReports += 1
                exports.reportsDropped(.retention)
                logger.info("report deleted", metadata: ["hangwatch.path": "\(spool.path(of: file))", "hangwatch.reason": "\(reason.rawValue)"])
            } catch {
                logger.warning("report not deleted", metadata: ["hangwatch.path": "\(spool.path(of: file))", "hangwatch.error": "\(error)"])
            }
        }
    }
}
