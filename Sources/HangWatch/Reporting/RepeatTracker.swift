import Foundation
import HangWatchReport

/// Signature back-off: a hang with the same signature as a report written less than `window` ago
/// is counted in that report instead of written again. Pure; time comes in.
struct RepeatTracker: Sendable {
    struct Entry: Sendable, Equatable {
        var reportID: String
        var writtenAt: UInt64
        var repeats: HangReport.Repeats?
        var countAtLastWrite = 0
        var lastWriteAt: UInt64
    }

    /// What to do with a finished hang's report.
    enum Decision: Equatable {
        /// Write it as a new report.
        case newReport
        /// Fold it into report `reportID`; rewrite that report with `repeats` when `rewrite` is set.
        case repeatOf(reportID: String, repeats: HangReport.Repeats, rewrite: Bool)
    }

    let windowMicroseconds: UInt64
    /// Rewrite a folded report at least this often while repeats keep coming.
    let rewriteIntervalMicroseconds: UInt64 = 60_000_000
    /// At most this many signatures are remembered; the oldest are forgotten first.
    let capacity = 256
    private(set) var entries: [String: Entry] = [:]

    init(windowMicroseconds: UInt64) {
        self.windowMicroseconds = windowMicroseconds
    }

    /// Whether a hang with `signature` at `now` would be folded.
    func isRepeat(signature: String, now: UInt64) -> Bool {
        guard windowMicroseconds > 0, let entry = entries[signature] else { return false }
        return now - min(now, entry.writtenAt) < windowMicroseconds
    }

    /// Decides for a finished hang; updates the counts when it is a repeat.
    mutating func record(signature: String, durationMs: Double, endedAt: Date, now: UInt64) -> Decision {
        guard isRepeat(signature: signature, now: now), var entry = entries[signature] else { return .newReport }
        var repeats = entry.repeats ?? HangReport.Repeats(count: 0, lastAt: endedAt, totalDurationMs: 0, maxDurationMs: 0)
        repeats.count += 1
        repeats.lastAt = endedAt
        repeats.totalDurationMs = ((repeats.totalDurationMs + durationMs) * 1000).rounded() / 1000
        repeats.maxDurationMs = max(repeats.maxDurationMs, durationMs)
        entry.repeats = repeats
        // Rewrite on the 1st, 2nd, 4th, 8th ... repeat, and at least once a minute.
        let powerOfTwo = repeats.count & (repeats.count - 1) == 0
        let rewrite = powerOfTwo || now - min(now, entry.lastWriteAt) >= rewriteIntervalMicroseconds
        if rewrite {
            entry.countAtLastWrite = repeats.count
            entry.lastWriteAt = now
        }
        entries[signature] = entry
        return .repeatOf(reportID: entry.reportID, repeats: repeats, rewrite: rewrite)
    }

    /// Remembers that report `reportID` with `signature` was written at `now`.
    mutating func registerReport(signature: String, reportID: String, now: UInt64) {
        guard windowMicroseconds > 0 else { return }
        entries[signature] = Entry(reportID: reportID, writtenAt: now, repeats: nil, lastWriteAt: now)
        if entries.count > capacity, let oldest = entries.min(by: { $0.value.writtenAt < $1.value.writtenAt }) {
            entries[oldest.key] = nil
        }
    }

    /// Forgets `signature` (its report is gone).
    mutating func forget(signature: String) {
        entries[signature] = nil
    }

    /// Forgets the signature whose report is `reportID`.
    mutating func forget(reportID: String) {
        for (signature, entry) in entries where entry.reportID == reportID {
            entries[signature] = nil
        }
    }

    /// Folded counts not yet written to their report, for a final flush.
    var unwrittenRepeats: [(reportID: String, repeats: HangReport.Repeats)] {
        entries.values.compactMap { entry in
            guard let repeats = entry.repeats, repeats.count > entry.countAtLastWrite else { return nil }
            return (entry.reportID, repeats)
        }
    }

    mutating func markAllWritten() {
        for (key, entry) in entries {
            entries[key]?.countAtLastWrite = entry.repeats?.count ?? 0
        }
    }
}
