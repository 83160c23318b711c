import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the terminal can do: colour (only on a TTY, never with NO_COLOR or TERM=dumb), its width,
/// and progress lines on standard error (only when it is a TTY).
struct Terminal {
    enum ColorChoice: String, CaseIterable {
        case auto, always, never
    }

    let colors: Bool
    let width: Int
    let progressVisible: Bool

    init(color: ColorChoice = .auto) {
        let environment = ProcessInfo.processInfo.environment
        let isTTY = isatty(STDOUT_FILENO) == 1
        switch color {
        case .always: colors = true
        case .never: colors = false
        case .auto: colors = isTTY && environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
        }
        var size = winsize()
        if isTTY, ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col >= 40 {
            width = Int(size.ws_col)
        } else if let columns = environment["COLUMNS"].flatMap(Int.init), columns >= 40 {
            width = columns
        } else {
            width = 80
        }
        progressVisible = isatty(STDERR_FILENO) == 1
    }

    enum Style: String {
        case bold = "1", dim = "2", red = "31", green = "32", yellow = "33", blue = "34", magenta = "35", cyan = "36"
    }

    func paint(_ text: String, _ style: Style) -> String {
        colors ? "\u{1b}[\(style.rawValue)m\(text)\u{1b}[0m" : text
    }

    /// A line on standard error.
    static func warn(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// Reports progress on standard error when it is a terminal and the work takes a while.
    /// Callers on several threads serialize their calls (the catalog calls it under its lock).
    final class Progress: @unchecked Sendable {
        private let label: String
        private let visible: Bool
        private let started = Date()
        private var shown = false

        init(_ label: String, terminal: Terminal) {
            self.label = label
            visible = terminal.progressVisible
        }

        func update(_ done: Int, _ total: Int) {
            guard visible, Date().timeIntervalSince(started) > 0.3, done % 25 == 0 || done == total else { return }
            shown = true
            FileHandle.standardError.write(Data("\r\(label) \(done)/\(total)\u{1b}[K".utf8))
        }

        func finish() {
            if shown { FileHandle.standardError.write(Data("\r\u{1b}[K".utf8)) }
        }
    }
}

/// Fixed-width text for 80-column tables.
enum Text {
    /// Pads or truncates (with an ellipsis) to exactly `width` characters.
    static func fit(_ text: String, _ width: Int, right: Bool = false) -> String {
        guard width > 0 else { return "" }
        if text.count > width { return String(text.prefix(max(0, width - 1))) + "…" }
        let padding = String(repeating: " ", count: width - text.count)
        return right ? padding + text : text + padding
    }

    static func duration(_ milliseconds: Double) -> String {
        if milliseconds >= 60_000 { return String(format: "%.1fm", milliseconds / 60_000) }
        if milliseconds >= 10_000 { return String(format: "%.0fs", milliseconds / 1000) }
        if milliseconds >= 1000 { return String(format: "%.1fs", milliseconds / 1000) }
        // Report files may hold any JSON number: a huge negative one has no Int.
        if milliseconds <= -1000 { return String(format: "%.3gms", milliseconds) }
        return "\(Int(milliseconds.rounded()))ms"
    }

    static func percent(_ ratio: Double?) -> String {
        ratio.map { whole($0 * 100) + "%" } ?? "-"
    }

    /// `value` rounded, as an integer when it has one (a report's 1e308 has none).
    static func whole(_ value: Double) -> String {
        Int(exactly: value.rounded()).map(String.init) ?? String(format: "%.3g", value)
    }

    /// Times are shown in UTC (`--utc`) instead of local time. Set once, before any output.
    nonisolated(unsafe) static var utc = false

    /// `date` broken down in the zone times are shown in, with that zone's offset in seconds.
    private static func parts(_ date: Date) -> (tm, offset: Int) {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        if utc { gmtime_r(&seconds, &parts) } else { localtime_r(&seconds, &parts) }
        return (parts, utc ? 0 : Int(parts.tm_gmtoff))
    }

    private static func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }

    /// `11-22 02:01:03`, in the zone times are shown in.
    static func time(_ date: Date) -> String {
        let (parts, _) = parts(date)
        return two(parts.tm_mon + 1) + "-" + two(parts.tm_mday) + " " + two(parts.tm_hour) + ":" + two(parts.tm_min) + ":" + two(parts.tm_sec)
    }

    /// `UTC`, or the local offset such as `+01:00`, for `date` (offsets change with the season).
    static func zone(_ date: Date) -> String {
        let (_, offset) = parts(date)
        guard !utc else { return "UTC" }
        let minutes = abs(offset) / 60
        return (offset < 0 ? "-" : "+") + two(Int32(minutes / 60)) + ":" + two(Int32(minutes % 60))
    }

    /// `2026-11-22 02:01:03.123 +01:00`: a full time with its zone, for one report.
    static func timestamp(_ date: Date) -> String {
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
    static func clip(_ text: String, _ width: Int) -> String {
        guard width > 0 else { return "" }
        return text.count > width ? String(text.prefix(max(0, width - 1))) + "…" : text
    }
}
