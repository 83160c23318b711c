import Foundation
@_spi(Internal) import HangWatchReport

/// Finishes provisional reports whose process has gone: the fatal hang that a watchdog kill
/// (systemd's `WatchdogSec=` sends SIGABRT), the OOM killer or an operator ended. The report gets
/// `outcome: "process exited during hang"`, lasts until its last sample (the last time it was seen
/// going on), and says how the agent knew (`processExit`).
struct HangFinisher: Sendable {
    let spool: Spool
    /// Where processes are looked up (scripted in tests).
    let processes: any ProcessTable

    init(spool: Spool, processes: any ProcessTable = ProcFileSystem()) {
        self.spool = spool
        self.processes = processes
    }

    /// Why the process of a report is no longer there (`gone`, `pid reused`), or nil when it is.
    static func exitReason(pid: Int32, startTimeTicks: UInt64, status: ProcStat?) -> String? {
        guard let status, !status.isZombie else { return "gone" }
        // Reports from before the start time was recorded (0) are judged by the pid alone.
        if startTimeTicks != 0 && status.startTimeTicks != startTimeTicks { return "pid reused" }
        return nil
    }

    enum Outcome: Sendable, Equatable {
        /// Not provisional, or its process still runs.
        case leftAlone
        /// Finished and rewritten.
        case finished(HangReport)
    }

    /// Reads `file` and, if it is a provisional report whose process has gone, rewrites it finished.
    func finishIfOrphaned(_ file: Spool.File, now: Date = Date()) throws -> Outcome {
        let path = spool.path(of: file)
        var report = try ReportReader().read(path: path)
        guard report.outcome == .ongoing,
            let reason = Self.exitReason(
                pid: report.pid, startTimeTicks: report.process.startTimeTicks,
                status: processes.status(of: report.pid, pidNamespace: report.process.pidNamespace, startTicks: report.process.startTimeTicks))
        else { return .leftAlone }
        let lastSeenMs = max(report.samples.last?.offsetMs ?? 0, report.durationMs)
        report.outcome = .processExited
        report.durationMs = lastSeenMs
        report.endedAt = report.startedAt.addingTimeInterval(lastSeenMs / 1000)
        report.processExit = HangReport.ProcessExit(noticedAt: now, reason: reason, lastSeenAt: report.endedAt!)
        try ReportRewriter(spool: spool).replace(file, with: report)
        return .finished(report)
    }
}
