import Foundation
import HangWatchReport

/// Finishes provisional reports whose process has gone: the fatal hang that a watchdog kill
/// (systemd's `WatchdogSec=` sends SIGABRT), the OOM killer or an operator ended. The report gets
/// `outcome: "process exited during hang"`, lasts until its last sample (the last time it was seen
/// going on), and says how the agent knew (`processExit`).
public struct HangFinisher: Sendable {
    public let spool: Spool

    public init(spool: Spool) {
        self.init(spool: spool, processStatus: { ProcessStatus.read(pid: $0) })
    }

    /// What /proc says about a pid (injectable for tests).
    let processStatus: @Sendable (Int32) -> ProcessStatus?

    init(spool: Spool, processStatus: @escaping @Sendable (Int32) -> ProcessStatus?) {
        self.spool = spool
        self.processStatus = processStatus
    }

    /// Why the process of a report is no longer there (`gone`, `pid reused`), or nil when it is.
    static func exitReason(pid: Int32, startTimeTicks: UInt64, status: ProcessStatus?) -> String? {
        guard let status, !status.isZombie else { return "gone" }
        // Reports from before the start time was recorded (0) are judged by the pid alone.
        if startTimeTicks != 0 && status.startTimeTicks != startTimeTicks { return "pid reused" }
        return nil
    }

    public enum Outcome: Sendable, Equatable {
        /// Not provisional, or its process still runs.
        case leftAlone
        /// Finished and rewritten.
        case finished(HangReport)
    }

    /// Reads `file` and, if it is a provisional report whose process has gone, rewrites it finished.
    public func finishIfOrphaned(_ file: Spool.File, now: Date = Date()) throws -> Outcome {
        let path = spool.path(of: file)
        var report = try ReportReader().read(path: path)
        guard report.outcome == .ongoing,
            let reason = Self.exitReason(pid: report.pid, startTimeTicks: report.process.startTimeTicks, status: processStatus(report.pid))
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

/// Rewrites a report in place, atomically, only if the file is still the one that was read.
struct ReportRewriter {
    let spool: Spool

    enum Failure: Error, CustomStringConvertible {
        case changed(String)
        case renamed(String)
        var description: String {
            switch self {
            case .changed(let path): return "\(path): changed while the agent worked on it; left as it is"
            case .renamed(let path): return "\(path): the file name does not match the report id; left as it is"
            }
        }
    }

    func replace(_ file: Spool.File, with report: HangReport) throws {
        let path = spool.path(of: file)
        guard file.name == ReportStore.fileName(forID: report.id) else { throw Failure.renamed(path) }
        guard let info = DirectoryEntries.status(of: path, ifType: S_IFREG), UInt64(info.st_ino) == file.inode,
            UInt64(info.st_size) == file.size,
            Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec) == file.modifiedNanoseconds
        else { throw Failure.changed(path) }
        try ReportStore(directory: spool.directory(of: file.service), access: .sharedWithAgent).write(report)
    }
}
