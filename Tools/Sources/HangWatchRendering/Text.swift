#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// Fixed-width text for 80-column tables.
package enum Text {
    /// Pads or truncates (with an ellipsis) to exactly `width` characters.
    package static func fit(_ text: String, _ width: Int, right: Bool = false) -> String {
        guard width > 0 else { return "" }
        if text.count > width { return String(text.prefix(max(0, width - 1))) + "…" }
        let padding = String(repeating: " ", count: width - text.count)
        return right ? padding + text : text + padding
    }

    /// `59241` as `59,241`.
    package static func count(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { grouped += "," }
            grouped.append(digit)
        }
        return (value < 0 ? "-" : "") + grouped
    }

    package static func duration(_ milliseconds: Double) -> String {
        if milliseconds >= 60_000 { return String(printf: "%.1fm", milliseconds / 60_000) }
        if milliseconds >= 10_000 { return String(printf: "%.0fs", milliseconds / 1000) }
        if milliseconds >= 1000 { return String(printf: "%.1fs", milliseconds / 1000) }
        // Report files may hold any JSON number: a huge negative one has no Int.
        if milliseconds <= -1000 { return String(printf: "%.3gms", milliseconds) }
        return "\(Int(milliseconds.rounded()))ms"
    }

    package static func percent(_ ratio: Double?) -> String {
        ratio.map { whole($0 * 100) + "%" } ?? "-"
    }

    /// `value` rounded, as an integer when it has one (a report's 1e308 has none).
    package static func whole(_ value: Double) -> String {
        Int(exactly: value.rounded()).map(String.init) ?? String(printf: "%.3g", value)
    }

    /// Times are shown in UTC (`--utc`) instead of local time. Set once, before any output.
    nonisolated(unsafe) package static var utc = false

    /// `date` broken down in the zone times are shown in, with that zone's offset in seconds.
    private static func parts(_ date: Date) -> (tm, offset: Int) {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        if utc { gmtime_r(&seconds, &parts) } else { localtime_r(&seconds, &parts) }
        return (parts, utc ? 0 : Int(parts.tm_gmtoff))
    }

    private static func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// `11-22 02:01:03`, in the zone times are shown in.
    package static func time(_ date: Date) -> String {
        let (parts, _) = parts(date)
        return two(parts.tm_mon + 1) + "-" + two(parts.tm_mday) + " " + two(parts.tm_hour) + ":" + two(parts.tm_min) + ":" + two(parts.tm_sec)
    }

    /// `UTC`, or the local offset such as `+01:00`, for `date` (offsets change with the season).
    package static func zone(_ date: Date) -> String {
        let (_, offset) = parts(date)
        guard !utc else { return "UTC" }
        let minutes = abs(offset) / 60
        return (offset < 0 ? "-" : "+") + two(Int32(minutes / 60)) + ":" + two(Int32(minutes % 60))
    }

    /// `2026-11-22 02:01:03.123 +01:00`: a full time with its zone, for one report.
    package static func timestamp(_ date: Date) -> String {
        let (parts, _) = parts(date)
        let milliseconds = min(999, Int(((date.timeIntervalSince1970 - date.timeIntervalSince1970.rounded(.down)) * 1000).rounded()))
        let millis = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return "\(parts.tm_year + 1900)-" + two(parts.tm_mon + 1) + "-" + two(parts.tm_mday) + " " + two(parts.tm_hour) + ":"
            + two(parts.tm_min) + ":" + two(parts.tm_sec) + "." + millis + " " + zone(date)
    }
}

extension Text {
    /// Truncates (with an ellipsis) to at most `width` characters, without padding: for the last
    /// column of a line.
    package static func clip(_ text: String, _ width: Int) -> String {
        guard width > 0 else { return "" }
        return text.count > width ? String(text.prefix(max(0, width - 1))) + "…" : text
    }
}
