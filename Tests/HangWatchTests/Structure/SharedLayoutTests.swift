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

    @Test func theHistogramReaderUsesTheWritersBuckets() {
        #expect(UnsafeLoopHistogram.bucketBounds == LoopBusyHistogram.bounds)
    }
}
