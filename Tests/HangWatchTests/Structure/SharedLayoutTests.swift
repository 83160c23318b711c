import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

/// The heartbeat page and the loop-busy histogram are written through the C header
/// (CHangWatchCapture) and read by HangWatchReport (the agent): each layout is defined in C and
/// checked here against its reader, field by field.
@Suite struct SharedLayoutTests {
    @Test func theHeartbeatReaderUsesTheWritersLayout() {
        let reader = Dictionary(uniqueKeysWithValues: MonitorHeartbeat.Offset.allCases.map { ("\($0)", $0.rawValue) })
        #expect(UnsafeHeartbeatPage.layout == reader)
        #expect(UnsafeHeartbeatPage.size == MonitorHeartbeat.size)
        #expect(UnsafeHeartbeatPage.magic == MonitorHeartbeat.magic)
    }

    /// What the C writer stores is what the agent's reader returns, the new rate-limit count too.
    @Test func aTickReadsBackThroughTheAgentsReader() throws {
        let directory = ReportDirectory()
        try ReportStore(directory: directory.path).prepare()
        let publisher = try HeartbeatPublisher(directory: directory.path, access: .private, interval: .seconds(10), thresholdMicroseconds: 250_000)
        defer { publisher.retire() }
        publisher.tick(.watching, activityWord: 0x1234_40, hangsDetected: 12, hangsSuppressed: 5, thresholdMicroseconds: 300_000)
        let heartbeat = try MonitorHeartbeat.read(path: directory.path + "/" + MonitorHeartbeat.fileName(pid: getpid()))
        #expect(heartbeat.pid == getpid())
        #expect(heartbeat.state == .watching && heartbeat.activityWord == 0x1234_40)
        #expect(heartbeat.hangsDetected == 12 && heartbeat.hangsSuppressed == 5 && heartbeat.thresholdMicroseconds == 300_000)
    }

    @Test func theHistogramReaderUsesTheWritersBuckets() {
        #expect(UnsafeLoopHistogram.bucketBounds == LoopBusyHistogram.bounds)
    }
}
