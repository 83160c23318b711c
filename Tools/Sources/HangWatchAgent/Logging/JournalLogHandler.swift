import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Log lines on standard error: for the journal, with a `<N>` syslog priority prefix (systemd's
/// `SyslogLevelPrefix=`), the message, then `key=value` metadata; anywhere else (a terminal, a
/// file, a pipe) the same line with the level spelled out instead of the prefix. The level is
/// shared by every handler made from one `LevelBox` so a reload can change it.
public struct JournalLogHandler: LogHandler {
    public final class LevelBox: Sendable {
        private let value: Mutex<Logger.Level>
        public init(_ level: Logger.Level) { value = Mutex(level) }
        public var level: Logger.Level {
            get { value.withLock { $0 } }
            set { value.withLock { $0 = newValue } }
        }
    }

    /// How a line starts: a syslog priority for the journal, or the level's name.
    public enum Style: Sendable, Equatable {
        /// `<6>message key=value`: the journal turns the prefix into the priority.
        case journal
        /// `info: message key=value`.
        case plain

        /// `.journal` when `$JOURNAL_STREAM` (`device:inode`, set by systemd when it connects a
        /// stream to the journal) names the stream open on `descriptor`; `.plain` otherwise.
        public static func forStream(
            _ descriptor: Int32 = STDERR_FILENO, environment: [String: String] = ProcessInfo.processInfo.environment
        ) -> Style {
            guard let value = environment["JOURNAL_STREAM"] else { return .plain }
            let parts = value.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .plain }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { return .plain }
            return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode ? .journal : .plain
        }
    }

    private let label: String
    private let box: LevelBox
    private let style: Style
    public var metadata: Logger.Metadata = [:]

    public init(label: String, level: LevelBox, style: Style) {
        self.label = label
        box = level
        self.style = style
    }

    public var logLevel: Logger.Level {
        get { box.level }
        set { box.level = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        FileHandle.standardError.write(Data(line(event).utf8))
    }

    /// One event as one line (with its newline).
    func line(_ event: LogEvent) -> String {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let suffix = fields.sorted { $0.key < $1.key }.map { " \($0.key)=\(Self.quote("\($0.value)"))" }.joined()
        let start = style == .journal ? "<\(Self.priority(event.level))>" : "\(event.level.rawValue): "
        return "\(start)\(event.message)\(suffix)\n"
    }

    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    static func quote(_ value: String) -> String {
        value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" }) || value.isEmpty
            ? "\"" + value.replacingOccurrences(of: "\"", with: "\\\"") + "\"" : value
    }
}
