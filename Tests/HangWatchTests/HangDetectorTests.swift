@testable import HangWatch
import HangWatchTestSupport
import Testing

@Suite struct HangDetectorTests {
    let detector = HangDetector(thresholdMicroseconds: 250_000, busyMask: 4 | 64, clockResolutionMicroseconds: 4000)
    let beforeSources: UInt8 = 4
    let beforeWaiting: UInt8 = 32
    let afterWaiting: UInt8 = 64
    let beforeTimers: UInt8 = 2

    @Test func aSleepingLoopIsIdleHoweverLongItSleeps() {
        let snapshot = ActivitySnapshot(activity: beforeWaiting, microseconds: 1_000_000)
        #expect(detector.evaluate(snapshot, now: 1_000_000 + 3_600_000_000) == .idle)
    }

    @Test func aLoopThatNeverRanIsIdle() {
        #expect(detector.evaluate(ActivitySnapshot(word: 0), now: 10_000_000) == .idle)
    }

    @Test func aBusyLoopUnderTheThresholdIsWaitedFor() {
        let snapshot = ActivitySnapshot(activity: afterWaiting, microseconds: 1_000_000)
        guard case .waitUntil(let deadline) = detector.evaluate(snapshot, now: 1_100_000) else {
            Issue.record("expected a deadline")
            return
        }
        // The deadline allows for the activity clock's resolution, so no shorter burst is a hang.
        #expect(deadline >= snapshot.microseconds + 250_000 + 4000)
        #expect(deadline <= snapshot.microseconds + 250_000 + 4000 + 1)
    }

    @Test func aBusyLoopPastTheThresholdHangsFromTheStartOfTheBusyPeriod() {
        let snapshot = ActivitySnapshot(activity: beforeSources, microseconds: 1_000_000)
        #expect(detector.evaluate(snapshot, now: 1_300_000) == .hang(startMicroseconds: snapshot.microseconds))
    }

    @Test func busyTimeBeforeCountFromDoesNotCount() {
        let snapshot = ActivitySnapshot(activity: beforeSources, microseconds: 1_000_000)
        #expect(detector.evaluate(snapshot, now: 1_300_000, countFrom: 1_200_000) == .waitUntil(microseconds: 1_454_000))
        #expect(detector.evaluate(snapshot, now: 1_460_000, countFrom: 1_200_000) == .hang(startMicroseconds: 1_200_000))
    }

    @Test func onlyConfiguredActivitiesAreBusy() {
        let timers = ActivitySnapshot(activity: beforeTimers, microseconds: 1_000_000)
        #expect(detector.evaluate(timers, now: 5_000_000) == .idle)
        let withTimers = HangDetector(thresholdMicroseconds: 250_000, busyMask: 2 | 4 | 64, clockResolutionMicroseconds: 0)
        #expect(withTimers.evaluate(timers, now: 5_000_000) == .hang(startMicroseconds: timers.microseconds))
    }

    /// With near misses looked for: half the threshold (and the clock's resolution) in, a piece
    /// not sampled yet is a near miss; once sampled, the wait is for the threshold; past it, a hang
    /// either way.
    @Test func halfTheThresholdIntoAPieceIsANearMissOnce() {
        var nearMisses = detector
        nearMisses.looksForNearMisses = true
        let piece = ActivitySnapshot(activity: afterWaiting, microseconds: 1_000_000)
        let start = piece.microseconds
        let (halfway, deadline) = (start + 125_000 + 4_000, start + 250_000 + 4_000)
        #expect(nearMisses.evaluate(piece, now: start + 50_000) == .waitUntil(microseconds: halfway))
        #expect(nearMisses.evaluate(piece, now: halfway - 1) == .waitUntil(microseconds: halfway))
        #expect(nearMisses.evaluate(piece, now: halfway) == .nearMiss(startMicroseconds: start))
        #expect(nearMisses.evaluate(piece, now: halfway, nearMissSampled: true) == .waitUntil(microseconds: deadline))
        #expect(nearMisses.evaluate(piece, now: deadline) == .hang(startMicroseconds: start))
        #expect(nearMisses.evaluate(piece, now: deadline, nearMissSampled: true) == .hang(startMicroseconds: start))
        // Counted from `countFrom`, as the hang is.
        #expect(nearMisses.evaluate(piece, now: 1_300_000, countFrom: 1_200_000) == .waitUntil(microseconds: 1_329_000))
        // Idle is idle, and without near misses looked for there is no half-way stop.
        #expect(nearMisses.evaluate(ActivitySnapshot(activity: beforeWaiting, microseconds: 1_000_000), now: 9_000_000) == .idle)
        #expect(detector.evaluate(piece, now: halfway) == .waitUntil(microseconds: deadline))
    }

    @Test func aHangEndsAtTheLoopsNextActivity() {
        let hung = ActivitySnapshot(activity: afterWaiting, microseconds: 1_000_000)
        #expect(HangDetector.endOfHang(started: hung, latest: hung) == nil)
        let moved = ActivitySnapshot(activity: beforeWaiting, microseconds: 1_700_000)
        #expect(HangDetector.endOfHang(started: hung, latest: moved) == moved.microseconds)
    }
}
