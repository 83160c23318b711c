#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// Which reports a command looks at.
public struct ReportFilter: Sendable, Equatable {
    public var services: Set<String> = []
    public var since: Date?
    /// Hangs that started before this.
    public var until: Date?
    public var minimumDurationMs: Double?
    public var signature: String?
    /// Labels the hang must carry (every one of them).
    public var labels: [LabelMatch] = []
    /// Where the process ran (`ReportSummary.resource`): a hang passes when its pod matches one of
    /// `pods`, its namespace one of `namespaces` and its container one of `containers` (an empty
    /// list: any, and a hang that names none). Each is a pattern as the shell matches file names
    /// (`*`, `?`, `[…]`): a pod's name, or `NAMESPACE/NAME` with a `/`; a namespace's name; a
    /// container's name (`k8s.container.name`), or the start of its id (`container.id`, as docker
    /// and crictl take a short id).
    public var pods: [String] = []
    public var namespaces: [String] = []
    public var containers: [String] = []

    /// `key` (any value) or `key=pattern`: the label `key`, its value matching `pattern` as the
    /// shell matches file names (`*`, `?`, `[…]`; a pattern without them is the exact value).
    public struct LabelMatch: Sendable, Equatable {
        public var key: String
        public var pattern: String?

        public init(key: String, pattern: String?) {
            self.key = key
            self.pattern = pattern
        }

        /// `route=/checkout`, `route=*checkout*`, `tenant`; nil for an empty key.
        public init?(_ text: String) {
            let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let key = parts.first, !key.isEmpty else { return nil }
            self.key = String(key)
            pattern = parts.count == 2 ? String(parts[1]) : nil
        }

        public func matches(_ labels: [String: String]) -> Bool {
            guard let value = labels[key] else { return false }
            guard let pattern else { return true }
            return fnmatch(pattern, value, 0) == 0
        }
    }

    public init(
        services: Set<String> = [], since: Date? = nil, until: Date? = nil, minimumDurationMs: Double? = nil, signature: String? = nil,
        labels: [LabelMatch] = [], pods: [String] = [], namespaces: [String] = [], containers: [String] = []
    ) {
        self.pods = pods
        self.namespaces = namespaces
        self.containers = containers
        self.services = services
        self.since = since
        self.until = until
        self.minimumDurationMs = minimumDurationMs
        self.signature = signature
        self.labels = labels
    }

    public func matches(_ summary: ReportSummary) -> Bool {
        if !services.isEmpty && !services.contains(summary.service) { return false }
        if let since, summary.startedAt < since { return false }
        if let until, summary.startedAt >= until { return false }
        if let minimumDurationMs, summary.durationMs < minimumDurationMs { return false }
        if let signature, !summary.signature.hasPrefix(signature.lowercased()) { return false }
        if !labels.allSatisfy({ $0.matches(summary.labels) }) { return false }
        if !pods.isEmpty && !pods.contains(where: { Self.pod($0, matches: summary.resource) }) { return false }
        if !namespaces.isEmpty && !namespaces.contains(where: { Self.glob($0, summary.resource?.namespaceName) }) { return false }
        if !containers.isEmpty && !containers.contains(where: { Self.container($0, matches: summary.resource) }) { return false }
        return true
    }

    /// `NAME` against the pod's name, `NAMESPACE/NAME` against both.
    static func pod(_ pattern: String, matches resource: WorkloadIdentity?) -> Bool {
        glob(pattern, pattern.contains("/") ? resource?.pod : resource?.podName)
    }

    /// The container's name, or the start of its id.
    static func container(_ pattern: String, matches resource: WorkloadIdentity?) -> Bool {
        if let id = resource?.containerID, !pattern.isEmpty, pattern.allSatisfy(\.isHexDigit), id.hasPrefix(pattern.lowercased()) { return true }
        return glob(pattern, resource?.containerName)
    }

    static func glob(_ pattern: String, _ value: String?) -> Bool {
        guard let value else { return false }
        return fnmatch(pattern, value, 0) == 0
    }

    /// Why nothing matched when a label's value is asked without wildcards (`route=/checkout`) and
    /// hangs that pass every other filter carry that label with the value inside a longer one
    /// (`GET /checkout`): a value is matched whole. Says so, with a value there and the pattern
    /// that matches part of a value; nil when that is not why.
    public func labelHint(_ summaries: [ReportSummary]) -> String? {
        for (index, match) in labels.enumerated() {
            guard let pattern = match.pattern, !pattern.isEmpty, !pattern.contains(where: { "*?[".contains($0) }) else { continue }
            var others = self
            others.labels.remove(at: index)
            let values = Set(summaries.filter(others.matches).compactMap { $0.labels[match.key] }).filter { $0 != pattern && $0.contains(pattern) }
            guard let example = values.sorted().first else { continue }
            return "--label \(match.key)=\(pattern) matches whole values only (there is \(match.key)=\(example)); "
                + "for part of a value: --label '\(match.key)=*\(pattern)*'"
        }
        return nil
    }

    /// Parses `--since` and `--until` the way journalctl reads times: a duration back from `now`
    /// (`90s`, `2h30m`, `-1h`, `1h ago`; `+1h` ahead), `now`, `today`, `yesterday`, `tomorrow`
    /// (midnight, local time), a date (`2026-11-20`, midnight), a date and time (`2026-11-20 10:00`,
    /// `2026-11-20 10:00:30`, local time), or an RFC 3339 time (`2026-11-20T10:00:00Z`).
    public static func parseTime(_ text: String, now: Date = Date(), calendar: Calendar = .current) -> Date? {
        let trimmed = text.trimmingWhitespace()
        let lowered = trimmed.lowercased()
        if let date = ReportTimestamp.parse(trimmed) { return date }
        let midnight = calendar.startOfDay(for: now)
        switch lowered {
        case "now": return now
        case "today": return midnight
        case "yesterday": return calendar.date(byAdding: .day, value: -1, to: midnight)
        case "tomorrow": return calendar.date(byAdding: .day, value: 1, to: midnight)
        default: break
        }
        if let date = localDateTime(trimmed, calendar: calendar) { return date }
        // Relative: a duration with at least one unit (a bare number is no time).
        var relative = Substring(lowered)
        var sign = -1.0
        if relative.hasPrefix("-") {
            relative = relative.dropFirst()
        } else if relative.hasPrefix("+") {
            relative = relative.dropFirst()
            sign = 1
        } else if relative.hasSuffix(" ago") {
            relative = relative.dropLast(4)
        }
        guard relative.contains(where: \.isLetter), let duration = DurationText.parse(String(relative)) else { return nil }
        return now.addingTimeInterval(sign * Double(DurationText.nanoseconds(duration)) / 1e9)
    }

    /// `YYYY-MM-DD`, `YYYY-MM-DD HH:MM` or `YYYY-MM-DD HH:MM:SS` (a `T` may stand for the space), in
    /// `calendar`'s time zone.
    static func localDateTime(_ text: String, calendar: Calendar) -> Date? {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "T" })
        guard (1...2).contains(parts.count) else { return nil }
        let day = parts[0].split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
        guard day.count == 3, let year = day[0], let month = day[1], let dayOfMonth = day[2], parts[0].count == 10 else { return nil }
        var time: [Int?] = [0, 0, 0]
        if parts.count == 2 {
            time = parts[1].split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
            guard (2...3).contains(time.count) else { return nil }
            if time.count == 2 { time.append(0) }
        }
        guard let hour = time[0], let minute = time[1], let second = time[2], (0..<24).contains(hour), (0..<60).contains(minute),
            (0..<61).contains(second), (1...12).contains(month), (1...31).contains(dayOfMonth)
        else { return nil }
        let components = DateComponents(
            calendar: calendar, timeZone: calendar.timeZone, year: year, month: month, day: dayOfMonth, hour: hour, minute: minute,
            second: second)
        // A day the month does not have (2026-02-30) is no date.
        guard let date = calendar.date(from: components), calendar.component(.day, from: date) == dayOfMonth else { return nil }
        return date
    }
}
