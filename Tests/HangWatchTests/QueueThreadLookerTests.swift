@testable import HangWatch
import Testing

/// When a worker found running a pinged queue began, as its own clock proves it
/// (`LinuxQueueThreadLooker.provenStart`), as a table: nanoseconds of `CLOCK_MONOTONIC`; the
/// baseline is the last look that found the worker not running the queue.
@Suite struct QueueThreadLookerTests {
    typealias Baseline = (at: UInt64, ran: UInt64, voluntarySwitches: UInt64?, asleep: Bool)

    static let asleep: Baseline = (at: 1_000_000_000, ran: 5_000_000, voluntarySwitches: 40, asleep: true)

    static func start(_ baseline: Baseline?, switches: UInt64, answers: Int = 0, ran: UInt64, now: UInt64 = 1_050_000_000) -> UInt64? {
        LinuxQueueThreadLooker.provenStart(baseline: baseline, switches: switches, answers: answers, ran: ran, now: now)
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

    @Test func withoutABaselineOnlyAWorkerThatNeverSleptIsDatedFromItsStart() {
        #expect(Self.start(nil, switches: 0, ran: 30_000_000) == 1_020_000_000)
        #expect(Self.start(nil, switches: 1, ran: 30_000_000) == nil)
    }
}
