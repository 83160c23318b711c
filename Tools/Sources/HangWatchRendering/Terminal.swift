#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// What the terminal can do: colour (only on a TTY, never with NO_COLOR or TERM=dumb), its width,
/// and progress lines on standard error (only when it is a TTY).
package struct Terminal {
    package enum ColorChoice: String, CaseIterable, Sendable {
        case auto, always, never
    }

    package let colors: Bool
    package let width: Int
    package let progressVisible: Bool

    /// A terminal of known abilities (tests: rendering as plain strings of a fixed width).
    package init(colors: Bool, width: Int, progressVisible: Bool = false) {
        self.colors = colors
        self.width = width
        self.progressVisible = progressVisible
    }

    /// Standard output's terminal, coloured as `color` says.
    package init(color: ColorChoice = .auto) {
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

    package enum Style: String, Sendable {
        case bold = "1", dim = "2", red = "31", green = "32", yellow = "33", blue = "34", magenta = "35", cyan = "36"
    }

    package func paint(_ text: String, _ style: Style) -> String {
        colors ? "\u{1b}[\(style.rawValue)m\(text)\u{1b}[0m" : text
    }

    /// A line on standard error.
    package static func warn(_ message: String) {
        write(Array((message + "\n").utf8), to: STDERR_FILENO)
    }

    /// Writes all of `bytes` to a file descriptor now, past stdio's buffer (as `FileHandle`'s
    /// `write` did), retrying short writes (and, through `SystemCall`, EINTR); any other failure
    /// (a closed pipe) ends it.
    package static func write(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = (try? SystemCall.check("write") { bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) } }) ?? 0
            guard written > 0 else { return }
            offset += written
        }
    }

    /// Reports progress on standard error when it is a terminal and the work takes a while.
    /// Callers on several threads serialize their calls (the catalog calls it under its lock).
    package final class Progress: @unchecked Sendable {
        private let label: String
        private let visible: Bool
        private let started = Date()
        private var shown = false

        package init(_ label: String, terminal: Terminal) {
            self.label = label
            visible = terminal.progressVisible
        }

        package func update(_ done: Int, _ total: Int) {
            guard visible, Date().timeIntervalSince(started) > 0.3, done % 25 == 0 || done == total else { return }
            shown = true
            Terminal.write(Array("\r\(label) \(done)/\(total)\u{1b}[K".utf8), to: STDERR_FILENO)
        }

        package func finish() {
            if shown { Terminal.write(Array("\r\u{1b}[K".utf8), to: STDERR_FILENO) }
        }
    }
}
