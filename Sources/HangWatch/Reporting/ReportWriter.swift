import Dispatch
import Foundation
import HangWatchReport
import Logging
import Synchronization

/// Builds reports and writes the ones `ReportPolicy` admits, on its own serial queue: the watchdog
/// never waits for a disk, and spends no time on JSON (it may share a CPU with the hung thread).
///
/// - A provisional report (`outcome: ongoing`) is written at detection, so a hang that never ends
///   (the process is killed) still leaves a report; it is replaced by the final one.
/// - A final report is enriched (named) first, then the policy folds repeats into earlier reports
///   (by `HangReport.grouping`: names when named) and keeps new ones within the rate limit, holding
///   a new report that has no token until one comes (written then, or at `flush()`). The wait is
///   the watchdog's, the process's one timer: the writer says when the next token comes
///   (`heldReportsDue`, posting the watchdog's wake when that changes) and a lane of the watchdog
///   (`ReportHoldBackLane`) asks it to write them then (`writeHeldReports(now:)`), on the
///   environment's time: scripted time in tests, as the policy's clock is.
/// - After each final write, retention removes the oldest reports beyond the limits.
/// - A failed write (disk full, read-only directory) is counted and logged, never retried in a loop.
final class ReportWriter: Sendable {
    private let store: ReportStore
    private let retention: RetentionPolicy
    private let enricher: (any HangReportEnricher)?
    private let logger: Logger
    private let statistics: MonitorStatistics
    let builder: ReportBuilder
    private let images: ImageRegistry
    private let clock: any MonotonicClock
    /// Every report passes through it in order (tests wait on it to see what the policy decided).
    let queue = DispatchQueue(label: "hangwatch.report-writer", qos: .utility)
    private let state: Mutex<State>
    /// When the first report held for a token can be written (the environment's microseconds;
    /// 0: none is held).
    private let heldDue = Atomic<UInt64>(0)
    /// The watchdog's wake, posted when `heldDue` changes (its hold-back lane then reads it).
    private let wake: WatchdogWake?

    private struct State {
        var policy: ReportPolicy
        /// The first sample's signature of each hang in progress.
        var startSignatures: [String: String?] = [:]
        var lastFailureLog: [String: UInt64] = [:]
        /// Hangs the rate limit kept out since the last notice about it, and when that was.
        var suppressedSinceNotice = 0
        var lastSuppressionNotice: UInt64?
    }

    init(
        store: ReportStore, retention: RetentionPolicy, policy: ReportPolicy, enricher: (any HangReportEnricher)?,
        statistics: MonitorStatistics, logger: Logger, builder: ReportBuilder, images: ImageRegistry,
        clock: any MonotonicClock = SystemMonotonicClock(), wake: WatchdogWake? = nil
    ) {
        self.wake = wake
        self.builder = builder
        self.images = images
        self.clock = clock
        self.store = store
        self.retention = retention
        self.enricher = enricher
        self.statistics = statistics
        self.logger = logger
        state = Mutex(State(policy: policy))
    }

    /// A hang was detected: write a provisional report, unless it is a probable repeat or over the limit.
    func hangStarted(_ recording: HangRecording) {
        reportStarted { [builder] images, outcome in builder.build(recording, images: images, outcome: outcome) }
    }

    /// More samples of an ongoing hang: rewrite its provisional report, if it has one.
    func hangProgressed(_ recording: HangRecording) {
        reportProgressed(id: recording.id) { [builder] images, outcome in builder.build(recording, images: images, outcome: outcome) }
    }

    /// The hang is over (or the monitor stopped during it).
    func hangEnded(_ recording: HangRecording, outcome: HangReport.Outcome) {
        reportEnded(outcome: outcome) { [builder] images, outcome in builder.build(recording, images: images, outcome: outcome) }
    }

    /// Builds a report from the images known when it is written, with the outcome given.
    typealias Build = @Sendable (ImageMap, HangReport.Outcome) -> HangReport

    /// Detected: the provisional report `build` makes, unless a probable repeat or over the limit.
    func reportStarted(_ build: @escaping Build) {
        let now = clock.microseconds()
        queue.async {
            let report = build(self.images.current, .ongoing)
            let write = self.state.withLock { state -> Bool in
                state.startSignatures[report.id] = ReportPolicy.startSignature(of: report)
                return state.policy.hangStarted(report, now: now)
            }
            if write { self.write(report, kind: "provisional") }
        }
    }

    /// Still going on: rewrites report `id`'s provisional report, if it has one.
    func reportProgressed(id: String, _ build: @escaping Build) {
        queue.async {
            guard self.state.withLock({ $0.policy.hasProvisional(id) }) else { return }
            self.write(build(self.images.current, .ongoing), kind: "provisional")
        }
    }

    /// Over: the final report, through the policy.
    func reportEnded(outcome: HangReport.Outcome, _ build: @escaping Build) {
        let now = clock.microseconds()
        queue.async {
            var report = build(self.images.current, outcome)
            // Names first: the policy folds repeats by the signature the report is grouped by
            // (by names once an enricher named it), as every reader groups it.
            self.enricher?.enrich(&report)
            let actions = self.state.withLock { state -> [ReportPolicy.Action] in
                let start = state.startSignatures.removeValue(forKey: report.id) ?? nil
                return state.policy.hangEnded(report, startSignature: start, now: now)
            }
            self.perform(actions, now: now)
            self.noteHeldReports(now: now)
        }
    }

    /// Runs on the queue. `now`: when the hang that led to these actions was handed on.
    private func perform(_ actions: [ReportPolicy.Action], now: UInt64) {
        for action in actions {
            switch action {
            case .write(let report):
                if write(report, kind: "final") {
                    statistics.reportsWritten.add(1, ordering: .relaxed)
                    applyRetention()
                }
            case .remove(let id):
                try? store.remove(id: id)
            case .fold(let reportID, let repeats, let rewrite):
                statistics.hangsFolded.add(1, ordering: .relaxed)
                if rewrite { rewriteRepeats(reportID: reportID, repeats: repeats) }
            case .suppress(let id):
                statistics.hangsSuppressed.add(1, ordering: .relaxed)
                logger.debug("hang not written: rate limit", metadata: ["hangwatch.id": "\(id)"])
                noteSuppressed(now: now)
            }
        }
    }

    /// Rate-limited hangs are told at notice level, at most once a minute (of the writer's clock),
    /// with how many went unwritten since the last notice.
    private func noteSuppressed(now: UInt64, flushing: Bool = false) {
        let count = state.withLock { state -> Int? in
            if !flushing { state.suppressedSinceNotice += 1 }
            guard state.suppressedSinceNotice > 0 else { return nil }
            if !flushing, let last = state.lastSuppressionNotice, now - min(now, last) < Self.suppressionNoticeInterval { return nil }
            defer {
                state.suppressedSinceNotice = 0
                state.lastSuppressionNotice = now
            }
            return state.suppressedSinceNotice
        }
        guard let count else { return }
        logger.notice(
            "hangs not written: over the report rate limit",
            metadata: [
                "hangwatch.suppressed": "\(count)", "hangwatch.suppressed_total": "\(statistics.hangsSuppressed.load(ordering: .relaxed))",
                "hangwatch.directory": "\(store.directory)",
            ])
    }

    /// Writes `report`. When the directory itself is gone (an operator's `rm -rf`, a temporary-file
    /// cleaner), makes it again, with the same mode and checks as at start, and writes once more:
    /// later hangs are not lost to a missing directory. Told once, counted every time.
    private func writeRecreatingDirectory(_ report: HangReport) throws {
        do {
            try store.write(report)
        } catch {
            var info = stat()
            guard lstat(store.directory, &info) != 0 else { throw error }
            try store.prepare()
            let count = statistics.directoriesRecreated.add(1, ordering: .relaxed).newValue
            if count == 1 {
                logger.notice(
                    "the report directory was deleted; made it again", metadata: ["hangwatch.directory": "\(store.directory)"])
            }
            try store.write(report)
        }
    }

    /// At most one rate-limit notice per this many microseconds.
    static let suppressionNoticeInterval: UInt64 = 60_000_000

    /// Runs on the queue: records when the first held report's token comes, and wakes the
    /// watchdog when that changed (its hold-back lane waits for it).
    private func noteHeldReports(now: UInt64) {
        let due = state.withLock { $0.policy.nextDue(now: now) }.map { max($0, 1) } ?? 0
        if heldDue.exchange(due, ordering: .acquiringAndReleasing) != due { wake?.signal() }
    }

    /// When the first report held for a token can be written (nil: none is held).
    var heldReportsDue: UInt64? {
        let due = heldDue.load(ordering: .acquiring)
        return due == 0 ? nil : due
    }

    /// The hold-back lane's step once `heldReportsDue` came (on the watchdog's thread, at its
    /// time `now`): the reports whose tokens came are written on the queue, which then says when
    /// the next is due.
    func writeHeldReports(now: UInt64) {
        heldDue.store(0, ordering: .releasing)
        queue.async {
            let actions = self.state.withLock { $0.policy.due(now: now) }
            self.perform(actions, now: now)
            self.noteHeldReports(now: now)
        }
    }

    /// Waits for every queued report, writes the reports still waiting for a token (the monitor is
    /// stopping: nothing is lost to the limit), then pending repeat counts.
    func flush() {
        queue.sync {
            let (waiting, counts) = state.withLock { state -> ([HangReport], [(reportID: String, repeats: HangReport.Repeats)]) in
                defer { state.policy.markAllWritten() }
                return (state.policy.drainPending(), state.policy.unwrittenRepeats)
            }
            heldDue.store(0, ordering: .releasing)
            let now = clock.microseconds()
            perform(waiting.map { .write($0) }, now: now)
            for (reportID, repeats) in counts {
                rewriteRepeats(reportID: reportID, repeats: repeats)
            }
            // Suppressed hangs not told yet are told now.
            noteSuppressed(now: now, flushing: true)
        }
    }

    private func rewriteRepeats(reportID: String, repeats: HangReport.Repeats) {
        do {
            var earlier = try ReportReader().read(path: store.path(forID: reportID))
            earlier.repeats = repeats
            write(earlier, kind: "repeats")
        } catch {
            // The earlier report is gone (retention, an operator): the next repeat starts a new one.
            state.withLock { $0.policy.forget(reportID: reportID) }
        }
    }

    @discardableResult
    private func write(_ report: HangReport, kind: String) -> Bool {
        do {
            try writeRecreatingDirectory(report)
            logger.debug(
                "report written",
                metadata: ["hangwatch.id": "\(report.id)", "hangwatch.kind": "\(kind)", "hangwatch.directory": "\(store.directory)"])
            return true
        } catch {
            statistics.writeFailures.add(1, ordering: .relaxed)
            let key = (error as? ReportStoreError)?.isOutOfSpace == true ? "no space" : "write failed"
            let now = clock.microseconds()
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
        let protected = state.withLock { $0.policy.provisionalIDs }
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
