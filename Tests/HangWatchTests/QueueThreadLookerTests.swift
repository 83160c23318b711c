@testable import HangWatch
import Testing

/// When a worker found running a pinged queue began, as its own clock proves it
/// (`LinuxQueueThreadLooker.provenStart`), as a table: nanoseconds of `CLOCK_MONOTONIC`; the
/// baseline is the last look that found the worker not running the queue.
@Suite struct QueueThreadLookerTests {
    typealias Baseline = (at: UInt64, ran: UInt64, voluntarySwitches: UInt64?, asleep: Bool)

    static let asleep: Baseline = (at: 1_000_000_000, ran: 5_000_000, voluntarySwitches: 40, asleep: true)

    static func start(
        _ baseline: Baseline?, switches: UInt64, answers: Int = 0, ran: UInt64, now: UInt64 = 1_050_000_000, asleepSince: UInt64? = nil
    ) -> UInt64? {
        LinuxQueueThreadLooker.provenStart(baseline: baseline, switches: switches, answers: answers, ran: ran, now: now, asleepSince: asleepSince)
    }

    @Test func asleepAtTheBaselineAndNotSinceItStartedThatMuchRunnableTimeAgo() {
        // 30 ms on a CPU or its run queue since the baseline: began 30 ms before the look.
        #expect(Self.start(Self.asleep, switches: 40, ran: 35_000_000) == 1_020_000_000)
    }

    @Test func aPingAnsweredAndTheSleepAfterItDoNotBreakTheProof() {
        #expect(Self.start(Self.asleep, switches: 42, answers: 2, ran: 35_000_000) == 1_020_000_000)
        #expect(Self.start(Self.asleep, switches: 44, answers: 2, ran: 35_000_000) == nil)
    }

    /// The hop of an `async` service's job: the worker woke for a timer, enqueued the job, slept
    /// once, and woke again to run it.
    @Test func oneSleepMoreIsTheHopToTheQueueAndStillDatesTheStart() {
        #expect(Self.start(Self.asleep, switches: 41, ran: 35_000_000) == 1_020_000_000)
        #expect(Self.start(Self.asleep, switches: 42, ran: 35_000_000) == nil, "two unexplained sleeps prove nothing")
    }

    @Test func awakeAtTheBaselineOrWithoutItsCountsProvesNothing() {
        var awake = Self.asleep
        awake.asleep = false
        #expect(Self.start(awake, switches: 40, ran: 35_000_000) == nil)
        var uncounted = Self.asleep
        uncounted.voluntarySwitches = nil
        #expect(Self.start(uncounted, switches: 40, ran: 35_000_000) == nil)
        #expect(Self.start(Self.asleep, switches: 39, ran: 35_000_000) == nil, "a count that went back")
        #expect(Self.start(Self.asleep, switches: 40, ran: 4_000_000) == nil, "a clock that went back")
    }

    @Test func neverBeforeTheBaseline() {
        // A later baseline (40 ms before the look) than the runnable time says: the baseline.
        var late = Self.asleep
        late.at = 1_010_000_000
        #expect(Self.start(late, switches: 41, ran: 55_000_000) == 1_010_000_000)
    }

    /// A worker asleep in the work's own blocking call (a MainActor job in `usleep`) was awake
    /// until it went off its CPU, when the scheduler's clock says: the start is that moment less
    /// its awake time since the baseline. That sleep is the work's own, one more than the rule
    /// allows.
    @Test func aWorkerAsleepInTheWorksCallIsDatedFromWhenItWentOffItsCPU() {
        // Off its CPU at 1 030 ms, 10 ms awake since the baseline: began at 1 020 ms.
        #expect(Self.start(Self.asleep, switches: 41, ran: 15_000_000, asleepSince: 1_030_000_000) == 1_020_000_000)
        // The sleep after a ping it answered, and the hop, as for a computation.
        #expect(Self.start(Self.asleep, switches: 43, answers: 1, ran: 15_000_000, asleepSince: 1_030_000_000) == 1_020_000_000)
        #expect(Self.start(Self.asleep, switches: 44, answers: 1, ran: 15_000_000, asleepSince: 1_030_000_000) == nil, "a sleep too many")
        // Never before the baseline, and never after the look (a clock a little ahead).
        #expect(Self.start(Self.asleep, switches: 41, ran: 55_000_000, asleepSince: 1_030_000_000) == 1_000_000_000)
        #expect(Self.start(Self.asleep, switches: 41, ran: 5_000_000, asleepSince: 1_060_000_000) == 1_050_000_000)
        // Never asleep at all, yet found asleep: no proof.
        #expect(Self.start(nil, switches: 0, ran: 30_000_000, asleepSince: 1_030_000_000) == nil)
    }

    /// A ping's answer is a baseline too (read on the worker, in the ping): the next job, when no
    /// look found the worker idle before it (requests served one after the other), is dated from
    /// it, after the worker's sleep back to its idle wait.
    @Test func thePingsAnswerIsABaselineForTheJobThatFollowsIt() {
        let answer: Baseline = (at: 1_030_000_000, ran: 5_000_000, voluntarySwitches: 40, asleep: true)
        // Answered at 1 030 ms, then idle; woken for a job that fell asleep in its call at
        // 1 040.2 ms, 0.2 ms awake since the answer: dated 1 040 ms (early by the ping's last
        // steps after the answer, microseconds).
        #expect(Self.start(answer, switches: 42, answers: 1, ran: 5_200_000, asleepSince: 1_040_200_000) == 1_040_000_000)
    }

    /// More sleeps than the proof allows (a worker just made, between its first pings and its
    /// first work): the work began after the baseline and within the worker's awake time before it
    /// last was awake, dated half-way in what both leave.
    @Test func moreSleepsThanTheProofAllowsLeaveTheWindowOfTheWorkersAwakeTime() {
        #expect(Self.start(Self.asleep, switches: 45, ran: 15_000_000, asleepSince: 1_030_000_000) == nil)
        // 10 ms awake since the baseline, asleep in its call from 1 030 ms: 1 020–1 030.
        #expect(LinuxQueueThreadLooker.startWithinAwakeTime(baseline: Self.asleep, ran: 15_000_000, lastAwake: 1_030_000_000) == 1_025_000_000)
        // Awake longer than since the baseline: from the baseline.
        #expect(LinuxQueueThreadLooker.startWithinAwakeTime(baseline: Self.asleep, ran: 55_000_000, lastAwake: 1_030_000_000) == 1_015_000_000)
        #expect(LinuxQueueThreadLooker.startWithinAwakeTime(baseline: nil, ran: 15_000_000, lastAwake: 1_030_000_000) == nil)
        #expect(LinuxQueueThreadLooker.startWithinAwakeTime(baseline: Self.asleep, ran: 4_000_000, lastAwake: 1_030_000_000) == nil, "a clock that went back")
    }

    /// A worker with no baseline (libdispatch gave it its first job of the queue), awake 0.3 ms
    /// in all since it was made, asleep in the job's call from 1 030 ms: the job's code ran in
    /// those 0.3 ms, dated half-way in them, where all of them fit after the look before. One
    /// awake longer than since that look proves nothing (half-way between the looks instead).
    @Test func aWorkerWithoutABaselineAwakeBrieflySinceItWasMadeIsDatedWithinThatTime() {
        let made = LinuxQueueThreadLooker.sinceMade(lookBefore: 1_000_000_000, ran: 300_000, lastAwake: 1_030_000_000)
        #expect(made?.at == 1_000_000_000)
        #expect(LinuxQueueThreadLooker.startWithinAwakeTime(baseline: made, ran: 300_000, lastAwake: 1_030_000_000) == 1_029_850_000)
        #expect(LinuxQueueThreadLooker.sinceMade(lookBefore: 1_000_000_000, ran: 31_000_000, lastAwake: 1_030_000_000) == nil)
        #expect(LinuxQueueThreadLooker.sinceMade(lookBefore: nil, ran: 300_000, lastAwake: 1_030_000_000) == nil)
        #expect(LinuxQueueThreadLooker.sinceMade(lookBefore: 1_040_000_000, ran: 0, lastAwake: 1_030_000_000) == nil)
    }

    @Test func withoutABaselineOnlyAWorkerThatNeverSleptIsDatedFromItsStart() {
        #expect(Self.start(nil, switches: 0, ran: 30_000_000) == 1_020_000_000)
        #expect(Self.start(nil, switches: 1, ran: 30_000_000) == nil)
    }
}
