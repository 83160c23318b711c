import Foundation
@testable import HangWatch
@_spi(Internal) import HangWatchReport
import HangWatchTestSupport
import Testing

/// The watchdog's decisions, driven by scripted time (`WatchdogHarness`): when a busy stretch is a
/// hang, when it is not, how it is sampled, when it ends, and what a late wake-up means. Times in
/// the script and in the expectations are milliseconds from the script's start; threshold 250 ms,
/// coarse clock resolution 4 ms and sampling every 50 ms unless a test says otherwise, so a stretch
/// that starts at 100 is detected at 354.
@Suite struct WatchdogTests {
    /// Equal to within a microsecond (activity times are kept in units of 1024 ns).
    func near(_ value: Double, _ expected: Double) -> Bool { abs(value - expected) < 0.002 }

    /// A stop whose end still waits for its lanes while the monitor is started again (the worst
    /// order of a `stop()` racing a `start()`): the new start does not undo the stop, and the
    /// stopped start's lane finishes at once. (One stop flag for every start of a monitor was set
    /// back by the next start, and the stopped lane, never seeing its stop, was waited for forever.)
    @Test func aStartRightAfterAStopNeverUndoesThatStop() {
        let h = WatchdogHarness()
        h.begin()
        h.assembly.end()
        h.latch.wake.signal()
        let next = h.restart()
        try! next.begin()
        var stoppedLaneFinishedAt: Double?
        h.clock.at(h.t(100)) { [h] in
            if h.assembly.hangLane.finished.wait(timeout: .now()) == .success { stoppedLaneFinishedAt = 100 }
            // (On scripted time `end` joins no lane: the wake a join posts, posted here.)
            next.end()
            next.latch.wake.signal()
        }
        h.assembly.watchdog.run()
        #expect(stoppedLaneFinishedAt == 100, "the stopped start's lane was still running when the next start had run 100 ms")
        #expect(next.hangLane.finished.wait(timeout: .now()) == .success)
    }

    @Test func aStretchPastTheThresholdIsOneHangSampledUntilTheLoopMoves() throws {
        let h = WatchdogHarness()
        h.busy(from: 100, for: 700)
        h.run()

        try #require(h.sink.started.count == 1 && h.hangs.count == 1)
        let (hang, outcome) = h.hangs[0]
        #expect(outcome == .recovered)
        #expect(near(h.ms(hang.startMicroseconds), 100))
        #expect(near(h.ms(hang.detectedMicroseconds), 354))
        #expect(near(h.ms(try #require(hang.endMicroseconds)), 800))
        // The first sample at detection, then one per interval until the loop moved.
        let sampleTimes = hang.samples.map { h.ms($0.microseconds) }
        #expect(zip(sampleTimes, stride(from: 354.0, through: 754, by: 50)).allSatisfy { near($0, $1) }, "\(sampleTimes)")
        #expect(sampleTimes.count == 9)
        #expect(hang.activity == HangMonitor.Activity.afterWaiting.rawValue)
        #expect(hang.mode == "kCFRunLoopDefaultMode")
        #expect(hang.thresholdMicroseconds == 250_000)
        #expect(!hang.stopSuspected && hang.watchdogOversleepMicroseconds == 0)
        #expect(h.statistics.hangsDetected.load(ordering: .relaxed) == 1)
        #expect(h.sampler.signalsAllowed.allSatisfy { $0 })
    }

    @Test func aSampleBegunAfterTheLoopMovedIsNotPartOfTheHang() throws {
        let h = WatchdogHarness()
        // Busy from 100 to 790, but the edge reaches the watchdog only at 810: the sample due at
        // 804 is taken of a thread already back in its idle wait.
        h.loop(.afterWaiting, at: 100)
        h.loop(.beforeWaiting, at: 790, seenAt: 810)
        h.run()

        try #require(h.hangs.count == 1)
        let hang = h.hangs[0].recording
        #expect(near(h.ms(try #require(hang.endMicroseconds)), 790))
        let sampleTimes = hang.samples.map { h.ms($0.microseconds) }
        #expect(sampleTimes.count == 9 && sampleTimes.allSatisfy { $0 <= 790 }, "\(sampleTimes)")
    }

    @Test func stretchesUpToTheThresholdAreNotHangsAndAnIdleLoopCostsNoWakeUps() {
        let h = WatchdogHarness()
        // 20 stretches of exactly the threshold and just under it, 10 ms of sleep between them,
        // then ten seconds asleep.
        var time = 100.0
        for index in 0..<20 {
            let length = index.isMultiple(of: 2) ? 250.0 : 249.9
            h.busy(from: time, for: length, as: index.isMultiple(of: 3) ? .beforeSources : .afterWaiting)
            time += length + 10
        }
        h.clock.at(h.t(time + 10_000)) {}
        h.run()

        #expect(h.sink.events.isEmpty)
        // Per stretch: one park until it began, one wait until half the threshold (each is a near
        // miss, sampled once, its run loop confirmed busy), one until its deadline. Asleep, the
        // watchdog waits without a deadline: it does not poll.
        #expect(h.clock.waits.count <= 3 * 20 + 2, "\(h.clock.waits.count) waits")
        #expect(h.clock.waits.filter { $0.deadline == nil }.count >= 20)
        #expect(h.source.confirmations == 20)
        #expect(h.statistics.nearMisses.load(ordering: .relaxed) == 20)
    }

    /// Without a flight recorder (`leadUpWindow` 0) nothing is looked for at half the threshold:
    /// one wait per stretch until its deadline, no sample, no confirmation.
    @Test func withoutARecorderNoNearMissIsSampled() {
        let h = WatchdogHarness(configure: { $0.leadUpWindow = .zero })
        var time = 100.0
        for _ in 0..<20 {
            h.busy(from: time, for: 249.9)
            time += 259.9
        }
        h.clock.at(h.t(time + 10_000)) {}
        h.run()
        #expect(h.sink.events.isEmpty)
        #expect(h.clock.waits.count <= 2 * 20 + 2, "\(h.clock.waits.count) waits")
        #expect(h.source.confirmations == 0)
        #expect(h.statistics.nearMisses.load(ordering: .relaxed) == 0)
    }

    @Test func aStretchLongerThanThresholdAndClockResolutionIsAHang() throws {
        let h = WatchdogHarness()
        h.busy(from: 100, for: 254.5)
        h.run()
        let hang = try #require(h.hangs.first?.recording)
        #expect(near(h.ms(hang.detectedMicroseconds), 354))
        #expect(near(h.ms(try #require(hang.endMicroseconds)), 354.5))
    }

    @Test func activitiesThatAreNotBusyAreNeverHangs() {
        // Only afterWaiting counts as busy here: a loop stuck after beforeSources is not watched.
        let h = WatchdogHarness(busy: [.afterWaiting])
        h.loop(.beforeSources, at: 100)
        h.loop(.beforeWaiting, at: 2_000)
        h.run()
        #expect(h.sink.events.isEmpty)
    }

    @Test func pausedDetectionIgnoresAStretchAndCountsAgainFromTheResume() throws {
        let h = WatchdogHarness()
        h.control(at: 0) { $0.pause() }
        h.control(at: 50) { $0.pause() }  // nested
        h.busy(from: 100, for: 3_000)
        h.control(at: 1_000) { control in #expect(!control.resume(now: h.t(1_000))) }
        h.control(at: 3_000) { control in #expect(control.resume(now: h.t(3_000))) }
        // Resumed 100 ms before the stretch ended: not a hang. The next stretch, paused for a
        // moment at its start, counts from that resume.
        h.busy(from: 4_000, for: 1_000)
        h.control(at: 4_000) { $0.pause() }
        h.control(at: 4_200) { control in _ = control.resume(now: h.t(4_200)) }
        h.run()

        try #require(h.hangs.count == 1)
        let hang = h.hangs[0].recording
        #expect(near(h.ms(hang.startMicroseconds), 4_200))
        #expect(near(h.ms(hang.detectedMicroseconds), 4_454))
        #expect(near(h.ms(try #require(hang.endMicroseconds)), 5_000))
    }

    @Test func aThresholdChangedDuringAStretchMovesItsDeadline() throws {
        let h = WatchdogHarness()
        // Raised before the deadline: the 400 ms stretch is no longer a hang.
        h.busy(from: 100, for: 400)
        h.control(at: 200) { $0.thresholdMicroseconds.store(1_000_000, ordering: .relaxed) }
        // Lowered in the middle of a stretch already past the new threshold: a hang at once,
        // from the stretch's start.
        h.busy(from: 1_000, for: 600)
        h.control(at: 1_300) { $0.thresholdMicroseconds.store(100_000, ordering: .relaxed) }
        h.run()

        try #require(h.hangs.count == 1)
        let hang = h.hangs[0].recording
        #expect(near(h.ms(hang.startMicroseconds), 1_000))
        #expect(near(h.ms(hang.detectedMicroseconds), 1_300))
        #expect(hang.thresholdMicroseconds == 100_000)
    }

    @Test func busyTimeDuringTheGracePeriodDoesNotCount() throws {
        // The start-up grace period, as `begin` sets it from the configuration: busy time counts from 1 s.
        let h = WatchdogHarness(configure: { $0.startupGracePeriod = .seconds(1) })
        h.busy(from: 0, for: 1_200)  // 200 ms after the grace period
        h.busy(from: 2_000, for: 400)
        h.run()
        try #require(h.hangs.count == 1)
        #expect(near(h.ms(h.hangs[0].recording.startMicroseconds), 2_000))
    }

    @Test func aStretchTheSourceDoesNotConfirmWaitsForTheLoopsNextActivity() throws {
        let h = WatchdogHarness()
        var answers: [BusyConfirmation] = [.idle, .busy(context: "custom"), .busy(context: "custom")]
        h.source.confirmation = { answers.isEmpty ? .busy(context: "extra") : answers.removeFirst() }
        // The source says the loop was asleep in a mode it did not observe (asked at the near
        // miss, half-way): the watchdog parks; the loop's next activity is a fresh stretch, asked
        // at its near miss and at its hang.
        h.loop(.afterWaiting, at: 100)
        h.loop(.beforeSources, at: 2_000)
        h.loop(.beforeWaiting, at: 2_500)
        h.run()

        #expect(h.source.confirmations == 3)
        #expect(h.statistics.nearMisses.load(ordering: .relaxed) == 1, "the first stretch was no near miss")
        try #require(h.hangs.count == 1)
        let hang = h.hangs[0].recording
        #expect(near(h.ms(hang.startMicroseconds), 2_000))
        #expect(hang.mode == "custom")
        #expect(hang.activity == HangMonitor.Activity.beforeSources.rawValue)
        // Between the two, the watchdog did not poll.
        #expect(!h.clock.waits.contains { h.ms($0.at) > 400 && h.ms($0.at) < 2_000 && $0.deadline != nil })
    }

    @Test func eachStretchIsAHangOfItsOwnWithItsOwnID() throws {
        let h = WatchdogHarness()
        h.busy(from: 100, for: 500)
        h.busy(from: 700, for: 500)
        h.run()
        try #require(h.hangs.count == 2)
        #expect(h.hangs[0].recording.id != h.hangs[1].recording.id)
        #expect(h.hangs.allSatisfy { $0.recording.id.contains("-scripted-\(getpid())-") })
        #expect(near(h.ms(h.hangs[1].recording.startMicroseconds), 700))
    }

    @Test func stoppingDuringAHangEndsItAsMonitorStopped() throws {
        let h = WatchdogHarness()
        h.loop(.afterWaiting, at: 100)
        h.stop(at: 600)
        h.run()
        try #require(h.hangs.count == 1)
        let (hang, outcome) = h.hangs[0]
        #expect(outcome == .monitorStopped)
        #expect(near(h.ms(try #require(hang.endMicroseconds)), 600))
        #expect(hang.samples.count == 5)  // 354, 404, ... 554
    }

    @Test func samplingBacksOffSoThatAnyHangFitsInMaxSamples() throws {
        let h = WatchdogHarness(maxSamples: 8)
        h.busy(from: 100, for: 20_000)
        h.run()
        let hang = try #require(h.hangs.first?.recording)
        #expect(hang.samples.count <= 8 && hang.samples.count >= 4)
        #expect(hang.samplesDropped > 0)
        // Covered from detection to the end, evenly.
        #expect(near(h.ms(hang.samples[0].microseconds), 354))
        let gaps = zip(hang.samples.dropFirst(), hang.samples).map { $0.microseconds - $1.microseconds }
        #expect(Set(gaps).count == 1, "\(gaps)")
        #expect(gaps.first == hang.sampleIntervalMicroseconds)
        #expect(hang.sampleIntervalMicroseconds > 50_000 && (hang.sampleIntervalMicroseconds / 50_000).nonzeroBitCount == 1)
        #expect(try #require(hang.endMicroseconds) - hang.samples.last!.microseconds <= hang.sampleIntervalMicroseconds)
        // The sampler was asked no more than the schedule needs (no busy polling).
        #expect(h.sampler.taken.count < 40)
    }

    @Test func aLongHangsProvisionalReportIsRewrittenAsSamplesDoubleAndEveryThirtySeconds() throws {
        let h = WatchdogHarness(sampleIntervalMilliseconds: 1_000, maxSamples: 1_000)
        h.busy(from: 100, for: 200_000)
        h.run()
        let counts = h.sink.progressed.map(\.samples.count)
        #expect(Array(counts.prefix(5)) == [2, 4, 8, 16, 32])
        let times = [h.hangs[0].recording.detectedMicroseconds] + h.sink.progressed.map { $0.samples.last!.microseconds }
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 <= Watchdog.provisionalRefreshMicroseconds }, "\(gaps)")
        #expect(counts.count >= 200_000_000 / Watchdog.provisionalRefreshMicroseconds)
    }

    @Test func aThreadThatExitsEndsTheHangAtItsLastSample() throws {
        let h = WatchdogHarness()
        h.sampler.next = { _, previous in
            // The near miss's sample half-way, the hang's first; then the thread is gone.
            h.sampler.taken.count < 3 ? ScriptedSampler.computing() : ScriptedSampler.failed(.threadExited)
        }
        h.loop(.afterWaiting, at: 100)
        h.loop(.beforeSources, at: 2_000)  // another thread takes over the loop
        h.loop(.beforeWaiting, at: 2_100)
        h.run()
        // One hang: the stretch the thread left behind is not found again and again.
        try #require(h.hangs.count == 1)
        let hang = h.hangs[0].recording
        #expect(hang.samples.count == 3)
        #expect(near(h.ms(try #require(hang.endMicroseconds)), 454))
        #expect(h.statistics.captureFailures.load(ordering: .relaxed) == 1)
    }

    @Test func aHangBeforeTheThreadAttachedIsRecordedAsSuch() throws {
        let h = WatchdogHarness()
        h.thread = nil
        h.busy(from: 100, for: 400)
        h.run()
        let hang = try #require(h.hangs.first?.recording)
        #expect(hang.samples.allSatisfy { $0.failure == .threadNotAttached })
        #expect(h.sampler.taken.isEmpty)
    }

    @Test func underADebuggerNoSampleSignalsTheThread() throws {
        let h = WatchdogHarness()
        h.environment.snapshot.tracerPID = 4321
        h.busy(from: 100, for: 400)
        h.run()
        #expect(h.hangs.count == 1)
        #expect(!h.sampler.signalsAllowed.isEmpty && h.sampler.signalsAllowed.allSatisfy { !$0 })
    }

    // MARK: Late wake-ups: a stopped or starved process

    /// The watchdog's own counters: starved, its lateness shows as time on a run queue; stopped, not.
    func ownCounters(_ h: WatchdogHarness, starved: Bool) -> () -> ProcTask.SchedStat? {
        { ProcTask.SchedStat(onCPUNanoseconds: 0, runQueueNanoseconds: starved ? h.clock.stalledMicroseconds * 1000 : 0) }
    }

    @Test func aProcessStoppedBeforeTheDeadlineGivesTheLoopTimeToCatchUp() {
        let h = WatchdogHarness()
        h.environment.ownCounters = ownCounters(h, starved: false)
        // SIGSTOP at 200 for two seconds; the loop finishes its 150 ms of work right after.
        h.loop(.afterWaiting, at: 100)
        h.clock.stall(at: h.t(200), for: 2_000_000)
        h.loop(.beforeWaiting, at: 2_250)
        h.run()
        #expect(h.sink.events.isEmpty)
    }

    @Test(arguments: [false, true])
    func aHangThatOutlastsAStopIsFlaggedStoppedOnlyWhenTheWatchdogWasNotQueued(starved: Bool) throws {
        let h = WatchdogHarness()
        h.environment.ownCounters = ownCounters(h, starved: starved)
        h.busy(from: 100, for: 5_000)
        h.clock.stall(at: h.t(200), for: 2_000_000)
        h.run()
        try #require(h.hangs.count == 1)
        let hang = h.hangs[0].recording
        #expect(near(h.ms(hang.startMicroseconds), 100))
        #expect(near(Double(hang.watchdogOversleepMicroseconds) / 1000, 2_200 - 354))
        // Stopped: confirmed after a further 100 ms in which the loop did not move. Starved: the
        // loop really was busy all along, recorded at once.
        #expect(near(h.ms(hang.detectedMicroseconds), starved ? 2_200 : 2_300))
        #expect(hang.stopSuspected == !starved)
    }

    /// A real hang the watchdog wakes late for, for want of a CPU (a busy machine), and that ends
    /// soon after: reported, from its true start to its true end. (With a second look first, as
    /// for a stop, a 160 ms hang past a 100 ms threshold ended during the look and was lost: two
    /// of forty in the stack corpus's run beside a busy CPU.)
    @Test func aHangAStarvedWatchdogWakesLateForIsReportedEvenWhenItEndsSoonAfter() throws {
        let h = WatchdogHarness(thresholdMilliseconds: 100)
        h.environment.ownCounters = ownCounters(h, starved: true)
        h.busy(from: 100, for: 160)
        // The deadline is 100 + 100 + 4 (the coarse clock) ms; the watchdog runs 30 ms late.
        h.clock.stall(at: h.t(203), for: 30_000)
        h.run()
        try #require(h.hangs.count == 1, "the hang was lost")
        let hang = h.hangs[0].recording
        #expect(near(h.ms(hang.startMicroseconds), 100))
        #expect(near(h.ms(hang.endMicroseconds ?? 0), 260))
        #expect(!hang.stopSuspected)
        #expect(hang.watchdogOversleepMicroseconds >= 25_000)
    }

    /// The watchdog's own turn runs past the hang lane's deadline (another lane's step, or the
    /// thread taken off its CPU before it read its counters for the wait), and the wait then
    /// returns at once: that lateness is not the wait's, and no stop. The hang, still on, is
    /// recorded at once, not given a second look it would end in and be lost (a clean-clone run
    /// beside a busy CPU lost a 500 ms hang past a 250 ms threshold so, once).
    @Test func aTurnThatRunsPastTheDeadlineIsNoStopAndTheHangIsReported() throws {
        let h = WatchdogHarness(thresholdMilliseconds: 100)
        h.environment.ownCounters = ownCounters(h, starved: false)
        h.busy(from: 100, for: 160)
        // The turn the loop's edge at 100 ms wakes: 150 ms in a lane stepped after the hang lane,
        // past its deadline (100 + 100 + 4 ms).
        let slow = SlowTurnLane(clock: h.clock, at: h.t(100), spending: 150_000, end: h.t(1_000))
        h.stop(at: 1_000)
        h.run(with: [slow])
        #expect(slow.spent)
        try #require(h.hangs.count == 1, "the hang was lost")
        let hang = h.hangs[0].recording
        #expect(!hang.stopSuspected)
        #expect(near(h.ms(hang.startMicroseconds), 100) && near(h.ms(hang.detectedMicroseconds), 250))
        #expect(near(h.ms(hang.endMicroseconds ?? 0), 260))
    }

    /// A lane whose step at `at` takes `spending` microseconds of the watchdog's time, once.
    final class SlowTurnLane: WatchdogLane, @unchecked Sendable {
        let clock: ScriptedClock
        let at: UInt64
        let spending: UInt64
        let end: UInt64
        var spent = false
        let finished = DispatchSemaphore(value: 0)
        init(clock: ScriptedClock, at: UInt64, spending: UInt64, end: UInt64) {
            (self.clock, self.at, self.spending, self.end) = (clock, at, spending, end)
        }
        func advance(_ turn: WatchdogTurn) -> WatchdogWait {
            let now = turn.environment.now()
            if !spent, now >= at {
                spent = true
                clock.spend(spending)
            }
            return now >= end ? .finished : .at(spent ? end : at)
        }
    }

    /// The loop moves on while a sample is taken (a watchdog taken off its CPU between its look at
    /// the latch and the capture, on a busy machine): that sample's stack, the loop asleep in its
    /// own wait, is not the hang's and is not kept; the samples before it are.
    @Test func aSampleTakenAsTheLoopMovedOnKeepsNoStack() throws {
        let h = WatchdogHarness()
        h.busy(from: 100, for: 10_000)
        let loopsWait: [UInt] = [0x9010, 0x9020]
        h.sampler.next = { [h] now, _ in
            guard now >= h.t(450) else { return ScriptedSampler.computing() }
            // The loop finished its work 2 ms after this capture began and went to sleep, and
            // the capture read its stack after that: begun before the end, it is not dropped as
            // a sample begun after the end is.
            h.latch.record(HangMonitor.Activity.beforeWaiting.rawValue, atMicroseconds: now + 2_000)
            return ScriptedSampler.blocked(loopsWait)
        }
        h.stop(at: 11_000)
        h.run()
        let hang = try #require(h.hangs.first?.recording)
        #expect(hang.samples.count == 2 && hang.samples.allSatisfy { $0.frames == [0x1010, 0x1020, 0x1030] }, "\(hang.samples.map { ($0.microseconds, $0.frames, $0.failure) })")
        #expect(!hang.samples.contains { $0.frames == loopsWait })
        #expect(h.hangs.count == 1 && h.hangs[0].outcome == .recovered)
        #expect(h.statistics.captureFailures.load(ordering: .relaxed) == 0, "a sample left out is no failed capture")
    }

    /// When that happens at the hang's first sample, the sample stays, without its stack, and says why.
    @Test func aFirstSampleTakenAsTheLoopMovedOnSaysSo() throws {
        let h = WatchdogHarness()
        h.busy(from: 100, for: 10_000)
        let detection = h.t(100 + 250)
        h.sampler.next = { [h] now, _ in
            // The near miss's sample, half-way, leaves the loop where it is.
            guard now >= detection else { return ScriptedSampler.computing() }
            h.latch.record(HangMonitor.Activity.beforeWaiting.rawValue, atMicroseconds: now + 2_000)
            return ScriptedSampler.blocked([0x9010, 0x9020])
        }
        h.stop(at: 11_000)
        h.run()
        let hang = try #require(h.hangs.first?.recording)
        #expect(hang.samples.count == 1 && hang.samples[0].failure == .endedDuringCapture && hang.samples[0].frames.isEmpty)
    }

    /// The same lateness from a stop: the loop catching up within the second look is no hang.
    @Test func aHangAStoppedWatchdogWakesLateForIsNotReportedWhenTheLoopCatchesUp() {
        let h = WatchdogHarness(thresholdMilliseconds: 100)
        h.environment.ownCounters = ownCounters(h, starved: false)
        h.busy(from: 100, for: 160)
        h.clock.stall(at: h.t(203), for: 30_000)
        h.run()
        #expect(h.hangs.isEmpty)
    }

    @Test(arguments: [false, true])
    func aStopWhileSamplingIsFlaggedOnlyWhenTheWatchdogWasNotQueued(starved: Bool) throws {
        let h = WatchdogHarness()
        h.environment.ownCounters = ownCounters(h, starved: starved)
        h.busy(from: 100, for: 5_000)
        h.clock.stall(at: h.t(1_000), for: 1_000_000)
        h.run()
        let hang = try #require(h.hangs.first?.recording)
        #expect(hang.watchdogOversleepMicroseconds == 0)
        #expect(hang.stopSuspected == !starved)
        // No sample falls inside the stall.
        #expect(!hang.samples.contains { h.ms($0.microseconds) > 1_000 && h.ms($0.microseconds) < 2_000 })
    }

    /// What holds a thread back from outside its code is read at the busy stretch's first look
    /// (so a hang's throttled or frozen time counts from its start, not a threshold later), at
    /// detection, with each sample and at the end; a stretch under the threshold costs its one
    /// first look, and an idle loop nothing.
    @Test func theContextIsReadAtTheStretchsFirstLookAtDetectionWithEachSampleAndAtTheEnd() throws {
        let h = WatchdogHarness()
        let probe = ScriptedContextProbe()
        probe.counters = { HangContextCounters(microseconds: $0, schedule: .init(onCPUNanoseconds: $0, runQueueNanoseconds: 0), continues: 0) }
        h.environment.probe = probe
        h.busy(from: 100, for: 200)  // under the threshold
        h.busy(from: 400, for: 700)
        h.clock.at(h.t(5_000)) {}
        h.run()
        let hang = try #require(h.hangs.first?.recording)
        let reads = probe.reads.map { ($0.kind, h.ms($0.microseconds)) }
        #expect(reads.filter { $0.0 == "edge" }.map(\.1) == [100, 400], "\(reads)")
        #expect(reads.filter { $0.0 == "counters" }.map(\.1) == [654, 1104], "\(reads)")
        #expect(reads.filter { $0.0 == "look" }.count == hang.samples.count)
        #expect(near(try h.ms(#require(hang.context.start).microseconds), 400))
        #expect(try h.ms(#require(hang.context.end).microseconds) == 1104)
        #expect(try h.ms(#require(hang.context.latest).microseconds) == 1054)
        #expect(hang.context.facts == probe.scriptedFacts)
        // Nothing was read while the loop slept, from 1100 to 5000.
        #expect(!probe.reads.contains { h.ms($0.microseconds) > 1104 })
    }

    /// A probe whose thread was on a CPU half of the time, waited a quarter, and whose cgroup was
    /// throttled a tenth, since the clock's 0.
    static func sharesOfTheTime() -> ScriptedContextProbe {
        let probe = ScriptedContextProbe()
        probe.counters = {
            HangContextCounters(
                microseconds: $0, schedule: .init(onCPUNanoseconds: $0 * 500, runQueueNanoseconds: $0 * 250),
                throttling: CgroupCPU.Throttling(throttledNanoseconds: $0 * 100))
        }
        return probe
    }

    /// The lead-up's CPU figures: the thread's `schedstat` and the cgroup's throttled time read at
    /// the wakes the watchdog makes anyway while the loop is busy (each piece's half-way look and
    /// its deadline, the look that finds the stretch ended), none while it sleeps. Scripted as
    /// shares of the time (on a CPU half of it, waiting a quarter, throttled a tenth), the figures
    /// spread between readings come back as those shares of the time they cover.
    @Test func theLeadUpsCPUFiguresComeFromTheWakesWhileTheLoopWasBusy() throws {
        let h = WatchdogHarness()
        let probe = Self.sharesOfTheTime()
        h.environment.probe = probe
        // Ten pieces of 200 ms (past half the threshold), 20 ms asleep between them; idle a second;
        // then a hang.
        var time = 100.0
        for _ in 0..<10 {
            h.busy(from: time, for: 200)
            time += 220
        }
        h.busy(from: 3_600, for: 700)
        h.clock.at(h.t(6_000)) {}
        h.run()
        let hang = try #require(h.hangs.first?.recording)
        let record = try #require(hang.leadUp)
        let before = record.leadUp
        let cpu = try #require(before.cpu, "\(probe.reads.map(\.kind))")
        // Covered: the busy second, not the idle one before it nor the second after it.
        #expect(cpu.coveredMs > 1_800 && cpu.coveredMs < 2_400, "\(cpu)")
        #expect(abs(cpu.onCpuMs - cpu.coveredMs / 2) <= 1 && abs(cpu.runQueueMs - cpu.coveredMs / 4) <= 1, "\(cpu)")
        #expect(abs((cpu.throttledMs ?? 0) - cpu.coveredMs / 10) <= 1, "\(cpu)")
        // The busy 2.2 s, each bucket of it covered whole but the first and last; not the idle
        // 1.3 s before the onset.
        let coverage = before.buckets.map { $0.cpu?.coveredMs ?? -1 }
        let covered = coverage.indices.filter { coverage[$0] >= 0 }
        #expect(covered.count >= 22 && covered.count <= 24, "\(coverage)")
        #expect(covered.dropFirst().dropLast().allSatisfy { coverage[$0] >= 99 }, "\(coverage)")
        #expect(coverage.suffix(12).allSatisfy { $0 < 0 }, "\(coverage)")
        #expect(before.reading.hasSuffix("(its cgroup throttled \(Int(((cpu.throttledMs ?? 0)).rounded())) ms)"), "\(before.reading)")
        // Read at the wakes while busy: each piece's half-way look (its first look reads the
        // edge's counters, used too), the deadline that found the stretch ended; none asleep.
        let paces = probe.reads.filter { $0.kind == "pace" }.map { h.ms($0.microseconds) }
        #expect(paces.count >= 11 && paces.count <= 15, "\(paces)")
        #expect(!paces.contains { ($0 > 2_340 && $0 < 3_600) || $0 > 4_310 }, "\(paces)")
    }

    /// A hang's samples carry the thread's scheduler counters: they go on the CPU readings, so the
    /// next hang's lead-up covers a hang longer than the readings' 1 s gap too.
    @Test func aHangsSamplesCoverItInTheNextHangsLeadUp() throws {
        let h = WatchdogHarness()
        let probe = Self.sharesOfTheTime()
        h.environment.probe = probe
        h.sampler.next = { now, _ in
            var sample = ScriptedSampler.computing()
            sample.onCPUNanoseconds = now * 500
            sample.runQueueNanoseconds = now * 250
            return sample
        }
        h.busy(from: 200, for: 1_800)
        h.busy(from: 2_600, for: 700)
        h.clock.at(h.t(5_000)) {}
        h.run()
        try #require(h.hangs.count == 2)
        let before = try #require(h.hangs[1].recording.leadUp).leadUp
        let cpu = try #require(before.cpu)
        // From the first hang's edge at 200 ms to the second's at 2,600: the first hang by its
        // samples (50 ms apart, kept 100 ms apart), the 600 ms idle after it by the readings at
        // its end and at the next edge (under 1 s apart). Without the samples only those 600 ms.
        #expect(cpu.coveredMs > 2_350 && cpu.coveredMs <= 2_401, "\(cpu)")
        #expect(abs(cpu.onCpuMs - cpu.coveredMs / 2) <= 1 && abs(cpu.runQueueMs - cpu.coveredMs / 4) <= 1, "\(cpu)")
        #expect(abs((cpu.throttledMs ?? 0) - cpu.coveredMs / 10) <= 1, "\(cpu)")
    }

    /// A stretch whose first look the watchdog missed (it woke only at a deadline of the stretch
    /// before): its counters start at detection, and a stop before detection is added to them as
    /// the part before their start.
    @Test func aStretchFirstSeenAtDetectionCountsFromDetection() throws {
        let h = WatchdogHarness()
        h.environment.ownCounters = ownCounters(h, starved: false)
        let probe = ScriptedContextProbe()
        h.environment.probe = probe
        // Busy from 100; stopped from 150 for two seconds: the first look is at 100, the same
        // stretch; the hang's counters start there and the stop is inside them.
        h.busy(from: 100, for: 3_000)
        h.clock.stall(at: h.t(150), for: 2_000_000)
        h.run()
        let seen = try #require(h.hangs.first?.recording)
        #expect(near(h.ms(try #require(seen.context.start).microseconds), 100))
        #expect(seen.context.stopGapMicroseconds > 1_500_000 && seen.context.stopGapBeforeStartMicroseconds == 0)
        // A thread whose first look was another's (a queue's worker named only at detection).
        let other = WatchdogHarness()
        other.environment.ownCounters = ownCounters(other, starved: false)
        other.environment.probe = ScriptedContextProbe()
        other.busy(from: 100, for: 3_000)
        other.clock.at(other.t(120)) { [other] in other.assembly.threadSlot.set(MonitoredThread(tid: 77, startTimeTicks: 2, stackLow: 0, stackHigh: 1, name: "w", isMain: false)) }
        other.clock.stall(at: other.t(150), for: 2_000_000)
        other.run()
        let late = try #require(other.hangs.first?.recording)
        #expect(late.context.start.map { other.ms($0.microseconds) > 2_000 } == true)
        #expect(late.context.stopGapBeforeStartMicroseconds == late.context.stopGapMicroseconds && late.context.stopGapMicroseconds > 1_500_000)
    }

    /// Every stop while sampling adds the watchdog's lateness (a lower bound of its length), and the
    /// tracer, read right after it, is kept.
    @Test func eachStopWhileSamplingAddsItsLatenessAndTheTracerThen() throws {
        let h = WatchdogHarness()
        h.environment.ownCounters = ownCounters(h, starved: false)
        let probe = ScriptedContextProbe()
        probe.counters = { HangContextCounters(microseconds: $0, tracerPID: $0 > h.t(1_900) ? 4242 : 0) }
        h.environment.probe = probe
        h.busy(from: 100, for: 5_000)
        h.clock.stall(at: h.t(1_000), for: 1_000_000)
        h.clock.stall(at: h.t(3_000), for: 500_000)
        h.run()
        let hang = try #require(h.hangs.first?.recording)
        #expect(hang.stopSuspected)
        let gap = Double(hang.context.stopGapMicroseconds) / 1000
        #expect(gap > 1_400 && gap <= 1_500, "\(gap) ms")
        #expect(hang.context.stopGapBeforeStartMicroseconds == 0)
        #expect(hang.context.tracerSeen == 4242)
    }

    @Test func aShortLatenessIsNotAStop() throws {
        let h = WatchdogHarness()
        h.environment.ownCounters = ownCounters(h, starved: false)
        h.busy(from: 100, for: 1_000)
        h.clock.stall(at: h.t(353), for: 15_000)  // 15 ms late: under the 50 ms that needs a second look
        h.run()
        let hang = try #require(h.hangs.first?.recording)
        #expect(near(h.ms(hang.detectedMicroseconds), 368))
        #expect(!hang.stopSuspected)
    }
}

/// A hang the watchdog did not see while it lasted (kept off its CPU from the loop's busy edge
/// until the loop had moved on) is reported from the loop's own edges, not lost.
@Suite struct LateStretchTests {
    @Test func aHangThatEndedBeforeTheWatchdogRanIsReportedWithItsTrueDuration() throws {
        let h = WatchdogHarness()
        // The loop hangs from 200 to 600 ms and runs a short stretch at 700; the watchdog, parked,
        // gets no CPU from the first busy edge until after the last idle one (at 1 s).
        h.clock.at(h.t(1_000)) { [latch = h.latch, t = h.t] in
            for (activity, time) in [(HangMonitor.Activity.afterWaiting, 200.0), (.beforeWaiting, 600), (.afterWaiting, 700), (.beforeWaiting, 800)] {
                latch.record(activity.rawValue, atMicroseconds: t(time))
            }
        }
        h.run()
        h.writer.flush()
        let ended = h.sink.ended
        try #require(ended.count == 1, "\(ended.map(\.recording.id))")
        let recording = ended[0].recording
        // (The latch keeps 1024 ns units.)
        #expect(abs(h.ms(recording.startMicroseconds) - 200) < 0.01, "\(h.ms(recording.startMicroseconds))")
        #expect(abs(h.ms(recording.endMicroseconds ?? 0) - 600) < 0.01, "\(h.ms(recording.endMicroseconds ?? 0))")
        #expect(recording.samples.map(\.failure) == [.endedBeforeTheWatchdogRan])
        let reports = ReportDirectory(path: h.directory.path).reports()
        let report = try #require(reports.first)
        #expect(abs(report.durationMs - 400) <= 1, "\(report.durationMs)")
        #expect(report.detectedAt > report.endedAt!, "detected after it ended")
        #expect(report.context.watchdogOversleepMs >= 300, "\(report.context.watchdogOversleepMs)")
        #expect(report.capture.errors.map(\.kind) == ["ended before the watchdog ran"])
        // Nothing saw the thread: no verdict is made up.
        #expect(report.context.verdict == .unknown, "\(String(describing: report.context.verdict))")
    }

    /// A hang the watchdog recorded as it ended (it began recording just as the loop moved) is
    /// not reported a second time from the loop's edges.
    @Test func aStretchTheWatchdogRecordedIsNotReportedAgain() {
        let h = WatchdogHarness()
        h.busy(from: 100, for: 600)
        h.run()
        h.writer.flush()
        #expect(h.sink.ended.count == 1)
        #expect(h.sink.ended.first?.recording.samples.contains { $0.failure == .endedBeforeTheWatchdogRan } == false)
    }

    /// The loop thread keeps only stretches past the threshold the watchdog set, and only while
    /// no hang is recorded; taking one clears it.
    @Test func theLatchKeepsOnlyLongStretchesOutsideARecording() {
        let latch = ActivityLatch(busyActivities: [.afterWaiting])
        latch.setLateStretchThreshold(microseconds: 250_000)
        latch.record(HangMonitor.Activity.afterWaiting.rawValue, atMicroseconds: 1_000_000)
        latch.record(HangMonitor.Activity.beforeWaiting.rawValue, atMicroseconds: 1_100_000)
        #expect(latch.takeLateStretch(nowMicroseconds: 2_000_000) == nil)
        latch.record(HangMonitor.Activity.afterWaiting.rawValue, atMicroseconds: 3_000_000)
        latch.record(HangMonitor.Activity.beforeWaiting.rawValue, atMicroseconds: 3_400_000)
        let late = latch.takeLateStretch(nowMicroseconds: 4_000_000)
        #expect(late.map { abs(Int64($0.start) - 3_000_000) <= 1 && abs(Int64($0.end) - 3_400_000) <= 1 } == true, "\(String(describing: late))")
        #expect(late?.activity == HangMonitor.Activity.afterWaiting.rawValue)
        #expect(latch.takeLateStretch(nowMicroseconds: 4_000_000) == nil)
        latch.setRecordingHang(true)
        latch.record(HangMonitor.Activity.afterWaiting.rawValue, atMicroseconds: 5_000_000)
        latch.record(HangMonitor.Activity.beforeWaiting.rawValue, atMicroseconds: 5_600_000)
        #expect(latch.takeLateStretch(nowMicroseconds: 6_000_000) == nil)
    }
}
