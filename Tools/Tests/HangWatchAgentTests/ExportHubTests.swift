import Foundation
import HangWatchReport
import Testing

@testable import HangWatchAgent

@Suite struct ExportHubTests {
    static func hang(_ path: String, verdict: String = "raw") throws -> FinishedHang {
        var hang = try #require(FinishedHangTests.hang(FinishedHangTests.report(durationMs: 300)))
        hang.reportPath = path
        hang.verdict = verdict
        return hang
    }

    @Test func countersGetAHangAtOnceLogRecordsOnceItsNamesAreSettled() throws {
        let counter = RecordingExporter()
        let records = RecordingExporter(waitsForNames: true)
        let hub = ExportHub([counter, records])
        hub.hangFinished(try Self.hang("/a"), namesPending: true)
        hub.hangFinished(try Self.hang("/b"), namesPending: true)
        hub.hangFinished(try Self.hang("/c"), namesPending: false)
        #expect(counter.hangs.map(\.reportPath) == ["/a", "/b", "/c"])
        #expect(records.hangs.map(\.reportPath) == ["/c"])
        // Named: goes out with the names (the report's frames and verdict).
        var named = FinishedHangTests.report(durationMs: 300)
        named.frames = named.frames.map { frame in
            var frame = frame
            frame.symbol = "Billing.recompute()"
            return frame
        }
        named.heaviestStack?.frames = named.frames
        hub.namesSettled(reportPath: "/a", named: named)
        #expect(records.hangs.map(\.reportPath) == ["/c", "/a"])
        #expect(records.hangs.last?.topFrames.first?.contains("Billing.recompute") == true, "\(records.hangs.last?.topFrames ?? [])")
        #expect(records.hangs.last?.verdict == HangReportSummary.verdictLine(named))
        // Gone, or not nameable: goes out as it is; settling twice sends nothing more.
        hub.namesSettled(reportPath: "/b", named: nil)
        hub.namesSettled(reportPath: "/b", named: nil)
        hub.namesSettled(reportPath: "/unknown", named: nil)
        #expect(records.hangs.map(\.reportPath) == ["/c", "/a", "/b"])
        #expect(records.hangs.last?.verdict == "raw")
        #expect(counter.hangs.count == 3)
    }

    @Test func withoutAnExporterThatWaitsNothingIsHeld() throws {
        let counter = RecordingExporter()
        let hub = ExportHub([counter])
        #expect(!hub.holdsForNames)
        hub.hangFinished(try Self.hang("/a"), namesPending: true)
        #expect(counter.hangs.count == 1)
        hub.namesSettled(reportPath: "/a", named: nil)
        #expect(counter.hangs.count == 1)
    }

    @Test func dropsGaugesAndShutdownReachEveryExporter() async throws {
        let exporters = [RecordingExporter(), RecordingExporter(waitsForNames: true)]
        let hub = ExportHub(exporters)
        hub.reportsDropped(.export, count: 2)
        hub.reportsDropped(.retention, count: 0)
        hub.publish(SpoolGauges(reports: 3))
        await hub.shutdown()
        for exporter in exporters {
            #expect(exporter.drops == [.export: 2])
            #expect(exporter.lastGauges?.reports == 3)
            #expect(exporter.isShutDown)
        }
    }
}
