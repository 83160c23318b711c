import Logging
import Synchronization

/// Log events, kept in memory (a test double after swift-log's `InMemoryLogging`).
public final class LogRecorder: @unchecked Sendable {
    public struct Entry: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: Logger.Metadata
    }

    private let entries = Mutex<[Entry]>([])

    public init() {}

    public var logger: Logger {
        Logger(label: "test") { _ in Handler(recorder: self) }
    }

    public var all: [Entry] { entries.withLock { $0 } }

    /// The entries with `message`.
    public func entries(_ message: String) -> [Entry] { all.filter { $0.message == message } }

    public func count(_ message: String) -> Int { entries(message).count }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var fields = metadata
            if let extra = event.metadata { fields.merge(extra) { $1 } }
            let entry = Entry(level: event.level, message: "\(event.message)", metadata: fields)
            recorder.entries.withLock { $0.append(entry) }
        }
    }
}

extension LogRecorder.Entry {
    /// A metadata value as text.
    public subscript(_ key: String) -> String? { metadata[key].map { "\($0)" } }
}
