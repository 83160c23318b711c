import Foundation
import HangWatchReport

/// Which hangs become files, and when: the rate limit and the folding of repeats, as a pure type
/// (time comes in, actions come out; `ReportWriter` carries them out).
///
/// Signatures here are the ones reports are grouped by (`key`: by names once named, else by
/// addresses), so what the monitor folds is what `hangwatch top` and the agent count as one.
///
/// - A hang whose first sample's stack has the signature of a recent report (or of the first sample
///   of a hang folded into one) is a probable repeat: it gets no provisional file and takes no token.
/// - Other hangs get a provisional file at detection if the rate limiter has a token.
/// - At the end, the final signature decides: a repeat is folded into the earlier report (its
///   provisional file removed, its token given back); a new signature is written, with its
///   provisional's token or a new one, or, when there is none, held and written as soon as a token
///   comes (`due(now:)`). Repeats never spend tokens, so they never crowd out the first report of a
///   new culprit; a new signature is dropped (counted in the next report's `reportsSuppressed`) only
///   when more than `pendingCapacity` of them wait at once.
struct ReportPolicy: Sendable {
    private(set) var limiter: ReportRateLimiter
    private(set) var repeats: RepeatTracker
    /// Hangs with a provisional file (id → the token it took).
    private var provisional: Set<String> = []
    /// First-sample signatures known to lead to a report, with when they were seen.
    private var startSignatures: [String: (reportSignature: String, at: UInt64)] = [:]
    /// New reports waiting for a token, oldest first.
    private(set) var pending: [HangReport] = []
    private var suppressedSinceLastReport = 0

    /// At most this many new reports wait for a token.
    let pendingCapacity = 32

    init(limiter: ReportRateLimiter, repeats: RepeatTracker) {
        self.limiter = limiter
        self.repeats = repeats
    }

    enum Action: Equatable {
        /// Write this report (new, or provisional).
        case write(HangReport)
        /// Remove the provisional file of hang `id` (it was folded into another report).
        case remove(id: String)
        /// Fold into the earlier report `reportID`, which must be rewritten with `repeats` when
        /// `rewrite` is set.
        case fold(reportID: String, repeats: HangReport.Repeats, rewrite: Bool)
        /// Not written: over the rate limit with no room to wait.
        case suppress(id: String)
    }

    /// A hang was detected; `report` is its provisional report (its signature is the first sample's).
    /// Returns whether to write it.
    mutating func hangStarted(_ report: HangReport, now: UInt64) -> Bool {
        if let start = Self.startSignature(of: report), isKnown(start: start, now: now) { return false }
        guard limiter.admit(now: now) else { return false }
        provisional.insert(report.id)
        return true
    }

    /// The hang is over: what to do with its final `report`. `startSignature` is its first sample's.
    mutating func hangEnded(_ report: HangReport, startSignature: String?, now: UInt64) -> [Action] {
        let hadProvisional = provisional.remove(report.id) != nil
        var actions: [Action] = []
        let signature = Self.key(report)
        if let waiting = pending.firstIndex(where: { Self.key($0) == signature }), repeats.windowMicroseconds > 0 {
            // A repeat of a report still waiting for its token: counted into it before it is written.
            var earlier = pending[waiting]
            earlier.repeats = Self.adding(report, to: earlier.repeats)
            pending[waiting] = earlier
            remember(start: startSignature, as: signature, now: now)
            if hadProvisional {
                limiter.refund()
                actions.append(.remove(id: report.id))
            }
            return actions
        }
        switch repeats.record(signature: signature, durationMs: report.durationMs, endedAt: report.endedAt ?? Date(), now: now) {
        case .repeatOf(let reportID, let counts, let rewrite):
            if hadProvisional {
                limiter.refund()
                actions.append(.remove(id: report.id))
            }
            actions.append(.fold(reportID: reportID, repeats: counts, rewrite: rewrite))
        case .newReport:
            repeats.registerReport(signature: signature, reportID: report.id, now: now)
            if hadProvisional || limiter.admit(now: now) {
                actions.append(.write(stamped(report)))
            } else if pending.count < pendingCapacity {
                pending.append(report)
            } else {
                suppressedSinceLastReport += 1
                repeats.forget(signature: signature)
                actions.append(.suppress(id: report.id))
            }
        }
        remember(start: startSignature, as: signature, now: now)
        return actions
    }

    /// Waiting reports whose token has come.
    mutating func due(now: UInt64) -> [Action] {
        var actions: [Action] = []
        while let first = pending.first, limiter.admit(now: now) {
            pending.removeFirst()
            actions.append(.write(stamped(first)))
        }
        return actions
    }

    /// When the next waiting report can be written; nil when none waits.
    func nextDue(now: UInt64) -> UInt64? {
        pending.isEmpty ? nil : now + limiter.microsecondsUntilToken(now: now)
    }

    /// Whether the final report of hang `id` waits for a token.
    func isWaiting(_ id: String) -> Bool { pending.contains { $0.id == id } }

    /// Whether hang `id` has a provisional file (to be refreshed while it lasts).
    func hasProvisional(_ id: String) -> Bool { provisional.contains(id) }

    /// The hangs with a provisional file (retention leaves them alone).
    var provisionalIDs: Set<String> { provisional }

    /// Forgets the signature of report `reportID` (it is gone: the next hang with it starts a new one).
    mutating func forget(reportID: String) {
        repeats.forget(reportID: reportID)
    }

    /// The reports still waiting for a token, for a final flush (written whatever the limit: the
    /// monitor is stopping), with the suppressed count in the first.
    mutating func drainPending() -> [HangReport] {
        let drained = pending.map { stamped($0) }
        pending.removeAll()
        return drained
    }

    /// Forgets `signature` (its report is gone: the next hang with it starts a new one).
    mutating func forget(signature: String) {
        repeats.forget(signature: signature)
    }

    var unwrittenRepeats: [(reportID: String, repeats: HangReport.Repeats)] { repeats.unwrittenRepeats }
    mutating func markAllWritten() { repeats.markAllWritten() }

    /// The signature a report folds by: the one it is grouped by everywhere (`HangReport.grouping`:
    /// by names when it is named, else by addresses).
    static func key(_ report: HangReport) -> String {
        report.grouping.signature
    }

    /// The first sample's signature of a (provisional) report: nil when it had no stack.
    static func startSignature(of report: HangReport) -> String? {
        report.heaviestStack == nil ? nil : key(report)
    }

    private func isKnown(start: String, now: UInt64) -> Bool {
        if repeats.isRepeat(signature: start, now: now) || pending.contains(where: { Self.key($0) == start }) { return true }
        guard let known = startSignatures[start], repeats.windowMicroseconds > 0,
            now - min(now, known.at) < repeats.windowMicroseconds
        else { return false }
        return repeats.isRepeat(signature: known.reportSignature, now: now) || pending.contains { Self.key($0) == known.reportSignature }
    }

    private mutating func remember(start: String?, as signature: String, now: UInt64) {
        guard let start, repeats.windowMicroseconds > 0 else { return }
        startSignatures[start] = (signature, now)
        if startSignatures.count > repeats.capacity * 4,
            let oldest = startSignatures.min(by: { $0.value.at < $1.value.at })
        {
            startSignatures[oldest.key] = nil
        }
    }

    /// The report with the count of hangs dropped since the previous one.
    private mutating func stamped(_ report: HangReport) -> HangReport {
        var report = report
        report.capture.reportsSuppressed = suppressedSinceLastReport
        suppressedSinceLastReport = 0
        return report
    }

    private static func adding(_ report: HangReport, to existing: HangReport.Repeats?) -> HangReport.Repeats {
        var repeats = existing ?? HangReport.Repeats(count: 0, lastAt: report.endedAt ?? Date(), totalDurationMs: 0, maxDurationMs: 0)
        repeats.count += 1
        repeats.lastAt = report.endedAt ?? repeats.lastAt
        repeats.totalDurationMs = ((repeats.totalDurationMs + report.durationMs) * 1000).rounded() / 1000
        repeats.maxDurationMs = max(repeats.maxDurationMs, report.durationMs)
        return repeats
    }
}
