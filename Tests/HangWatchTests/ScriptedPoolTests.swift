import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

/// The pool watch as a monitor runs it, on scripted time: made by the monitor's start from the
/// world's pool (`MonitorWorld.Pool`, here scripted: the probes start when the script says, the
/// pool's threads are scripted), a lane of the runtime's watchdog, its reports through the
/// monitor's own directory. Threshold 250 ms; times in milliseconds from the script's start.
@Suite struct ScriptedPoolTests {
    /// The scripted pool: probe `n` starts `delays[n]` ms after it is enqueued (else 0.04 ms).
    final class Pool: @unchecked Sendable {
        var delays: [Int: Double] = [:]
        private(set) var enqueued: [UInt64] = []
        var clock: ScriptedClock?

        func enqueue(_ slot: PoolProbeSlot) {
            guard let clock else { return }
            let delay = delays[enqueued.count] ?? 0.04
            enqueued.append(clock.now)
            clock.after(UInt64(delay * 1000)) { [clock] in slot.markStarted(at: clock.now) }
        }
    }

    /// Two pool threads the probe jobs attached, blocked in `futex`.
    final class Threads: PoolThreadCapturing, @unchecked Sendable {
        let clock: ScriptedClock
        init(clock: ScriptedClock) { self.clock = clock }
        func anyWorkerExists() -> Bool { true }
        func capture(skipping: Set<Int32>, signalAllowed: Bool) -> [PoolThreadSample] {
            [Int32(201), 202].filter { !skipping.contains($0) }.map { tid in
                var sample = ScriptedSampler.blocked([0x2010, 0x1020, 0x1030], syscall: 202)
                sample.microseconds = clock.now
                return PoolThreadSample(tid: tid, name: "oot.default-qos", sample: sample, attached: true)
            }
        }
    }

    static func harness(_ pool: Pool) -> WatchdogHarness {
        let clock = ScriptedClock()
        let threads = Threads(clock: clock)
        pool.clock = clock
        return WatchdogHarness(
            pool: MonitorWorld.Pool(
                enqueue: { pool.enqueue($0) }, attach: nil, attachEveryWorker: nil, threads: threads, looker: nil, wakeSource: nil),
            scriptedClock: clock)
    }

    /// A probe that waits 900 ms is one starvation: one `concurrency-pool` report in the monitor's
    /// directory, holding both pool threads (blocked), its duration the probe's wait, detected a threshold in.
    @Test func aStarvedPoolIsOneReportInTheMonitorsDirectory() throws {
        let pool = Pool()
        pool.delays = [1: 900]
        let h = Self.harness(pool)
        h.stop(at: 3_000)
        h.run()

        let reports = h.directory.reports()
        let report = try #require(reports.first { $0.source == "concurrency-pool" }, "\(reports.map(\.source))")
        #expect(reports.count == 1)
        #expect(report.outcome == .recovered)
        #expect(Set((report.threads ?? []).map(\.tid)) == [201, 202])
        #expect(abs(report.durationMs - 900) < 1, "\(report.durationMs)")
        #expect(h.statistics.reportsWritten.load(ordering: .relaxed) == 1)
        // One probe a threshold; the starved one was the second (at 250 ms).
        #expect(pool.enqueued.prefix(2).map(h.ms) == [0, 250], "\(pool.enqueued.map(h.ms))")
    }
}
