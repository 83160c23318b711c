import Foundation
import Logging
import Synchronization

/// Log lines on standard error the way the journal reads them: a `<N>` syslog priority prefix
/// (systemd's `SyslogLevelPrefix=`), the message, then `key=value` metadata. The level is shared
/// by every handler made from one `Level` box so a reload can change it.
public struct JournalLogHandler: LogHandler {
    public final class LevelBox: Sendable {
        private let value: Mutex<Logger.Level>
        public init(_ level: Logger.Level) { value = Mutex(level) }
        public var level: Logger.Level {
            get { value.withLock { $0 } }
            set { value.withLock { $0 = newValue } }
        }
    }

    private let label: String
    private let box: LevelBox
    public var metadata: Logger.Metadata = [:]

    public init(label: String, level: LevelBox) {
        self.label = label
        box = level
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
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        let suffix = fields.sorted { $0.key < $1.key }.map { " \($0.key)=\(Self.quote("\($0.value)"))" }.joined()
        let line = "<\(Self.priority(event.level))>\(event.message)\(suffix)\n"
        FileHandle.standardError.write(Data(line.utf8))
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
