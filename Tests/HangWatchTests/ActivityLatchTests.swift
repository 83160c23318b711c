import Dispatch
import Foundation
@testable import HangWatch
import HangWatchTestSupport
import Testing

@Suite struct ActivityLatchTests {
    let beforeSources: UInt8 = 4
    let beforeWaiting: UInt8 = 32
    let afterWaiting: UInt8 = 64

    func makeLatch() -> ActivityLatch {
        ActivityLatch(busyActivities: [.beforeSources, .afterWaiting])
    }

    @Test func recordsTheActivityAndAMonotonicTime() {
        let latch = makeLatch()
        let before = SystemMonotonicClock().microseconds()
        latch.record(afterWaiting)
        let snapshot = latch.snapshot()
        #expect(snapshot.activity == afterWaiting)
        // The coarse clock lags the precise one by at most a few ticks.
        #expect(snapshot.microseconds <= before + 1000)
        #expect(snapshot.microseconds + 50_000 >= before)
    }

    /// The run-loop observers' callback records into the latch its `info` points at, and does
    /// nothing with no `info`: CoreFoundation passes NULL to a callout that raced with the
    /// observer's invalidation on another thread (a source stopping).
    @Test func theObserverCallbackRecordsIntoItsLatchAndIgnoresACalloutAfterInvalidation() {
        let latch = makeLatch()
        RunLoopActivitySource.observerCallback(nil, .init(rawValue: .init(afterWaiting)), UnsafeMutableRawPointer(latch.storage))
        #expect(latch.snapshot().activity == afterWaiting)
        RunLoopActivitySource.observerCallback(nil, .init(rawValue: .init(beforeSources)), nil)
        #expect(latch.snapshot().activity == afterWaiting)
    }

    @Test func snapshotsKeepMicrosecondTimesWithinTheWordsResolution() {
        let snapshot = ActivitySnapshot(activity: 4, microseconds: 123_456_789)
        #expect(snapshot.activity == 4)
        #expect(abs(Int64(snapshot.microseconds) - 123_456_789) <= 2)
    }

    @Test func wakesAParkedWatchdogWhenTheLoopLeavesIdle() {
        let latch = makeLatch()
        latch.record(beforeWaiting)
        let idle = latch.snapshot()
        #expect(latch.park() == idle)
        latch.record(afterWaiting)
        #expect(latch.wake.tryWait())
    }

    @Test func doesNotWakeWhenNobodyIsParked() {
        let latch = makeLatch()
        latch.record(beforeWaiting)
        latch.record(afterWaiting)
        #expect(!latch.wake.tryWait())
    }

    @Test func busyToBusyNeverWakes() {
        let latch = makeLatch()
        latch.record(afterWaiting)
        _ = latch.park()
        latch.record(beforeSources)
        latch.record(afterWaiting)
        #expect(!latch.wake.tryWait())
        latch.unpark()
    }

    @Test func wakesOnlyOncePerPark() {
        let latch = makeLatch()
        latch.record(beforeWaiting)
        _ = latch.park()
        latch.record(afterWaiting)
        latch.record(beforeWaiting)
        latch.record(afterWaiting)
        #expect(latch.wake.tryWait())
        #expect(!latch.wake.tryWait())
    }

    @Test func goingIdleFromBusyIsTimedAndIdleToIdleKeepsTheTime() {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 100)
        latch.record(beforeWaiting)
        // The end of a busy stretch is timed (a stretch the watchdog did not see is kept for it).
        let ended = latch.snapshot()
        #expect(ended.activity == beforeWaiting && ended.word >> 8 > 100)
        // Idle to idle: no clock read, the time stays.
        latch.record(HangMonitor.Activity.exit.rawValue)
        #expect(latch.snapshot().word >> 8 == ended.word >> 8)
        latch.record(afterWaiting, atMicroseconds: 100)
        latch.setRecordingHang(true)
        latch.record(beforeWaiting)
        // While a hang is recorded, going idle is timed: that is when the hang ended.
        #expect(latch.snapshot().word >> 8 > 100)
        #expect(latch.snapshot().activity == beforeWaiting)
    }

    @Test func markIdleTurnsAStaleBusyWordIntoAWakeUpEdge() {
        let latch = makeLatch()
        latch.record(afterWaiting)
        let stale = latch.snapshot()
        latch.markIdle(ifUnchanged: stale)
        #expect(latch.snapshot().activity == 0)
        _ = latch.park()
        latch.record(beforeSources)
        #expect(latch.wake.tryWait())
    }

    @Test func markIdleLeavesANewerWordAlone() {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 100)
        let stale = latch.snapshot()
        latch.record(beforeSources, atMicroseconds: 200)
        latch.markIdle(ifUnchanged: stale)
        #expect(latch.snapshot().activity == beforeSources)
    }
}
