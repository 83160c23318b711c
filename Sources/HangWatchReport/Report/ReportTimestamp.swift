#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// RFC 3339 timestamps in UTC with millisecond precision: `2026-11-22T01:02:03.123Z`.
public enum ReportTimestamp {
    /// Formats `date` as RFC 3339 UTC with milliseconds.
    public static func format(_ date: Date) -> String {
        // Down to the millisecond, but a time a hair under one (a microsecond, or a few units of
        // the Double's last place) is that one: `…00.183Z` may read as 0.18299999…, and must be
        // written back as `.183Z`, or every rewrite of a report moves its times.
        let exact = date.timeIntervalSince1970 * 1000
        let totalMilliseconds = (exact + max(0.001, 8 * exact.ulp)).rounded(.down)
        var seconds = time_t(floor(totalMilliseconds / 1000))
        let milliseconds = Int(totalMilliseconds - Double(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            printf: "%04ld-%02ld-%02ldT%02ld:%02ld:%02ld.%03ldZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), milliseconds)
    }

    /// Compact form used in report ids and file names: `20261122T010203123Z`.
    public static func compact(_ date: Date) -> String {
        format(date).filter { $0 != "-" && $0 != ":" && $0 != "." }
    }

    /// Parses RFC 3339 (`Z` or a numeric offset, optional fraction). Nil when malformed, or outside
    /// the years 0000 to 9999 once in UTC.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard bytes.count >= 20,
            let year = number(0, 4), bytes[4] == UInt8(ascii: "-"),
            let month = number(5, 2), bytes[7] == UInt8(ascii: "-"),
            let day = number(8, 2), bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"),
            let hour = number(11, 2), bytes[13] == UInt8(ascii: ":"),
            let minute = number(14, 2), bytes[16] == UInt8(ascii: ":"),
            let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < bytes.count && bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            if index == start { return nil }
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        if bytes[index] == UInt8(ascii: "Z") || bytes[index] == UInt8(ascii: "z") {
            index += 1
        } else if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "+") ? 1 : -1
            guard let offsetHours = number(index + 1, 2), index + 3 < bytes.count,
                bytes[index + 3] == UInt8(ascii: ":"), let offsetMinutes = number(index + 4, 2)
            else { return nil }
            offsetSeconds = sign * (offsetHours * 3600 + offsetMinutes * 60)
            index += 6
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let seconds = timegm(&parts) - offsetSeconds
        // Only what `format` can write back: a report that was read can be rewritten and read again.
        guard (earliestSecond...latestSecond).contains(seconds) else { return nil }
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years `format` writes in four digits.
    static let earliestSecond: time_t = -62_167_219_200
    static let latestSecond: time_t = 253_402_300_799
}
