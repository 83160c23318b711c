import Logging

/// swift-otel's diagnostic log: warnings and errors go to the journal; the batch processor's
/// per-batch outcome lines drive the `HangLogOutbox`. The message texts are swift-otel 1.x's
/// (`OTelBatchLogRecordProcessor`); the end-to-end test with a receiver that goes away and comes
/// back fails if they change.
struct OTelDiagnostics: LogHandler {
    final class Router: @unchecked Sendable {
        // Set once, before any record is emitted.
        var outbox: HangLogOutbox?
    }

    static let exported = "Exported batch."
    static let failed = "Failed to export batch."
    static let droppedWhenFull = "Log records were dropped this iteration because queue was full"
    static let batchProcessor = "OTelBatchLogRecordProcessor"

    let label: String
    let router: Router
    let journal: Logger
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    init(label: String, router: Router, journal: Logger) {
        self.label = label
        self.router = router
        self.journal = journal
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let extra = event.metadata { fields.merge(extra) { $1 } }
        if case .string(Self.batchProcessor)? = fields["component"], let outbox = router.outbox {
            let message = event.message.description
            let size = fields["batch_size"].flatMap { Int("\($0)") } ?? 0
            switch message {
            case Self.exported:
                outbox.delivered(size)
            case Self.failed:
                outbox.failed(size, permanent: Self.isPermanent(event.error))
            case Self.droppedWhenFull:
                outbox.lostInPipeline(fields["dropped_count"].flatMap { Int("\($0)") } ?? 0)
            default:
                break
            }
        }
        guard event.level >= .warning else { return }
        var forwarded: Logger.Metadata = ["hangwatch.otel.message": "\(event.message)"]
        for key in ["component", "batch_size", "dropped_count"] { forwarded["hangwatch.otel.\(key)"] = fields[key] }
        if let error = event.error { forwarded["hangwatch.error"] = "\(error)" }
        journal.log(level: event.level, "OTLP export problem", metadata: forwarded)
    }

    /// A refusal that retrying will not change: an HTTP 4xx other than 429.
    static func isPermanent(_ error: (any Error)?) -> Bool {
        guard let error else { return false }
        let text = String(reflecting: error)
        guard let range = text.range(of: "requestFailed") else { return false }
        let digits = text[range.upperBound...].split(whereSeparator: { !$0.isNumber }).first.flatMap { Int($0) }
        guard let status = digits else { return false }
        return (400..<500).contains(status) && status != 429 && status != 408
    }
}
