import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

/// Case 15: the wall clock jumps. Detection and durations never read it (the latch and the
/// watchdog keep CLOCK_MONOTONIC time; the wall clock only labels a report), and report ids, which
/// order reports oldest first for retention, never go backwards when it is set back. The host's
/// clock is not moved here (setting it would disturb every process on the machine, the build's
/// among them): the naming is given earlier wall times, and a report's wall-clock labels are
/// checked to be derived from its monotonic duration.
@Suite struct WallClockLabelTests {
    @Test func reportIDsNeverGoBackwardsWhenGivenAnEarlierWallTime() {
        let naming = ReportNaming()
        let now = Date()
        let first = naming.time(of: now)
        let afterJumpBack = naming.time(of: now.addingTimeInterval(-86_400))
        let later = naming.time(of: now.addingTimeInterval(-86_399))
        #expect(afterJumpBack > first)
        #expect(later > afterJumpBack)
        let names = [first, afterJumpBack, later].map(ReportTimestamp.compact)
        #expect(names == names.sorted(), "\(names)")
        // A jump forward is taken as it comes.
        let forward = now.addingTimeInterval(365 * 86_400)
        #expect(abs(naming.time(of: forward).timeIntervalSince(forward)) < 0.002)
    }

    @Test func aReportsWallClockEndIsItsStartPlusItsMonotonicDuration() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        loop.sync { _ = spinInTestHang(milliseconds: 500) }
        let report = try #require(
            directory.waitForFinished(1).first,
            "no finished report in 10 s; the monitor counted \(monitor.statistics); the directory: \(directory.listing())")
        monitor.stop()
        // The report's wall-clock start and end are labels: derived from the monotonic duration.
        let end = try #require(report.endedAt)
        #expect(abs(end.timeIntervalSince(report.startedAt) * 1000 - report.durationMs) < 5)
        #expect(report.durationMs >= 450 && report.durationMs < 2000)
    }
}
