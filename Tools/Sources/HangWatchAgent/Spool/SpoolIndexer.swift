import Foundation
@_spi(Internal) import HangWatchReport
import Logging

/// The first step of a scanning pass: lists the spool (or some service directories), reads what is
/// new or changed into the index, reports the hangs that finished since the last look, says once
/// which entries it leaves alone and why, and removes temporary files that crashed writers left.
struct SpoolIndexer {
    let spool: Spool
    let exports: ExportHub
    let logger: Logger

    /// A temporary file this old is a crashed writer's (a write takes milliseconds).
    static let leftoverAge: TimeInterval = 3600
    /// A thread dump's answer this old was never taken (the CLI takes it within its timeout, and
    /// the monitor removes one nobody took after 30 s).
    static let dumpAnswerAge: TimeInterval = 60

    /// Indexes the services in `covering` (nil: the whole spool).
    func index(_ covering: Set<String>?, into state: SpoolState, configuration: AgentConfiguration, now: Date) {
        let scan: Spool.Scan
        do {
            scan = try spool.scan(only: covering)
        } catch {
            logger.error("cannot scan the spool", metadata: ["hangwatch.root": "\(spool.root)", "hangwatch.error": "\(error)"])
            return
        }
        let found = state.update(
            with: scan, covering: covering, spool: spool, logger: logger, baseline: !state.baselineTaken,
            severeAfter: configuration.severeAfter)
        state.baselineTaken = true
        exports.reportsDropped(.unreadable, count: found.newlyUnreadable)
        logSkipped(scan.skipped, in: state, fullScan: covering == nil)
        for hang in found.finished {
            let key = SpoolState.Key(service: hang.service, name: PathText.lastComponent(of: hang.reportPath))
            exports.hangFinished(hang, namesPending: configuration.enrich && state.reports[key]?.needsNames == true)
        }
        for release in found.deadlocks { exports.deadlockFound(release) }
        // A hang held for names whose report went away first goes out as it is.
        for path in found.vanished { exports.namesSettled(reportPath: path, named: nil) }
        removeLeftovers(scan.temporaries, olderThan: Self.leftoverAge, now: now)
        removeLeftovers(scan.dumpAnswers, olderThan: Self.dumpAnswerAge, now: now)
    }

    /// Logs each entry the scan left alone once (again if its reason changes).
    private func logSkipped(_ skipped: [(path: String, reason: String)], in state: SpoolState, fullScan: Bool) {
        var current: [String: String] = fullScan ? [:] : state.skippedEntries
        for (path, reason) in skipped {
            if state.skippedEntries[path] != reason {
                logger.warning("spool entry left alone", metadata: ["hangwatch.path": "\(path)", "hangwatch.reason": "\(reason)"])
            }
            current[path] = reason
        }
        state.skippedEntries = current
    }

    private func removeLeftovers(_ files: [Spool.File], olderThan age: TimeInterval, now: Date) {
        let cutoff = Int64(now.timeIntervalSince1970 - age) * 1_000_000_000
        for file in files where file.modifiedNanoseconds < cutoff {
            try? spool.remove(file)
        }
    }
}
