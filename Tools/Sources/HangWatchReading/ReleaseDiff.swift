#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HangWatchReport

/// Two releases of a service compared hang by hang (`hangwatch diff FROM TO`): each culprit (a
/// signature, by names where the reports have them, so a rebuild of unchanged code is the same
/// culprit) is `new`, `gone`, `more`, `fewer` or `same`.
///
/// The rule (`status(from:to:)`): a culprit without hangs in FROM is `new`, one without hangs in TO
/// is `gone`. Otherwise, when both versions' monitored time is known, their rates per monitored
/// hour are compared: `same` when TO's is within ±25% of FROM's, else `more` or `fewer`; without
/// both times, their counts are: `same` only when equal.
public struct ReleaseDiff: Sendable, Equatable {
    public enum Status: String, Codable, Sendable, Equatable, CaseIterable {
        case new, more, fewer, gone, same

        /// The order rows are shown in: what got worse first.
        var rank: Int { Self.allCases.firstIndex(of: self)! }
    }

    /// How the two versions were compared.
    public enum Basis: String, Codable, Sendable, Equatable {
        /// Hangs per monitored hour (both versions' monitored time known).
        case rates
        /// Hang counts.
        case counts
    }

    /// One version's side: its hangs in view, and its monitored time when known.
    public struct Side: Sendable, Equatable {
        public var version: String
        /// Hangs, repeats folded into reports included.
        public var count: Int
        public var monitoredSeconds: Double?

        public init(version: String, count: Int, monitoredSeconds: Double?) {
            self.version = version
            self.count = count
            self.monitoredSeconds = monitoredSeconds
        }

        /// Hangs per monitored hour; nil when the time is unknown.
        public func perHour(_ count: Int) -> Double? { MonitoredTimeFiles.perHour(count, seconds: monitoredSeconds) }
    }

    /// One culprit in the two versions.
    public struct Row: Sendable, Equatable {
        public var status: Status
        public var signature: String
        public var signatureKind: HangReport.SignatureKind
        /// Hangs in FROM and in TO, repeats included.
        public var fromCount: Int
        public var toCount: Int
        public var fromPerHour: Double?
        public var toPerHour: Double?
        public var services: [String]
        /// The longest hang of the culprit, in TO when it has one there, else in FROM.
        public var representative: ReportSummary
    }

    /// TO's rate within this share of FROM's is `same`.
    public static let tolerance = 0.25

    public var from: Side
    public var to: Side
    public var basis: Basis
    /// New first, then more, fewer, gone, same; within a status, most hangs in TO first.
    public var rows: [Row]

    /// Compares the hangs of `summaries` (those in view) of version `from` with those of `to`;
    /// `monitoredSeconds` gives a version's monitored time in view (nil: unknown).
    public init(_ summaries: [ReportSummary], from: String, to: String, monitoredSeconds: (String) -> Double?) {
        // As `hangwatch top` counts: each report and the repeats folded into it.
        func hangs(_ members: [ReportSummary]) -> Int { HangGroup.saturatingSum([members.count] + members.map(\.repeats)) }
        let fromMembers = summaries.filter { $0.serviceVersion == from }
        let toMembers = summaries.filter { $0.serviceVersion == to }
        self.from = Side(version: from, count: hangs(fromMembers), monitoredSeconds: monitoredSeconds(from))
        self.to = Side(version: to, count: hangs(toMembers), monitoredSeconds: monitoredSeconds(to))
        basis = self.from.monitoredSeconds != nil && self.to.monitoredSeconds != nil ? .rates : .counts
        let fromBySignature = Dictionary(grouping: fromMembers, by: \.signature)
        let toBySignature = Dictionary(grouping: toMembers, by: \.signature)
        var rows: [Row] = []
        for signature in Set(fromBySignature.keys).union(toBySignature.keys) {
            let before = fromBySignature[signature] ?? []
            let after = toBySignature[signature] ?? []
            let fromCount = hangs(before)
            let toCount = hangs(after)
            let fromPerHour = self.from.perHour(fromCount)
            let toPerHour = self.to.perHour(toCount)
            let longest = (after.isEmpty ? before : after).max { ($0.maxMs, $1.path) < ($1.maxMs, $0.path) }!
            rows.append(
                Row(
                    status: Self.status(from: fromCount, to: toCount, rates: basis == .rates ? (fromPerHour ?? 0, toPerHour ?? 0) : nil),
                    signature: signature, signatureKind: longest.signatureKind, fromCount: fromCount, toCount: toCount,
                    fromPerHour: fromPerHour, toPerHour: toPerHour, services: Array(Set((before + after).map(\.service))).sorted(),
                    representative: longest))
        }
        self.rows = rows.sorted {
            ($0.status.rank, $1.toCount, $1.fromCount, $0.signature) < ($1.status.rank, $0.toCount, $0.fromCount, $1.signature)
        }
    }

    /// The rule: `new` without hangs in FROM, `gone` without hangs in TO; else by `rates` (FROM's,
    /// TO's) when given, `same` within ±`tolerance` of FROM's; else by counts, `same` when equal.
    public static func status(from fromCount: Int, to toCount: Int, rates: (from: Double, to: Double)?) -> Status {
        if fromCount == 0 { return .new }
        if toCount == 0 { return .gone }
        if let rates {
            if rates.to > rates.from * (1 + tolerance) { return .more }
            if rates.to < rates.from * (1 - tolerance) { return .fewer }
            return .same
        }
        return toCount > fromCount ? .more : toCount < fromCount ? .fewer : .same
    }

    /// The versions `summaries` carry, the one seen last first (for an error that names them).
    public static func versions(in summaries: [ReportSummary]) -> [String] {
        var last: [String: Date] = [:]
        for summary in summaries {
            guard let version = summary.serviceVersion else { continue }
            last[version] = max(last[version] ?? summary.lastSeen, summary.lastSeen)
        }
        return last.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map(\.key)
    }
}
