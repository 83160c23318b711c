import Foundation
@testable import HangWatch
import HangWatchTestSupport
import Synchronization
import Testing

/// One timer: a queue's pings and the pool watch are lanes of the watchdog, beside the loops' hang
/// lanes, on one thread and one wake. On scripted time, each lane keeps the cadence and the
/// decisions it has alone, and a wake-up meant for one lane does not step another early.
/// Threshold 250 ms, sampling every 50 ms; times in milliseconds from the script's start.
@Suite struct TimedLanesTests {
    func near(_ value: Double, _ expected: Double) -> Bool { abs(value - expected) < 0.002 }

    @Test func thePoolWatchAndALoopShareOneWatchdogWithoutDelayingEachOther() throws {
        let loop = WatchdogHarness()
        let pool = PoolWatchTests.Harness(clock: loop.clock, wake: loop.latch.wake)
        pool.delays[2] = 700  // the probe enqueued at 500 starts at 1,200: a starvation
        loop.busy(from: 100, for: 700)  // a hang while the pool watch probes
        loop.stop(at: 2_010)
        loop.clock.at(loop.t(2_010)) { [watch = pool.watch!] in watch.requestStop() }
        loop.run(with: [pool.watch])

        // The loop's hang: the same times as with a watchdog of its own.
        try #require(loop.hangs.count == 1)
        let hang = loop.hangs[0].recording
        #expect(near(loop.ms(hang.startMicroseconds), 100) && near(loop.ms(hang.detectedMicroseconds), 354))
        #expect(near(loop.ms(try #require(hang.endMicroseconds)), 800))
        #expect(hang.samples.count == 9)
        // The pool's starvation and probes: the same as the pool watch alone
        // (`PoolWatchTests.aProbeThatWaitsPastTheThresholdIsOneStarvationEndingWhenItStarts`).
        #expect(pool.sink.events == ["starved", "recovered"])
        let starvation = try #require(pool.sink.recovered.first?.recording)
        #expect(pool.ms(starvation.startMicroseconds) == 500 && pool.ms(starvation.detectedMicroseconds) == 750)
        #expect(pool.ms(try #require(starvation.endMicroseconds)) == 1_200)
        #expect(pool.enqueued.map(pool.ms).prefix(6) == [0, 250, 500, 1_200, 1_450, 1_700])
    }

    @Test func aRestingPoolWatchSleepsThroughAnotherLanesWakeUps() {
        let loop = WatchdogHarness()
        let (pool, looker, hooks) = PoolWatchRestTests().harness(clock: loop.clock, wake: loop.latch.wake, job: { _ in nil })
        // The loop's short stretches each wake the watchdog from its park (idle-to-busy edges).
        for start in stride(from: 1_500.0, through: 2_700, by: 300) { loop.busy(from: start, for: 20) }
        loop.stop(at: 3_000)
        loop.clock.at(loop.t(3_000)) { [watch = pool.watch!] in watch.requestStop() }
        let wakesBefore = loop.clock.waits.count
        loop.run(with: [pool.watch])

        // At rest from 1,300 ms (as alone: `PoolWatchRestTests`), and still at rest after five
        // wake-ups of the watchdog: no look, no probe, the hooks armed once.
        #expect(hooks.arms.map(pool.ms) == [1_250])
        #expect(pool.histogram.snapshot.rests == 1)
        let looks = looker.looks.map(pool.ms)
        #expect(!looks.contains { $0 > 1_300 }, "\(looks)")
        #expect(!pool.enqueued.map(pool.ms).contains { $0 > 1_250 })
        #expect(loop.hangs.isEmpty)
        // The wake-ups happened: at least one wait ended at each stretch's start.
        let ends = loop.clock.waits.dropFirst(wakesBefore).map { loop.ms($0.at) }
        #expect(stride(from: 1_500.0, through: 2_700, by: 300).allSatisfy { start in ends.contains { near($0, start) } }, "\(ends)")
    }

    /// A queue whose pings the script runs 10 ms after they are enqueued, but the one enqueued at
    /// 300 ms only at 550 ms.
    final class ScriptedQueue: @unchecked Sendable {
        let clock = ScriptedClock()
        lazy var environment = FakeWatchdogEnvironment(clock: clock)
        let latch = ActivityLatch(busyActivities: [.afterWaiting])
        private(set) var enqueued: [Double] = []
        var origin: UInt64 { 1_000_000_000 }
        func ms(_ microseconds: UInt64) -> Double { Double(microseconds - origin) / 1000 }
        func t(_ milliseconds: Double) -> UInt64 { origin + UInt64(milliseconds * 1000) }

        func enqueue(_ block: @escaping @Sendable () -> Void) {
            let now = ms(clock.now)
            enqueued.append(now)
            clock.after(now == 300 ? 250_000 : 10_000, block)
        }

        var isBusy: Bool { latch.snapshot().activity == QueueActivitySource.enter }
    }

    @Test func aQueuesPingsAreALaneTickedOnTimeAndOnlyOnTime() throws {
        let queue = ScriptedQueue()
        let source = QueueActivitySource(
            kind: .dispatchQueue, periodMicroseconds: 100_000, coarseNow: { [clock = queue.clock] in clock.now * 1000 },
            enqueue: { [queue] block in queue.enqueue(block) })
        source.start(edges: queue.latch, attach: {})
        let lane = try #require(source.timerLane)
        var busyAt: [Double: Bool] = [:]
        for time in [450.0, 560] { queue.clock.at(queue.t(time)) { [queue] in busyAt[time] = queue.isBusy } }
        // A wake-up meant for another lane (a loop's edge, a control call) at 150 ms.
        queue.clock.at(queue.t(150)) { [latch = queue.latch] in latch.wake.signal() }
        queue.clock.at(queue.t(1_000)) { [latch = queue.latch] in
            source.stop()
            latch.wake.signal()
        }
        Watchdog(environment: queue.environment, wake: queue.latch.wake, lanes: [lane]).run()

        // One ping per period, the first at `start`; none while the one from 300 ms is out (it
        // declared the queue busy at 400), the next at the tick after its answer. None at 150.
        #expect(queue.enqueued == [0, 100, 200, 300, 600, 700, 800, 900], "\(queue.enqueued)")
        #expect(busyAt[450] == true && busyAt[560] == false, "\(busyAt)")
        // The lane asked to be woken at each tick, and at nothing else.
        let deadlines = queue.clock.waits.compactMap(\.deadline).map(queue.ms)
        #expect(Set(deadlines) == Set(stride(from: 100.0, through: 1_000, by: 100)), "\(deadlines)")
    }

    /// The source keeps its lane and the lane reaches its source: one of them must not keep the
    /// other, or every queue monitor started and stopped leaves both behind (about 1 KiB a cycle:
    /// `LifecycleTests` caught it at 1,124 bytes).
    @Test func aQueueSourceAndItsLaneDoNotKeepEachOtherAlive() {
        weak var weakSource: QueueActivitySource?
        weak var weakLane: AnyObject?
        do {
            let source = QueueActivitySource(kind: .dispatchQueue, periodMicroseconds: 100_000, enqueue: { _ in })
            source.start(edges: ActivityLatch(busyActivities: [.afterWaiting]), attach: {})
            weakSource = source
            weakLane = source.timerLane
            #expect(weakLane != nil)
        }
        #expect(weakSource == nil && weakLane == nil)
    }

    /// A lane that counts its steps and rests until told to finish.
    final class RestingLane: WatchdogLane, @unchecked Sendable {
        var steps = 0
        var done = false
        let finished = DispatchSemaphore(value: 0)
        func advance(_ turn: WatchdogTurn) -> WatchdogWait {
            steps += 1
            return done ? .finished : .rest(until: nil)
        }
    }

    /// A timer every 10 ms until `end`.
    final class TimerLane: WatchdogLane, @unchecked Sendable {
        var ticks: [UInt64] = []
        var next: UInt64?
        let end: UInt64
        let finished = DispatchSemaphore(value: 0)
        init(end: UInt64) { self.end = end }
        func advance(_ turn: WatchdogTurn) -> WatchdogWait {
            let now = turn.environment.now()
            if let next, now < next { return .at(next) }
            if now >= end { return .finished }
            ticks.append(now)
            next = now + 10_000
            return .at(next!)
        }
    }

    /// A wait that timed out steps only the lanes whose time came; a wake-up steps every lane.
    @Test func aTimerLaneDoesNotStepTheOtherLanesButAWakeUpDoes() {
        let clock = ScriptedClock()
        let wake = WatchdogWake()
        let resting = RestingLane()
        let timer = TimerLane(end: clock.now + 1_000_000)
        clock.at(clock.now + 500_000) { wake.signal() }  // a control call
        clock.at(clock.now + 1_000_000) {
            resting.done = true
            wake.signal()
        }
        Watchdog(environment: FakeWatchdogEnvironment(clock: clock), wake: wake, lanes: [resting, timer]).run()
        #expect(timer.ticks.count == 100)
        // The first turn, the wake-up at 500 ms, the one at 1 s: not each of the timer's 100 ticks.
        #expect(resting.steps == 3, "\(resting.steps)")
    }

    /// The watchdog keeps each lane's last answer by position, without copying, while the lanes
    /// stay the same; when one leaves or joins, each remaining lane keeps its own answer.
    @Test func eachLaneKeepsItsAnswerWhenLanesLeaveAndJoin() {
        let (a, b, c) = (RestingLane(), RestingLane(), RestingLane())
        var answered: [any WatchdogLane] = [a, b]
        var answers: [WatchdogWait?] = [.at(10), .at(20)]
        Watchdog.align(&answers, of: &answered, to: [a, b])
        #expect(answers == [.at(10), .at(20)])
        Watchdog.align(&answers, of: &answered, to: [b, c])
        #expect(answers == [.at(20), nil])
        #expect(answered.count == 2 && answered[0] === b && answered[1] === c)
    }
}
