import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

/// One watchdog thread for several loops (a SwiftNIO group's), driven by scripted time: each loop
/// is a lane of the same `Watchdog`, with the same decisions, at the same times, as a loop with a
/// watchdog of its own. Times are milliseconds from the script's start (threshold 250 ms, clock
/// resolution 4 ms, a sample every 50 ms: a stretch that starts at 100 is detected at 354).
@Suite struct WatchdogLanesTests {
    func near(_ value: Double, _ expected: Double) -> Bool { abs(value - expected) < 0.002 }

    func sampleTimes(_ hang: HangRecording, _ h: WatchdogHarness) -> [Double] { hang.samples.map { h.ms($0.microseconds) } }

    @Test func aHangRecordedOnOneLoopDoesNotDelayDetectingOneOnAnother() throws {
        let a = WatchdogHarness()
        let b = WatchdogHarness(joining: a)
        a.sampler.next = { _, _ in ScriptedSampler.computing([0xA010, 0xA020]) }
        b.sampler.next = { _, _ in ScriptedSampler.blocked([0xB010, 0xB020]) }
        a.busy(from: 100, for: 700)
        // Begins while the first is recorded, ends before it.
        b.busy(from: 200, for: 400)
        WatchdogHarness.run(together: [a, b])

        try #require(a.hangs.count == 1 && b.hangs.count == 1)
        let first = a.hangs[0].recording
        #expect(near(a.ms(first.startMicroseconds), 100) && near(a.ms(first.detectedMicroseconds), 354))
        #expect(near(a.ms(try #require(first.endMicroseconds)), 800))
        #expect(zip(sampleTimes(first, a), stride(from: 354.0, through: 754, by: 50)).allSatisfy { near($0, $1) } && first.samples.count == 9,
                "\(sampleTimes(first, a))")
        let second = b.hangs[0].recording
        #expect(near(b.ms(second.startMicroseconds), 200) && near(b.ms(second.detectedMicroseconds), 454), "\(b.ms(second.detectedMicroseconds))")
        #expect(near(b.ms(try #require(second.endMicroseconds)), 600))
        #expect(zip(sampleTimes(second, b), [454.0, 504, 554]).allSatisfy { near($0, $1) } && second.samples.count == 3,
                "\(sampleTimes(second, b))")
        // Each loop's hang has its own stacks, id and outcome.
        #expect(first.samples.allSatisfy { $0.frames.first == 0xA010 })
        #expect(second.samples.allSatisfy { $0.frames.first == 0xB010 })
        #expect(first.id != second.id)
        #expect(a.hangs[0].outcome == .recovered && b.hangs[0].outcome == .recovered)
        #expect(a.statistics.hangsDetected.load(ordering: .relaxed) == 1 && b.statistics.hangsDetected.load(ordering: .relaxed) == 1)
    }

    @Test func aLoopStoppedDuringItsHangLeavesTheOthersWatched() throws {
        let a = WatchdogHarness()
        let b = WatchdogHarness(joining: a)
        a.loop(.afterWaiting, at: 100)
        a.stop(at: 600)
        b.busy(from: 1000, for: 400)
        b.busy(from: 2000, for: 100)
        WatchdogHarness.run(together: [a, b])

        try #require(a.hangs.count == 1)
        #expect(a.hangs[0].outcome == .monitorStopped)
        #expect(near(a.ms(try #require(a.hangs[0].recording.endMicroseconds)), 600))
        #expect(a.hangs[0].recording.samples.count == 5)  // 354, 404, ... 554
        try #require(b.hangs.count == 1)
        #expect(b.hangs[0].outcome == .recovered)
        #expect(near(b.ms(b.hangs[0].recording.detectedMicroseconds), 1254))
        #expect(near(b.ms(try #require(b.hangs[0].recording.endMicroseconds)), 1400))
        // The stopped loop's stretch after the stop is not looked at again (the two looks: its
        // near miss half-way, its hang).
        #expect(a.source.confirmations == 2)
    }

    @Test func idleLoopsCostTheWatchdogNoWakeUps() {
        let a = WatchdogHarness()
        let b = WatchdogHarness(joining: a)
        let c = WatchdogHarness(joining: a)
        // Short stretches on each loop in turn, then ten seconds with every loop asleep.
        var time = 100.0
        for index in 0..<12 {
            [a, b, c][index % 3].busy(from: time, for: 200)
            time += 210
        }
        a.clock.at(a.t(time + 10_000)) {}
        WatchdogHarness.run(together: [a, b, c])

        #expect(a.sink.events.isEmpty && b.sink.events.isEmpty && c.sink.events.isEmpty)
        // Per stretch: one park until it began, one wait until half the threshold (200 ms is a
        // near miss: looked at once), one until its deadline; every loop asleep, the watchdog
        // waits without a deadline.
        #expect(a.clock.waits.count <= 3 * 12 + 2, "\(a.clock.waits.count) waits")
        #expect(a.clock.waits.last?.deadline == nil)
        #expect(a.source.confirmations + b.source.confirmations + c.source.confirmations == 12)
    }

    @Test func aThresholdChangedOnOneLoopMovesOnlyThatLoopsDeadline() throws {
        let a = WatchdogHarness()
        let b = WatchdogHarness(joining: a)
        a.busy(from: 100, for: 240)
        b.busy(from: 100, for: 240)
        a.control(at: 150) { $0.thresholdMicroseconds.store(100_000, ordering: .relaxed) }
        WatchdogHarness.run(together: [a, b])

        try #require(a.hangs.count == 1)
        #expect(near(a.ms(a.hangs[0].recording.detectedMicroseconds), 204))
        #expect(b.hangs.isEmpty)
    }
}
