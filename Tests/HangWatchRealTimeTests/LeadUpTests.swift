import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Synchronization
import Testing

/// End to end: a real run loop's flight recorder, written by its real observers, read into a
/// real report (`before`, `kind`). Generous bounds: the machine may be busy.
@Suite(.serialized) struct LeadUpTests {
    /// Idle, then one 800 ms job: the lead-up reads idle over the whole window, and one piece
    /// proves nothing about how many jobs it ran.
    @Test func aLoopIdleUntilOneLongJobReadsIdleBeforeIt() throws {
        let (directory, loop, monitor) = try startMonitoredLoop(threshold: .milliseconds(200))
        defer { loop.stop() }
        loop.afterDelay(0.3) { _ = hangInTimerCallback(milliseconds: 800) }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        let report = try #require(reports.first)
        let before = try #require(report.before, "a run-loop report carries its lead-up")
        #expect(before.windowMs == 5000 && before.bucketMs == 100)
        #expect(before.buckets.count == 50, "the buckets cover the window")
        #expect(before.busyRatio < 0.05, "\(before.busyRatio) \(before.reading)")
        #expect(before.reading.hasPrefix("idle before onset"), "\(before.reading)")
        // The hang's own piece is not in its lead-up.
        #expect(before.buckets.allSatisfy { $0.longestMs < 100 }, "\(before.buckets)")
        let kind = try #require(report.kind)
        #expect(kind.name == "unknown", "\(kind)")
        #expect(kind.iterationsBefore == 0, "\(kind)")
    }

    /// A loop kept busy by a repeating timer that works 13 ms (each firing its own iteration: the
    /// loop sleeps between them; swift-corelibs-foundation schedules the next firing an interval,
    /// 2 ms, after the callback returns: with an interval of 15 ms the firings came 26 ms apart)
    /// for 2.5 s, then one 400 ms job: the lead-up reads busy. Measured on 2 CPUs beside other
    /// builds: busyRatio 0.92 to 1.0 (the 2 ms sleeps, shorter than the coarse clock's 4 ms tick,
    /// often read as none), 121 to 139 iterations in the 2 s window.
    @Test func aLoopKeptBusyByShortIterationsReadsBusyBeforeTheJob() throws {
        let (firings, _, report) = try Self.hangAfterRepeatedWork(window: .seconds(2), interval: 0.002, for: 2_500) {
            _ = spinInTestHang(milliseconds: 13)
        }
        #expect(report.heaviestStackContains("hangInTimerCallback"), "\(report.heaviestSymbols)")
        let before = try #require(report.before)
        #expect(before.buckets.count == 20)
        #expect(before.busyRatio > 0.6, "\(before.busyRatio) \(before.reading)")
        #expect(before.reading.hasPrefix("busy "), "\(before.reading)")
        // Each firing began an iteration of its own; none of them came near the threshold.
        let iterations = before.buckets.reduce(0) { $0 + $1.iterations }
        #expect(iterations >= 60, "\(iterations) iterations in the window, \(firings) firings")
        #expect(before.buckets.allSatisfy { $0.longestMs < 100 }, "\(before.buckets)")
        let kind = try #require(report.kind)
        #expect(kind.name == "unknown" || kind.name == "mixed", "\(kind)")
        print("lead-up measured: busyRatio \(before.busyRatio), \(before.reading), \(iterations) iterations, kind \(kind.name)")
    }

    /// A loop kept about 90 % busy by 150 ms pieces under a 200 ms threshold for 3 s, then one
    /// 400 ms job: the lead-up reads the saturation, and every 150 ms piece in the window is a near
    /// miss sampled half-way, its stack in the near miss's function, not the hang's.
    @Test func aLoopSaturatedWithNearMissesKeepsTheirStacks() throws {
        // Fires again 15 ms after each callback returns: 150 of every 165 ms busy.
        let (firings, sampled, report) = try Self.hangAfterRepeatedWork(window: .seconds(3), interval: 0.015, for: 3_200) {
            _ = nearMissInTimerCallback(milliseconds: 150)
        }
        #expect(report.heaviestStackContains("hangInTimerCallback"), "\(report.heaviestSymbols)")
        let before = try #require(report.before)
        #expect(before.busyRatio > 0.75, "\(before.busyRatio) \(before.reading)")
        let misses = try #require(before.nearMisses, "\(before.reading)")
        // 3 s of 165 ms firings: 18; the scheduler may merge or stretch a few.
        #expect(misses.count >= 14 && misses.count <= 20, "\(misses.count) near misses, \(firings) firings")
        var withStacks = 0
        for miss in misses {
            #expect(miss.offsetMs < 0 && miss.offsetMs >= -3_100, "\(miss)")
            #expect(miss.atLeastMs >= 100 && miss.atLeastMs < 200, "\(miss)")
            guard let stack = miss.stack else { continue }
            withStacks += 1
            let symbols = report.stacks[stack].frames.map { report.frames[$0].symbol ?? "" }
            #expect(symbols.contains { $0.contains("nearMissInTimerCallback") }, "\(symbols)")
            #expect(!symbols.contains { $0.contains("hangInTimerCallback") }, "\(symbols)")
        }
        #expect(withStacks >= misses.count - 2, "\(misses.map { $0.error ?? "ok" })")
        let named = try #require(before.nearMissesIn)
        #expect(named.contains("spinInTestHang") || named.contains("nearMissInTimerCallback"), "\(named)")
        #expect(before.reading.contains("near misses in `\(named)`"), "\(before.reading)")
        #expect(sampled >= misses.count)
        print("near misses measured: \(misses.count) in the window, \(before.reading)")
    }

    /// A monitored loop (threshold 200 ms, a lead-up of `window`) whose repeating timer (`interval`
    /// after each callback returns) does `work` for `milliseconds`, then hangs 400 ms in
    /// `hangInTimerCallback`: the firings that did `work`, the near misses the monitor sampled, and
    /// the hang's report.
    static func hangAfterRepeatedWork(
        window: Duration, interval: TimeInterval, for milliseconds: UInt64, _ work: @escaping @Sendable () -> Void
    ) throws -> (firings: Int, nearMisses: Int, report: HangReport) {
        let (directory, loop, monitor) = try startMonitoredLoop(threshold: .milliseconds(200)) { $0.leadUpWindow = window }
        defer { loop.stop() }
        let start = DispatchTime.now().uptimeNanoseconds
        let firings = Atomic<Int>(0)
        loop.perform {
            let timer = Timer(fire: Date(timeIntervalSinceNow: 0.015), interval: interval, repeats: true) { timer in
                if DispatchTime.now().uptimeNanoseconds - start < milliseconds * 1_000_000 {
                    firings.add(1, ordering: .relaxed)
                    work()
                } else {
                    timer.invalidate()
                    _ = hangInTimerCallback(milliseconds: 400)
                }
            }
            RunLoop.current.add(timer, forMode: .default)
        }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        return (firings.load(ordering: .relaxed), monitor.statistics.nearMisses, try #require(reports.first))
    }
}
