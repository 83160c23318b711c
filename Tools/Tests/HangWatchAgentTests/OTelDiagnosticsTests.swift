import Foundation
import HangWatchTestSupport
import Logging
import Testing

@testable import HangWatchAgent

@Suite struct OTelDiagnosticsTests {
    @Test func permanentMeansAFourHundredOtherThanThrottling() {
        struct Failure: Error, CustomStringConvertible {
            var description: String
        }
        #expect(OTelDiagnostics.isPermanent(Failure(description: "requestFailed(400 Bad Request)")))
        #expect(!OTelDiagnostics.isPermanent(Failure(description: "requestFailed(429 Too Many Requests)")))
        #expect(!OTelDiagnostics.isPermanent(Failure(description: "requestFailed(408 Request Timeout)")))
        #expect(!OTelDiagnostics.isPermanent(Failure(description: "requestFailed(503 Service Unavailable)")))
        #expect(!OTelDiagnostics.isPermanent(Failure(description: "connectTimeout")))
        #expect(!OTelDiagnostics.isPermanent(nil))
    }

    /// swift-otel's batch lines drive the outbox; its warnings reach the journal with a constant
    /// message and their text in metadata.
    @Test func batchOutcomesDriveTheOutboxAndWarningsReachTheJournal() throws {
        let sink = HangLogOutboxTests.Sink()
        let outbox = HangLogOutboxTests.outbox(capacity: 10, clock: ManualClock(), sink: sink)
        for id in ["a", "b", "c"] { outbox.enqueue(try HangLogOutboxTests.hang(id)) }
        let journal = LogRecorder()
        let router = OTelDiagnostics.Router()
        router.outbox = outbox
        let diagnostics = Logger(label: "otel") { OTelDiagnostics(label: $0, router: router, journal: journal.logger) }
        let batch: Logger.Metadata = ["component": "\(OTelDiagnostics.batchProcessor)", "batch_size": "2"]
        diagnostics.debug("\(OTelDiagnostics.exported)", metadata: batch)
        #expect(outbox.counts.delivered == 2)
        diagnostics.warning("\(OTelDiagnostics.failed)", metadata: ["component": "\(OTelDiagnostics.batchProcessor)", "batch_size": "1"])
        #expect(outbox.counts.retries == 1)
        // Lines of other components leave the outbox alone.
        diagnostics.debug("\(OTelDiagnostics.exported)", metadata: ["component": "OTelPeriodicExportingMetricsReader", "batch_size": "9"])
        #expect(outbox.counts.delivered == 2)
        let warnings = journal.entries("OTLP export problem")
        #expect(warnings.count == 1)
        #expect(warnings.first?["hangwatch.otel.message"] == OTelDiagnostics.failed)
        #expect(warnings.first?["hangwatch.otel.batch_size"] == "1")
        #expect(journal.all.count == 1, "debug lines stay out of the journal")
    }
}
