import Foundation
import HangWatchReport
import Logging

/// Finishes the provisional reports of processes that are gone (or whose pid now belongs to
/// another process): the fatal hangs a watchdog kill, the OOM killer or a `kill -9` leave. Each
/// becomes `process exited during hang`, is logged, and counts as a fatal hang.
struct DeadHangSweep {
    let spool: Spool
    let processes: any ProcessTable
    let exports: ExportHub
    let logger: Logger
    let isStopping: @Sendable () -> Bool

    func sweep(_ state: SpoolState, configuration: AgentConfiguration, now: Date) {
        let finisher = HangFinisher(spool: spool, processes: processes)
        for (key, entry) in state.reports where entry.outcome == .ongoing {
            if isStopping() { return }
            let status = processes.status(of: entry.pid, pidNamespace: entry.pidNamespace, startTicks: entry.processStartTicks)
            guard HangFinisher.exitReason(pid: entry.pid, startTimeTicks: entry.processStartTicks, status: status) != nil else { continue }
            do {
                guard case .finished(let report) = try finisher.finishIfOrphaned(entry.file, now: now) else { continue }
                state.finishedHangs += 1
                logger.warning(
                    "fatal hang: the process exited during a hang",
                    metadata: [
                        "hangwatch.service": "\(report.service)", "hangwatch.id": "\(report.id)", "hangwatch.pid": "\(report.pid)",
                        "hangwatch.lasted_at_least_ms": "\(Int(report.durationMs))", "hangwatch.reason": "\(report.processExit?.reason ?? "")",
                    ])
                let needsNames = ReportEnrichment.needsNames(report)
                state.refresh(key, in: spool, outcome: report.outcome, needsNames: needsNames)
                let counted = state.reports[key]?.countedHangs ?? 0
                if let hang = FinishedHang.newHangs(
                    in: report, service: key.service, alreadyCounted: counted, path: spool.path(of: entry.file),
                    severeAfter: configuration.severeAfter)
                {
                    state.reports[key]?.countedHangs = counted + hang.count
                    exports.hangFinished(hang, namesPending: configuration.enrich && state.reports[key]?.needsNames == true)
                }
            } catch {
                logger.warning(
                    "cannot finish a provisional report",
                    metadata: ["hangwatch.path": "\(spool.path(of: entry.file))", "hangwatch.error": "\(error)"])
            }
        }
    }
}
