import Foundation
import HangWatchReport
import Logging

/// What the agent knows about the spool: every report (read once per version of the file), every
/// monitor's health, and the last hang. Confined to the agent's worker queue.
final class SpoolState {
    struct Report {
        var file: Spool.File
        var startedAt: Date
        var outcome: HangReport.Outcome
        var pid: Int32
        var processStartTicks: UInt64
        var needsNames: Bool
        /// Names were tried and the file not rewritten (e.g. it changed meanwhile): not before this.
        var retryNamesAfter: Date?
        /// Hangs in this report already counted for export (itself and its folded repeats).
        var countedHangs = 0
        /// A hang whose log record waits until the agent has named the report's frames.
        var unsentLog: FinishedHang?
    }

    struct Key: Hashable {
        var service: String
        var name: String
    }

    var reports: [Key: Report] = [:]
    /// Files that could not be read, with why (kept so they are not re-read until they change).
    var unreadable: [Key: (file: Spool.File, reason: String)] = [:]
    var services: [String] = []
    /// Entries the scans left alone (path to why), each logged once.
    var skippedEntries: [String: String] = [:]
    var monitors: [Key: (heartbeat: MonitorHeartbeat?, health: MonitorHealth)] = [:]
    var heartbeatFiles: [Key: Spool.File] = [:]
    var lastHang: (service: String, startedAt: Date)?
    var finishedHangs = 0
    /// Log records held for naming whose report went away first: sent as they are.
    var logsOfVanishedReports: [FinishedHang] = []
    var enrichedReports = 0
    var deletedReports = 0

    var totalBytes: UInt64 { reports.values.reduce(0) { $0 + $1.file.size } }

    /// Brings the index up to date with `scan` (which covered `services`, nil: all): reads new
    /// and changed reports, forgets vanished ones. Returns the hangs that finished (or repeated)
    /// since the last look; with `baseline`, what is already there is taken as seen and counted.
    @discardableResult
    func update(
        with scan: Spool.Scan, covering services: Set<String>?, spool: Spool, logger: Logger, baseline: Bool = false,
        severeAfter: Duration = .seconds(2), newlyUnreadable: ((Int) -> Void)? = nil
    ) -> [FinishedHang] {
        var finished: [FinishedHang] = []
        var unreadableCount = 0
        defer { if unreadableCount > 0 { newlyUnreadable?(unreadableCount) } }
        func covered(_ service: String) -> Bool { services.map { $0.contains(service) || service.isEmpty } ?? true }
        if services == nil { self.services = scan.services } else {
            self.services = Array(Set(self.services).union(scan.services)).sorted()
        }
        var seen = Set<Key>()
        for file in scan.reports {
            let key = Key(service: file.service, name: file.name)
            seen.insert(key)
            if let known = reports[key], known.file == file { continue }
            if let bad = unreadable[key], bad.file == file { continue }
            do {
                let path = spool.path(of: file)
                let report = try ReportReader().read(path: path)
                unreadable[key] = nil
                var counted = reports[key]?.countedHangs ?? 0
                if baseline {
                    counted = FinishedHang.counts(report) ? FinishedHang.hangCount(report) : 0
                } else if let hang = FinishedHang.newHangs(
                    in: report, service: file.service, alreadyCounted: counted, path: path, severeAfter: severeAfter)
                {
                    finished.append(hang)
                    counted += hang.count
                }
                reports[key] = Report(
                    file: file, startedAt: report.startedAt, outcome: report.outcome, pid: report.pid,
                    processStartTicks: report.process.startTimeTicks, needsNames: ReportEnrichment.needsNames(report),
                    countedHangs: counted, unsentLog: reports[key]?.unsentLog)
                if lastHang.map({ report.startedAt > $0.startedAt }) ?? true {
                    lastHang = (report.service, report.startedAt)
                }
            } catch {
                reports[key] = nil
                if unreadable[key] == nil {
                    logger.warning("unreadable report left alone", metadata: ["path": "\(spool.path(of: file))", "error": "\(error)"])
                    unreadableCount += 1
                }
                unreadable[key] = (file, "\(error)")
            }
        }
        for key in Array(reports.keys) where covered(key.service) && !seen.contains(key) {
            if let held = reports[key]?.unsentLog { logsOfVanishedReports.append(held) }
            reports[key] = nil
        }
        for key in Array(unreadable.keys) where covered(key.service) && !seen.contains(key) { unreadable[key] = nil }
        var beats = Set<Key>()
        for file in scan.heartbeats {
            let key = Key(service: file.service, name: file.name)
            beats.insert(key)
            heartbeatFiles[key] = file
        }
        for key in Array(heartbeatFiles.keys) where covered(key.service) && !beats.contains(key) {
            heartbeatFiles[key] = nil
            monitors[key] = nil
        }
        return finished
    }

    /// The one-line summary for systemd's `STATUS=`.
    func statusLine() -> String {
        let megabytes = Double(totalBytes) / 1_048_576
        var parts = [
            "\(services.count) service\(services.count == 1 ? "" : "s")",
            "\(reports.count) report\(reports.count == 1 ? "" : "s") (\(String(format: "%.1f", megabytes)) MiB)",
        ]
        if let lastHang {
            parts.append("last hang \(lastHang.service.isEmpty ? "(root)" : lastHang.service) \(ReportTimestamp.format(lastHang.startedAt))")
        }
        let flagged = monitors.filter { $0.value.health.isProblem }
        if !flagged.isEmpty {
            let names = flagged.map { "\($0.key.service.isEmpty ? "(root)" : $0.key.service): \($0.value.health.summary)" }.sorted()
            parts.append("\(flagged.count) monitor\(flagged.count == 1 ? "" : "s") flagged (\(names.prefix(3).joined(separator: "; ")))")
        }
        return parts.joined(separator: ", ")
    }
}
