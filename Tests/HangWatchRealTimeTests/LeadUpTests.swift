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
        // No limit on the test's cgroup: nothing throttled it, and it spun on a CPU (the
        // machine's other load may keep it waiting for some of it).
        let cpu = try #require(before.cpu, "the watchdog read the thread while the loop was busy")
        #expect(cpu.coveredMs >= 1_500 && cpu.onCpuMs >= 0.3 * cpu.coveredMs, "\(cpu)")
        #expect(cpu.throttledMs == nil && !before.reading.contains("throttled"), "\(before.reading)")
        print("lead-up measured: busyRatio \(before.busyRatio), \(before.reading), \(iterations) iterations, kind \(kind.name), \(cpu)")
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

    /// The loop's thread alone in a v1 cpu cgroup limited to 0.3 CPU, kept busy by 20 ms pieces
    /// (of wall time, 2 ms apart) for 2.5 s, then one 400 ms job: its lead-up says the thread
    /// waited for a CPU for much of its busy time and its cgroup was throttled, within the cgroup's
    /// own count over the run; on a CPU no more than the quota allows. (The watchdog is outside
    /// the cgroup: the throttled time is the loop's own, and part of its wait.)
    @Test func aLoopUnderACPUQuotaSaysItsLeadUpWaitedAndWasThrottled() throws {
        let cgroup = try TestCgroup.make(in: ContainerFaultTests.cpuHierarchy, needing: ["cpu.cfs_quota_us", "cpu.stat", "tasks"])
        defer { cgroup.remove() }
        try cgroup.write("cpu.cfs_period_us", "100000")
        try cgroup.write("cpu.cfs_quota_us", "30000")
        let counterBefore = cgroup.value("throttled_time", in: "cpu.stat") ?? 0
        let (_, _, report) = try Self.hangAfterRepeatedWork(
            window: .seconds(2), interval: 0.002, for: 2_500, prepare: { try cgroup.write("tasks", String($0.tid)) }
        ) {
            _ = spinInTestHang(milliseconds: 20)
        }
        let counter = Double((cgroup.value("throttled_time", in: "cpu.stat") ?? 0) - counterBefore) / 1e6
        guard counter > 500 else { try ControlCheck.cannotRun("the quota throttled the cgroup only \(counter) ms (CFS bandwidth control off?)") }
        let before = try #require(report.before)
        let cpu = try #require(before.cpu, "the watchdog read the thread while the loop was busy: \(before.reading)")
        #expect(cpu.coveredMs >= 1_500, "\(cpu)")
        #expect(cpu.onCpuMs <= 0.45 * cpu.coveredMs, "on a CPU at most the quota's 30 % (and slack): \(cpu)")
        #expect(cpu.runQueueMs >= 0.3 * cpu.coveredMs, "\(cpu)")
        let throttled = try #require(cpu.throttledMs, "the thread's cgroup has a limit: its throttled time is read")
        #expect(throttled >= 0.3 * cpu.coveredMs && throttled <= counter * 1.05, "\(cpu), the cgroup's counter over the run \(counter) ms")
        #expect(throttled <= 1.2 * cpu.runQueueMs + 20, "the throttled time is part of the wait: \(cpu)")
        #expect(before.reading.contains("% of it waiting for a CPU (its cgroup throttled "), "\(before.reading)")
        let covered = before.buckets.compactMap(\.cpu)
        #expect(covered.count >= 15 && covered.allSatisfy { $0.coveredMs <= 100.01 && $0.onCpuMs <= $0.coveredMs + 5 }, "\(covered)")
        print("lead-up under a 0.3-CPU quota: \(before.reading); \(cpu); the cgroup's counter over the run \(counter) ms")
    }

    /// A monitored loop (threshold 200 ms, a lead-up of `window`) whose repeating timer (`interval`
    /// after each callback returns) does `work` for `milliseconds`, then hangs 400 ms in
    /// `hangInTimerCallback`: the firings that did `work`, the near misses the monitor sampled, and
    /// the hang's report.
    static func hangAfterRepeatedWork(
        window: Duration, interval: TimeInterval, for milliseconds: UInt64, prepare: (LoopThread) throws -> Void = { _ in },
        _ work: @escaping @Sendable () -> Void
    ) throws -> (firings: Int, nearMisses: Int, report: HangReport) {
        let (directory, loop, monitor) = try startMonitoredLoop(
            threshold: .milliseconds(200), configure: { $0.leadUpWindow = window }, prepare: prepare)
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
