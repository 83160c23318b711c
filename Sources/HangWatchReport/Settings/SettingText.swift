#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Parses and prints the durations used in configuration: `250ms`, `1.5s`, `2m`, `500us`, `1h`, `30d`.
/// A bare number is milliseconds.
public enum DurationText {
    /// A duration as people write one: `250ms`, `2s`, `1.5s`, a bare number of milliseconds
    /// (`250`), or several terms added up as systemd and journalctl write them (`1d12h`, `2h30m`,
    /// `1h 30min`). Units: `us`/`µs`, `ms`, `s`/`sec`, `m`/`min`, `h`/`hr`, `d`, `w`. Nil for
    /// anything else, a negative or non-finite value, or more than 10⁹ seconds.
    public static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingWhitespace().lowercased()
        guard !trimmed.isEmpty else { return nil }
        // A bare number: milliseconds.
        if let value = Double(trimmed) {
            return duration(seconds: value * 1e-3)
        }
        let units: [String: Double] = [
            "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600,
            "d": 86_400, "w": 604_800,
        ]
        var seconds = 0.0
        var rest = Substring(trimmed)
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " }
            let number = rest.prefix { $0.isNumber || $0 == "." }
            rest = rest.dropFirst(number.count).drop { $0 == " " }
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            guard let value = Double(number), let scale = units[String(unit)] else { return nil }
            seconds += value * scale
            rest = rest.drop { $0 == " " }
        }
        return duration(seconds: seconds)
    }

    private static func duration(seconds: Double) -> Duration? {
        guard seconds.isFinite, seconds >= 0, seconds <= 1e9 else { return nil }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    public static func format(_ duration: Duration) -> String {
        let nanoseconds = Self.nanoseconds(duration)
        if nanoseconds == 0 { return "0s" }
        if nanoseconds % 86_400_000_000_000 == 0 { return "\(nanoseconds / 86_400_000_000_000)d" }
        if nanoseconds % 3_600_000_000_000 == 0 { return "\(nanoseconds / 3_600_000_000_000)h" }
        if nanoseconds % 60_000_000_000 == 0 && nanoseconds >= 60_000_000_000 { return "\(nanoseconds / 60_000_000_000)m" }
        if nanoseconds % 1_000_000_000 == 0 { return "\(nanoseconds / 1_000_000_000)s" }
        if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000)ms" }
        if nanoseconds % 1_000 == 0 { return "\(nanoseconds / 1_000)us" }
        return "\(nanoseconds)ns"
    }

    public static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    public static func microseconds(_ duration: Duration) -> UInt64 {
        UInt64(max(0, nanoseconds(duration) / 1000))
    }
}

/// Parses byte sizes: `65536`, `64KiB`, `10MiB`, `1GiB`, `10MB`, `512K`.
public enum ByteCountText {
    public static func parse(_ text: String) -> UInt64? {
        let trimmed = text.trimmingWhitespace()
        let units: [(String, Double)] = [
            ("KiB", 1024), ("MiB", 1_048_576), ("GiB", 1_073_741_824), ("KB", 1e3), ("MB", 1e6), ("GB", 1e9),
            ("K", 1024), ("M", 1_048_576), ("G", 1_073_741_824), ("B", 1),
        ]
        for (suffix, scale) in units where trimmed.hasSuffix(suffix) {
            guard let value = Double(trimmed.dropLast(suffix.count).trimmingWhitespace()),
                value.isFinite, value >= 0, value * scale < 1.8e19
            else { return nil }
            return UInt64(value * scale)
        }
        return UInt64(trimmed)
    }
}

/// Parses the yes/no values of settings: `1 true yes on`, `0 false no off`.
public enum SettingText {
    public static func boolean(_ text: String) -> Bool? {
        switch text.trimmingWhitespace().lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: return nil
        }
    }
}
