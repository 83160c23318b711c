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
        /// Its process's pid namespace (`HangReport.Process.pidNamespace`): `pid` is that namespace's.
        var pidNamespace: UInt64?
        /// Names (or the host's pid) still to write into it (`ReportEnrichment.needsEnrichment`).
        var needsNames: Bool
        /// Names were tried and the file not rewritten (e.g. it changed meanwhile): not before this.
        var retryNamesAfter: Date?
        /// Hangs in this report already counted for export (itself and its folded repeats).
        var countedHangs = 0
        /// Its deadlock (`verdict` `deadlocked`, from its first, provisional version on) was counted.
        var countedDeadlock = false
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
    /// The heartbeats' running totals as last counted (kept across unreadable moments of a
    /// heartbeat, so nothing is counted twice).
    var heartbeatTotals = HeartbeatTotals()
    var lastHang: (service: String, startedAt: Date)?
    var finishedHangs = 0
    var enrichedReports = 0
    var deletedReports = 0
    /// Whether the first scan was taken (what it found counts as seen, not as new hangs).
    var baselineTaken = false
    /// Loop iterations the monitors of each service counted since the agent started.
    var loopBusy: [String: LoopBusyHistogram.Counts] = [:]
    /// The busy pieces the run loops' flight recorders of each service counted since the agent started.
    var loopLag: [String: LoopBusyHistogram.Counts] = [:]
    /// How late the cooperative pool started the probes of each service's monitors, since the agent started.
    var poolStartDelay: [String: LoopBusyHistogram.Counts] = [:]
    /// Probes that found the pool starved, by service, since the agent started.
    var poolStarvations: [String: UInt64] = [:]
    /// System calls the monitored processes' captures cut short, by service, since the agent started.
    var callsCutShort: [String: UInt64] = [:]
    /// Seconds live monitors watched, by service directory and version, since the agent started
    /// (`MonitorWatch`; `hangwatch_monitored_seconds_total`).
    var monitoredSeconds: [ServiceRelease: Double] = [:]
    /// Each heartbeat file's monitor when it was last seen watching: its process, and the agent's
    /// monotonic time of that look. The time to the next look that finds it watching too counts.
    var lastWatched: [Key: (pid: Int32, startTimeTicks: UInt64, atNanoseconds: UInt64)] = [:]

    var totalBytes: UInt64 { reports.values.reduce(0) { $0 + $1.file.size } }

    /// What `update` found.
    struct Update {
        /// Hangs that finished (or repeated) since the last look.
        var finished: [FinishedHang] = []
        /// Reports that became unreadable (each counted once, until it changes).
        var newlyUnreadable = 0
        /// Paths of reports that are gone.
        var vanished: [String] = []
        /// Services of reports that newly say a thread is deadlocked (each report once).
        var deadlocks: [ServiceRelease] = []
    }

    /// Brings the index up to date with `scan` (which covered `services`, nil: all): reads new
    /// and changed reports, forgets vanished ones. With `baseline`, what is already there is taken
    /// as seen and counted, not as new hangs.
    @discardableResult
    func update(
        with scan: Spool.Scan, covering services: Set<String>?, spool: Spool, logger: Logger, baseline: Bool = false,
        severeAfter: Duration = .seconds(2)
    ) -> Update {
        var result = Update()
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
                    result.finished.append(hang)
                    counted += hang.count
                }
                // A deadlock is counted while it lasts: at the first version of its report that says so.
                var countedDeadlock = reports[key]?.countedDeadlock ?? false
                if report.context.verdict == .deadlocked && !countedDeadlock {
                    if !baseline {
                        result.deadlocks.append(
                            ServiceRelease(service: file.service, version: report.serviceVersion?.version ?? MonitoredTime.unversioned))
                    }
                    countedDeadlock = true
                }
                reports[key] = Report(
                    file: file, startedAt: report.startedAt, outcome: report.outcome, pid: report.pid,
                    processStartTicks: report.process.startTimeTicks, pidNamespace: report.process.pidNamespace,
                    needsNames: ReportEnrichment.needsEnrichment(report),
                    countedHangs: counted, countedDeadlock: countedDeadlock)
                if lastHang.map({ report.startedAt > $0.startedAt }) ?? true {
                    lastHang = (report.service, report.startedAt)
                }
            } catch {
                reports[key] = nil
                if unreadable[key] == nil {
                    logger.warning(
                        "unreadable report left alone", metadata: ["hangwatch.path": "\(spool.path(of: file))", "hangwatch.error": "\(error)"])
                    result.newlyUnreadable += 1
                }
                unreadable[key] = (file, "\(error)")
            }
        }
        for key in Array(reports.keys) where covered(key.service) && !seen.contains(key) {
            if let gone = reports[key] { result.vanished.append(spool.path(of: gone.file)) }
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
            lastWatched[key] = nil
            heartbeatTotals.forget(key)
        }
        return result
    }

    /// Takes the file's identity again after the agent rewrote it.
    func refresh(_ key: Key, in spool: Spool, outcome: HangReport.Outcome, needsNames: Bool) {
        guard var entry = reports[key], let file = spool.file(service: key.service, name: key.name) else { return }
        entry.file = file
        entry.outcome = outcome
        entry.needsNames = needsNames
        reports[key] = entry
    }

    /// The monitors by state, for the gauges.
    var monitorStates: [MonitorState: Int] {
        var counts: [MonitorState: Int] = [:]
        for (_, monitor) in monitors {
            switch monitor.health {
            case .healthy: counts[.alive, default: 0] += 1
            case .watchdogSilent: counts[.watchdogStuck, default: 0] += 1
            case .processStopped: counts[.processStopped, default: 0] += 1
            case .stopped, .stale: break
            }
        }
        return counts
    }

    /// The busiest run loop's busy ratio by service directory: of the monitors whose last page
    /// publishes one and whose watchdog ticks (a silent or stopped one's page is old news).
    var loopBusyRatios: [String: Double] {
        var ratios: [String: Double] = [:]
        for (key, monitor) in monitors where monitor.health == .healthy {
            guard let window = monitor.heartbeat?.loopBusyWindow else { continue }
            ratios[key.service] = max(ratios[key.service] ?? 0, window.ratio)
        }
        return ratios
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
