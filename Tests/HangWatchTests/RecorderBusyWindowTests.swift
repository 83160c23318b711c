import Foundation
@testable import HangWatch
import HangWatchReport
import Testing

/// A run loop's busy ratio over its flight recorder's window ending now, as the heartbeat
/// publishes it: read from a latch written on scripted time, and through the heartbeat page of a
/// scripted monitor.
@Suite struct RecorderBusyWindowTests {
    let beforeWaiting: UInt8 = 32
    let afterWaiting: UInt8 = 64

    func makeLatch() -> ActivityLatch {
        ActivityLatch(busyActivities: [.beforeSources, .afterWaiting], leadUpBuckets: 50)
    }

    func milliseconds(_ units: UInt64) -> Double { Double(units) * 1.024 / 1000 }

    /// `busyMs` of every 100 ms from `startMs` to `endMs`.
    func cycle(_ latch: ActivityLatch, from startMs: UInt64, to endMs: UInt64, busyMs: UInt64) {
        for start in stride(from: startMs, to: endMs, by: 100) {
            latch.record(afterWaiting, atMicroseconds: start * 1000)
            latch.record(beforeWaiting, atMicroseconds: (start + busyMs) * 1000)
        }
    }

    @Test func aLoopNinetyPercentBusyReadsNinetyPercentWithItsLongestPiece() throws {
        let latch = makeLatch()
        cycle(latch, from: 1_000, to: 7_000, busyMs: 90)
        let window = RecorderBusyWindow.read(try #require(latch.leadUp), latch: latch, nowMicroseconds: 7_000_000)
        #expect(abs(milliseconds(window.windowUnits) - 5_000) < 100, "\(window)")
        #expect(abs(window.ratio - 0.9) < 0.02, "\(window.ratio)")
        #expect(abs(milliseconds(window.longestUnits) - 90) < 0.5, "\(window)")
    }

    /// The piece in progress is not in the ring yet (a piece is added when it ends): it counts from
    /// its start to now, and is the longest so far.
    @Test func thePieceInProgressCountsAsBusyUpToNow() throws {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 4_000_000)
        let window = RecorderBusyWindow.read(try #require(latch.leadUp), latch: latch, nowMicroseconds: 5_000_000)
        #expect(abs(window.ratio - 1_000.0 / milliseconds(window.windowUnits)) < 0.01, "\(window)")
        #expect(window.ratio > 0.19 && window.ratio < 0.21, "\(window.ratio)")
        #expect(abs(milliseconds(window.longestUnits) - 1_000) < 0.5, "\(window)")
    }

    @Test func anIdleLoopReadsZero() throws {
        let latch = makeLatch()
        cycle(latch, from: 1_000, to: 1_500, busyMs: 50)
        let window = RecorderBusyWindow.read(try #require(latch.leadUp), latch: latch, nowMicroseconds: 9_000_000)
        #expect(window.busyUnits == 0 && window.longestUnits == 0 && window.windowUnits > 0, "\(window)")
    }

    /// A piece that began before the window counts only for its part in it.
    @Test func aPieceLongerThanTheWindowFillsItOnce() throws {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 1_000_000)
        let window = RecorderBusyWindow.read(try #require(latch.leadUp), latch: latch, nowMicroseconds: 9_000_000)
        #expect(window.busyUnits == window.windowUnits, "\(window)")
        #expect(abs(milliseconds(window.longestUnits) - 8_000) < 0.5, "\(window)")
    }

    static func heartbeat(_ h: WatchdogHarness) -> MonitorHeartbeat? {
        try? MonitorHeartbeat.read(path: h.directory.path + "/" + MonitorHeartbeat.fileName(pid: getpid()))
    }

    /// Through the watchdog: a scripted run loop 90 % busy in pieces of 90 ms (under the 250 ms
    /// threshold: no hang) publishes its busy ratio and longest piece in the heartbeat page; the
    /// hang count stays 0.
    @Test func theHeartbeatPublishesTheLoopsBusyRatioBelowTheThreshold() throws {
        let h = WatchdogHarness(configure: { $0.heartbeatInterval = .seconds(1) })
        for start in stride(from: 100.0, to: 6_100, by: 100) { h.busy(from: start, for: 90) }
        var page: MonitorHeartbeat?
        h.clock.at(h.t(6_150)) { page = Self.heartbeat(h) }
        h.stop(at: 6_200)
        h.run()
        let published = try #require(page?.loopBusyWindow, "\(String(describing: page))")
        #expect(published.ratio > 0.85 && published.ratio <= 0.95, "\(published)")
        #expect(abs(Double(published.longestNanoseconds) / 1e6 - 90) < 1, "\(published)")
        #expect(published.windowNanoseconds > 4_800_000_000 && published.windowNanoseconds <= 5_000_000_000, "\(published)")
        #expect(page?.hangsDetected == 0)
    }

    /// With the recorder off (`leadUpWindow` 0) the section is not published: a reader sees none.
    @Test func aMonitorWithoutARecorderPublishesNoBusyRatio() throws {
        let h = WatchdogHarness(configure: {
            $0.heartbeatInterval = .seconds(1)
            $0.leadUpWindow = .zero
        })
        for start in stride(from: 100.0, to: 2_100, by: 100) { h.busy(from: start, for: 90) }
        var page: MonitorHeartbeat?
        h.clock.at(h.t(2_150)) { page = Self.heartbeat(h) }
        h.stop(at: 2_200)
        h.run()
        let read = try #require(page)
        #expect(read.loopBusyWindow == nil, "\(read)")
    }
}
