import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

/// The heartbeat page and the loop-busy histogram are written through the C header
/// (CHangWatchCapture) and read by HangWatchReport (the agent): each layout is defined in C and
/// checked here against its reader, field by field.
@Suite struct SharedLayoutTests {
    /// A prepared report directory of its own, and the path of this process's page in it.
    struct PageDirectory {
        let directory = ReportDirectory()
        var path: String { directory.path + "/" + MonitorHeartbeat.fileName(pid: getpid()) }

        init() throws { try ReportStore(directory: directory.path).prepare() }

        /// A publisher of the page, its threshold 250 ms.
        func publisher() throws -> HeartbeatPublisher {
            try HeartbeatPublisher(directory: directory.path, access: .private, interval: .seconds(10), thresholdMicroseconds: 250_000)
        }
    }

    @Test func theHeartbeatReaderUsesTheWritersLayout() {
        let reader = Dictionary(uniqueKeysWithValues: MonitorHeartbeat.Offset.allCases.map { ("\($0)", $0.rawValue) })
        #expect(UnsafeHeartbeatPage.layout == reader)
        #expect(UnsafeHeartbeatPage.size == MonitorHeartbeat.size)
        #expect(UnsafeHeartbeatPage.magic == MonitorHeartbeat.magic)
    }

    /// What the C writer stores is what the agent's reader returns, the rate-limit count and the
    /// process's count of calls its captures cut short too.
    @Test func aTickReadsBackThroughTheAgentsReader() throws {
        let page = try PageDirectory()
        // A thread inspection of its own: the count is exactly the three added.
        let threads = ThreadInspection()
        let publisher = try HeartbeatPublisher(
            directory: page.directory.path, access: .private, interval: .seconds(10), thresholdMicroseconds: 250_000,
            callsCutShort: { threads.callsCutShort.load(ordering: .relaxed) })
        defer { publisher.retire() }
        threads.callsCutShort.add(3, ordering: .relaxed)
        publisher.tick(.watching, activityWord: 0x1234_40, hangsDetected: 12, hangsSuppressed: 5, thresholdMicroseconds: 300_000)
        let heartbeat = try MonitorHeartbeat.read(path: page.path)
        #expect(heartbeat.pid == getpid())
        #expect(heartbeat.state == .watching && heartbeat.activityWord == 0x1234_40)
        #expect(heartbeat.hangsDetected == 12 && heartbeat.hangsSuppressed == 5 && heartbeat.thresholdMicroseconds == 300_000)
        #expect(heartbeat.callsCutShort == 3, "\(heartbeat.callsCutShort)")
    }

    /// The service's version, written once by the C writer, read back whole; none reads as nil.
    @Test func theServiceVersionReadsBackThroughTheAgentsReader() throws {
        let page = try PageDirectory()
        let path = page.path
        let version = ServiceVersion(version: "2.4.0-rc.1+" + String(repeating: "é", count: 40), source: .configuration)
        let publisher = try HeartbeatPublisher(
            directory: page.directory.path, access: .private, interval: .seconds(10), thresholdMicroseconds: 1, serviceVersion: version)
        publisher.tick(.idle, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 1)
        #expect(try MonitorHeartbeat.read(path: path).serviceVersion == version.version)
        #expect(version.version.utf8.count == 63)  // the whole field but one byte: no character cut
        publisher.retire()
        let unversioned = try HeartbeatPublisher(directory: page.directory.path, access: .private, interval: .seconds(10), thresholdMicroseconds: 1)
        unversioned.tick(.idle, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 1)
        #expect(try MonitorHeartbeat.read(path: path).serviceVersion == nil)
        unversioned.retire()
    }

    /// The pool probe's delays, published while a monitor of the directory runs the pool watch, read back.
    @Test func thePoolSectionReadsBackThroughTheAgentsReader() throws {
        let page = try PageDirectory()
        var delays = HangMonitor.PoolProbeDelays()
        delays.counts = (0..<15).map { UInt64($0 * 3) }
        delays.totalNanoseconds = 123_456
        delays.starvations = 4
        let published = delays
        let publisher = try page.publisher()
        defer { publisher.retire() }
        publisher.tick(.idle, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000, pool: published)
        let path = page.path
        let heartbeat = try MonitorHeartbeat.read(path: path)
        #expect(heartbeat.poolStartDelay?.buckets == delays.counts)
        #expect(heartbeat.poolStartDelay?.totalNanoseconds == 123_456 && heartbeat.poolStarvations == 4)

        // A directory none of whose monitors runs the pool watch publishes none; a 256-byte page
        // (older monitors) reads without it.
        let other = try HeartbeatPublisher(directory: page.directory.path, access: .private, interval: .seconds(10), thresholdMicroseconds: 1)
        other.tick(.idle, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 1)
        #expect(try MonitorHeartbeat.read(path: path).poolStartDelay == nil)
        other.retire()
        var old = MonitorHeartbeat.decode(heartbeat.encoded())!
        #expect(old.poolStartDelay == heartbeat.poolStartDelay)
        old = try #require(MonitorHeartbeat.decode(Array(heartbeat.encoded().prefix(256))))
        #expect(old.poolStartDelay == nil && old.pid == getpid())
    }

    /// The busiest recorder's window, written by the C writer, read back; cleared once no monitor
    /// keeps a recorder; a page whose words are zero (a monitor that predates the section, where
    /// they were reserved) or too short to hold them reads without it.
    @Test func theBusyWindowReadsBackThroughTheAgentsReader() throws {
        let page = try PageDirectory()
        let publisher = try page.publisher()
        defer { publisher.retire() }
        let path = page.path
        publisher.tick(
            .watching, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000,
            busyWindow: RecorderBusyWindow(windowUnits: 4_800_000, busyUnits: 4_500_000, longestUnits: 146_000))
        let heartbeat = try MonitorHeartbeat.read(path: path)
        let window = try #require(heartbeat.loopBusyWindow)
        #expect(window == MonitorHeartbeat.BusyWindow(windowNanoseconds: 4_915_200_000, busyNanoseconds: 4_608_000_000, longestNanoseconds: 149_504_000))
        #expect(abs(window.ratio - 0.9375) < 1e-9)
        #expect(MonitorHeartbeat.decode(heartbeat.encoded())?.loopBusyWindow == window)

        publisher.tick(.idle, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000)
        #expect(try MonitorHeartbeat.read(path: path).loopBusyWindow == nil)
        var older = heartbeat.encoded()
        for offset in 424..<448 { older[offset] = 0 }
        #expect(try #require(MonitorHeartbeat.decode(older)).loopBusyWindow == nil)
        #expect(try #require(MonitorHeartbeat.decode(Array(heartbeat.encoded().prefix(256)))).loopBusyWindow == nil)
    }

    /// The recorders' lag histogram, summed by the C writer's page, read back; cleared once no
    /// monitor keeps a recorder; a page of 512 bytes (a monitor that predates the section) reads
    /// without it.
    @Test func theLagHistogramReadsBackThroughTheAgentsReader() throws {
        let page = try PageDirectory()
        let publisher = try page.publisher()
        defer { publisher.retire() }
        let path = page.path
        let lag = UnsafeLoopHistogram.allocate()
        defer { lag.deallocate() }
        for milliseconds: UInt64 in [0, 0, 7, 30, 150, 3_000] { lag.add(busyNanoseconds: milliseconds * 1_000_000) }
        publisher.tick(.watching, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000, lag: lag)
        let heartbeat = try MonitorHeartbeat.read(path: path)
        let counts = try #require(heartbeat.loopLag)
        #expect(counts == lag.read())
        #expect(counts.buckets[0] == 2 && counts.buckets[6] == 1 && counts.buckets[14] == 1, "\(counts)")
        #expect(counts.totalNanoseconds == 3_187_000_000)
        #expect(heartbeat.loopBusy == nil, "the loop-busy histogram is a section of its own")
        #expect(MonitorHeartbeat.decode(heartbeat.encoded())?.loopLag == counts)

        publisher.tick(.idle, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000)
        #expect(try MonitorHeartbeat.read(path: path).loopLag == nil)
        #expect(try #require(MonitorHeartbeat.decode(Array(heartbeat.encoded().prefix(512)))).loopLag == nil)
    }

    @Test func theHistogramReaderUsesTheWritersBuckets() {
        #expect(UnsafeLoopHistogram.bucketBounds == LoopBusyHistogram.bounds)
    }
}
