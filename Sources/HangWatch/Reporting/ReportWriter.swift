import Dispatch
import Foundation
import HangWatchReport
import Logging
import Synchronization

/// Writes the reports of one report directory (`SharedReportDirectory`: every monitor writing
/// there hands its reports to this one writer), the ones `ReportPolicy` admits, on its own serial
/// queue: the watchdog never waits for a disk, and spends no time on JSON (it may share a CPU with
/// the hung thread). Each monitor's reports come with their `ReportOrigin` (its statistics, its
/// log, its enricher) and are built by the monitor's own builder (`MonitorReports`).
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
        /// Whose each report held for a token is (written later, counted and told as theirs).
        var heldOrigins: [String: ReportOrigin] = [:]
        /// Whose the last report that ended was (a notice at the final flush is told in its log).
        var lastOrigin: ReportOrigin?
        var lastFailureLog: [String: UInt64] = [:]
        /// Hangs the rate limit kept out since the last notice about it, and when that was.
        var suppressedSinceNotice = 0
        var suppressedTotal = 0
        var lastSuppressionNotice: UInt64?
        /// Times the directory was found deleted and made again.
        var directoriesRecreated = 0
    }

    init(
        store: ReportStore, retention: RetentionPolicy, policy: ReportPolicy, images: ImageRegistry,
        clock: any MonotonicClock = SystemMonotonicClock(), wake: WatchdogWake? = nil
    ) {
        self.wake = wake
        self.images = images
        self.clock = clock
        self.store = store
        self.retention = retention
        state = Mutex(State(policy: policy))
    }

    /// Builds a report from the images known when it is written, with the outcome given.
    typealias Build = @Sendable (ImageMap, HangReport.Outcome) -> HangReport

    /// Detected: the provisional report `build` makes, unless a probable repeat or over the limit.
    func reportStarted(_ origin: ReportOrigin, _ build: @escaping Build) {
        let now = clock.microseconds()
        queue.async {
            let report = build(self.images.current, .ongoing)
            let write = self.state.withLock { state -> Bool in
                state.startSignatures[report.id] = ReportPolicy.startSignature(of: report)
                return state.policy.hangStarted(report, now: now)
            }
            if write { self.write(report, kind: "provisional", origin: origin) }
        }
    }

    /// Still going on: rewrites report `id`'s provisional report, if it has one.
    func reportProgressed(_ origin: ReportOrigin, id: String, _ build: @escaping Build) {
        queue.async {
            guard self.state.withLock({ $0.policy.hasProvisional(id) }) else { return }
            self.write(build(self.images.current, .ongoing), kind: "provisional", origin: origin)
        }
    }

    /// Over: the final report, through the policy.
    func reportEnded(_ origin: ReportOrigin, outcome: HangReport.Outcome, _ build: @escaping Build) {
        let now = clock.microseconds()
        queue.async {
            var report = build(self.images.current, outcome)
            // Names first: the policy folds repeats by the signature the report is grouped by
            // (by names once an enricher named it), as every reader groups it.
            origin.enricher?.enrich(&report)
            // The reading names the near misses' function: by the enricher's names now.
            if origin.enricher != nil { report.nameNearMisses() }
            let actions = self.state.withLock { state -> [ReportPolicy.Action] in
                let start = state.startSignatures.removeValue(forKey: report.id) ?? nil
                let actions = state.policy.hangEnded(report, startSignature: start, now: now)
                if state.policy.isWaiting(report.id) { state.heldOrigins[report.id] = origin }
                state.lastOrigin = origin
                return actions
            }
            self.perform(actions, now: now, origin: origin)
            self.noteHeldReports(now: now)
        }
    }

    /// Runs on the queue. `now`: when the hang that led to these actions was handed on; `origin`:
    /// whose hang it was (nil: reports held for a token, each with its own origin).
    private func perform(_ actions: [ReportPolicy.Action], now: UInt64, origin: ReportOrigin?) {
        for action in actions {
            switch action {
            case .write(let report):
                let origin = state.withLock { $0.heldOrigins.removeValue(forKey: report.id) } ?? origin
                if write(report, kind: "final", origin: origin) {
                    origin?.statistics.reportsWritten.add(1, ordering: .relaxed)
                    applyRetention(origin)
                }
            case .remove(let id):
                try? store.remove(id: id)
            case .fold(let reportID, let repeats, let rewrite):
                origin?.statistics.hangsFolded.add(1, ordering: .relaxed)
                if rewrite { rewriteRepeats(reportID: reportID, repeats: repeats, origin: origin) }
            case .suppress(let id):
                let origin = state.withLock { $0.heldOrigins.removeValue(forKey: id) } ?? origin
                origin?.statistics.hangsSuppressed.add(1, ordering: .relaxed)
                origin?.logger.debug("hang not written: rate limit", metadata: ["hangwatch.id": "\(id)"])
                noteSuppressed(now: now, origin: origin)
            }
        }
    }

    /// Rate-limited hangs are told at notice level, at most once a minute (of the writer's clock),
    /// with how many went unwritten since the last notice.
    private func noteSuppressed(now: UInt64, origin: ReportOrigin?, flushing: Bool = false) {
        let counts = state.withLock { state -> (since: Int, total: Int)? in
            if !flushing {
                state.suppressedSinceNotice += 1
                state.suppressedTotal += 1
            }
            guard state.suppressedSinceNotice > 0 else { return nil }
            if !flushing, let last = state.lastSuppressionNotice, now - min(now, last) < Self.suppressionNoticeInterval { return nil }
            defer {
                state.suppressedSinceNotice = 0
                state.lastSuppressionNotice = now
            }
            return (state.suppressedSinceNotice, state.suppressedTotal)
        }
        guard let counts, let origin else { return }
        origin.logger.notice(
            "hangs not written: over the report rate limit",
            metadata: [
                "hangwatch.suppressed": "\(counts.since)", "hangwatch.suppressed_total": "\(counts.total)",
                "hangwatch.directory": "\(store.directory)",
            ])
    }

    /// Writes `report`. When the directory itself is gone (an operator's `rm -rf`, a temporary-file
    /// cleaner), makes it again, with the same mode and checks as at start, and writes once more:
    /// later hangs are not lost to a missing directory. Told once, counted every time.
    private func writeRecreatingDirectory(_ report: HangReport, origin: ReportOrigin?) throws {
        do {
            try store.write(report)
        } catch {
            var info = stat()
            guard lstat(store.directory, &info) != 0 else { throw error }
            try store.prepare()
            let count = state.withLock { state in
                state.directoriesRecreated += 1
                return state.directoriesRecreated
            }
            origin?.statistics.directoriesRecreated.add(1, ordering: .relaxed)
            if count == 1 {
                origin?.logger.notice(
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
            self.perform(actions, now: now, origin: nil)
            self.noteHeldReports(now: now)
        }
    }

    /// Waits until every report handed on so far has been through the policy (and written, where
    /// it was admitted); reports held for a token stay held (a monitor of the directory stopped,
    /// others still write there: the hold-back lane writes them when their tokens come).
    func drain() {
        queue.sync {}
    }

    /// Waits for every queued report, writes the reports still waiting for a token (the last
    /// monitor writing here is stopping: nothing is lost to the limit), then pending repeat counts.
    func flush() {
        queue.sync {
            let (waiting, counts) = state.withLock { state -> ([HangReport], [(reportID: String, repeats: HangReport.Repeats)]) in
                defer { state.policy.markAllWritten() }
                return (state.policy.drainPending(), state.policy.unwrittenRepeats)
            }
            heldDue.store(0, ordering: .releasing)
            let now = clock.microseconds()
            perform(waiting.map { .write($0) }, now: now, origin: nil)
            for (reportID, repeats) in counts {
                rewriteRepeats(reportID: reportID, repeats: repeats, origin: nil)
            }
            // Suppressed hangs not told yet are told now.
            noteSuppressed(now: now, origin: state.withLock { $0.lastOrigin }, flushing: true)
        }
    }

    private func rewriteRepeats(reportID: String, repeats: HangReport.Repeats, origin: ReportOrigin?) {
        do {
            var earlier = try ReportReader().read(path: store.path(forID: reportID))
            earlier.repeats = repeats
            write(earlier, kind: "repeats", origin: origin)
        } catch {
            // The earlier report is gone (retention, an operator): the next repeat starts a new one.
            state.withLock { $0.policy.forget(reportID: reportID) }
        }
    }

    @discardableResult
    private func write(_ report: HangReport, kind: String, origin: ReportOrigin?) -> Bool {
        do {
            try writeRecreatingDirectory(report, origin: origin)
            origin?.logger.debug(
                "report written",
                metadata: ["hangwatch.id": "\(report.id)", "hangwatch.kind": "\(kind)", "hangwatch.directory": "\(store.directory)"])
            return true
        } catch {
            origin?.statistics.writeFailures.add(1, ordering: .relaxed)
            let key = (error as? ReportStoreError)?.isOutOfSpace == true ? "no space" : "write failed"
            let now = clock.microseconds()
            let shouldLog = state.withLock { state -> Bool in
                // One log line per kind of failure per five minutes: a full disk is not a log flood.
                if let last = state.lastFailureLog[key], now - last < 300_000_000 { return false }
                state.lastFailureLog[key] = now
                return true
            }
            if shouldLog {
                origin?.logger.error(
                    "cannot write hang report",
                    metadata: ["hangwatch.id": "\(report.id)", "hangwatch.error": "\(error)", "hangwatch.reason": "\(key)"])
            }
            return false
        }
    }

    private func applyRetention(_ origin: ReportOrigin?) {
        let protected = state.withLock { $0.policy.provisionalIDs }
        do {
            let removed = try store.applyRetention(retention, keeping: protected)
            if !removed.isEmpty {
                origin?.logger.debug("old reports removed", metadata: ["hangwatch.count": "\(removed.count)"])
            }
        } catch {
            origin?.logger.warning("cannot apply report retention", metadata: ["hangwatch.error": "\(error)"])
        }
    }
}

/// Whose a report is, for the directory's writer: the monitor's statistics (what it counts as
/// written, folded, suppressed, failed), its log and its enricher (names the final report).
struct ReportOrigin: Sendable {
    var statistics: MonitorStatistics
    var logger: Logger
    var enricher: (any HangReportEnricher)?
}
