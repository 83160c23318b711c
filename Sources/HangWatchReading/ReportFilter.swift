import Foundation
import HangWatchReport

/// Which reports a command looks at.
public struct ReportFilter: Sendable, Equatable {
    public var services: Set<String> = []
    public var since: Date?
    public var minimumDurationMs: Double?
    public var signature: String?

    public init(services: Set<String> = [], since: Date? = nil, minimumDurationMs: Double? = nil, signature: String? = nil) {
        self.services = services
        self.since = since
        self.minimumDurationMs = minimumDurationMs
        self.signature = signature
    }

    public func matches(_ summary: ReportSummary) -> Bool {
        if !services.isEmpty && !services.contains(summary.service) { return false }
        if let since, summary.startedAt < since { return false }
        if let minimumDurationMs, summary.durationMs < minimumDurationMs { return false }
        if let signature, !summary.signature.hasPrefix(signature.lowercased()) { return false }
        return true
    }

    /// Parses `--since`: a duration back from `now` (`90s`, `30m`, `1h`, `2d`, `1w`) or an RFC 3339 time.
    public static func parseSince(_ text: String, now: Date = Date()) -> Date? {
        if let date = ReportTimestamp.parse(text) { return date }
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800)]
        for (suffix, seconds) in units where text.hasSuffix(suffix) {
            if let value = Double(text.dropLast(suffix.count)), value >= 0, value.isFinite {
                return now.addingTimeInterval(-value * seconds)
            }
        }
        return nil
    }

    /// Parses `--min-duration`: `500ms`, `1.5s`, `2m`, or a bare number of milliseconds.
    public static func parseDuration(_ text: String) -> Double? {
        let units: [(String, Double)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000)]
        for (suffix, milliseconds) in units where text.hasSuffix(suffix) {
            if let value = Double(text.dropLast(suffix.count)), value >= 0, value.isFinite { return value * milliseconds }
        }
        if let value = Double(text), value >= 0, value.isFinite { return value }
        return nil
    }
}
