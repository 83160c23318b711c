import Dispatch
import Foundation
import HangWatchReport
import Logging
import Synchronization

/// Builds reports, decides which hangs become files and writes them, on its own serial queue: the
/// watchdog never waits for a disk, and spends no time on JSON (it may share a CPU with the hung
/// thread).
///
/// - A provisional report (`outcome: ongoing`) is written at detection, so a hang that never ends
///   (the process is killed) still leaves a report; it is replaced by the final one.
/// - A rate limit (token bucket) bounds new reports; hangs over it are counted and the count goes
///   into the next report written (`capture.reportsSuppressed`).
/// - A hang with the signature of a recent report is folded into that report's `repeats`.
/// - After each final write, retention removes the oldest reports beyond the limits.
/// - A failed write (disk full, read-only directory) is counted and logged, never retried in a loop.
final class ReportWriter: Sendable {
    private let store: ReportStore
    private let retention: RetentionPolicy
    private let enricher: (any HangReportEnricher)?
    private let logger: Logger
    private let statistics: MonitorStatistics
    private let builder: ReportBuilder
    private let images: ImageRegistry
    private let clock: SystemMonotonicClock
    private let queue = DispatchQueue(label: "hangwatch.report-writer", qos: .utility)
    private let state: Mutex<State>

    private struct State {
        var limiter: ReportRateLimiter
        var repeats: RepeatTracker
        var suppressedSinceLastReport = 0
        var provisional: Set<String> = []
        var lastFailureLog: [String: UInt64] = [:]
    }

    init(
        store: ReportStore, retention: RetentionPolicy, rateLimiter: ReportRateLimiter, repeats: RepeatTracker,
        enricher: (any HangReportEnricher)?, statistics: MonitorStatistics, logger: Logger, builder: ReportBuilder,
        images: ImageRegistry, clock: SystemMonotonicClock
    ) {
        self.builder = builder
        self.images = images
        self.clock = clock
        self.store = store
        self.retention = retention
        self.enricher = enricher
        self.statistics = statistics
        self.logger = logger
        state = Mutex(State(limiter: rateLimiter, repeats: repeats))
    }

    /// A hang was detected: write a provisional report.
    func hangStarted(_ recording: HangRecording) {
        let now = clock.microseconds()
        queue.async {
            let report = self.builder.build(recording, images: self.images.current, outcome: .ongoing)
            let write = self.state.withLock { state -> Bool in
                if state.repeats.isRepeat(signature: report.signature, now: now) { return false }
                guard state.limiter.admit(now: now) else { return false }
                state.provisional.insert(report.id)
                return true
            }
            if write { self.write(report, kind: "provisional") }
        }
    }

    /// More samples of an ongoing hang: rewrite its provisional report, if it has one.
    func hangProgressed(_ recording: HangRecording) {
        queue.async {
            guard self.state.withLock({ $0.provisional.contains(recording.id) }) else { return }
            self.write(self.builder.build(recording, images: self.images.current, outcome: .ongoing), kind: "provisional")
        }
    }

    /// The hang is over (or the monitor stopped during it).
    func hangEnded(_ recording: HangRecording, outcome: HangReport.Outcome) {
        let now = clock.microseconds()
        queue.async {
            self.finish(self.builder.build(recording, images: self.images.current, outcome: outcome), now: now)
        }
    }

    /// Runs on the queue.
    private func finish(_ report: HangReport, now: UInt64) {
        enum Action {
            case fold(remove: Bool, reportID: String, repeats: HangReport.Repeats, rewrite: Bool)
            case write(HangReport)
            case suppress
        }
        let action = state.withLock { state -> Action in
            let hadProvisional = state.provisional.remove(report.id) != nil
            let decision = state.repeats.record(
                signature: report.signature, durationMs: report.durationMs, endedAt: report.endedAt ?? Date(), now: now)
            switch decision {
            case .repeatOf(let reportID, let repeats, let rewrite):
                return .fold(remove: hadProvisional, reportID: reportID, repeats: repeats, rewrite: rewrite)
            case .newReport:
                guard hadProvisional || state.limiter.admit(now: now) else {
                    state.suppressedSinceLastReport += 1
                    return .suppress
                }
                var final = report
                final.capture.reportsSuppressed = state.suppressedSinceLastReport
                state.suppressedSinceLastReport = 0
                state.repeats.registerReport(signature: report.signature, reportID: report.id, now: now)
                return .write(final)
            }
        }
        switch action {
        case .suppress:
            statistics.hangsSuppressed.add(1, ordering: .relaxed)
            logger.debug("hang not written: rate limit", metadata: ["hangwatch.id": "\(report.id)"])
        case .write(let final):
            var enriched = final
            enricher?.enrich(&enriched)
            if write(enriched, kind: "final") {
                statistics.reportsWritten.add(1, ordering: .relaxed)
                applyRetention()
            }
        case .fold(let remove, let reportID, let repeats, let rewrite):
            statistics.hangsFolded.add(1, ordering: .relaxed)
            if remove { try? store.remove(id: report.id) }
            if rewrite { rewriteRepeats(reportID: reportID, repeats: repeats, signature: report.signature) }
        }
    }

    /// Waits for every queued report, then writes pending repeat counts.
    func flush() {
        queue.sync {
            let pending = state.withLock { state -> [(reportID: String, repeats: HangReport.Repeats)] in
                defer { state.repeats.markAllWritten() }
                return state.repeats.unwrittenRepeats
            }
            for (reportID, repeats) in pending {
                rewriteRepeats(reportID: reportID, repeats: repeats, signature: nil)
            }
        }
    }

    private func rewriteRepeats(reportID: String, repeats: HangReport.Repeats, signature: String?) {
        do {
            var earlier = try ReportReader().read(path: store.path(forID: reportID))
            earlier.repeats = repeats
            write(earlier, kind: "repeats")
        } catch {
            // The earlier report is gone (retention, an operator): the next repeat starts a new one.
            if let signature {
                state.withLock { $0.repeats.forget(signature: signature) }
            }
        }
    }

    @discardableResult
    private func write(_ report: HangReport, kind: String) -> Bool {
        do {
            try store.write(report)
            logger.debug(
                "report written",
                metadata: ["hangwatch.id": "\(report.id)", "hangwatch.kind": "\(kind)", "hangwatch.directory": "\(store.directory)"])
            return true
        } catch {
            statistics.writeFailures.add(1, ordering: .relaxed)
            let key = (error as? ReportStoreError)?.isOutOfSpace == true ? "no space" : "write failed"
            let now = SystemMonotonicClock().microseconds()
            let shouldLog = state.withLock { state -> Bool in
                // One log line per kind of failure per five minutes: a full disk is not a log flood.
                if let last = state.lastFailureLog[key], now - last < 300_000_000 { return false }
                state.lastFailureLog[key] = now
                return true
            }
            if shouldLog {
                logger.error(
                    "cannot write hang report",
                    metadata: ["hangwatch.id": "\(report.id)", "hangwatch.error": "\(error)", "hangwatch.reason": "\(key)"])
            }
            return false
        }
    }

    private func applyRetention() {
        let protected = state.withLock { $0.provisional }
        do {
            let removed = try store.applyRetention(retention, keeping: protected)
            if !removed.isEmpty {
                logger.debug("old reports removed", metadata: ["hangwatch.count": "\(removed.count)"])
            }
        } catch {
            logger.warning("cannot apply report retention", metadata: ["hangwatch.error": "\(error)"])
        }
    }
}
