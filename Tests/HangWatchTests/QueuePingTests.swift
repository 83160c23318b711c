import Foundation
@testable import HangWatch
import HangWatchTestSupport
import Synchronization
import Testing

/// The ping's rules, with the test as the queue: pings are held until the test runs them, and the
/// time is scripted. (`QueueSourceTests` runs a real queue end to end.)
@Suite struct QueuePingTests {
    /// A queue that runs nothing until told, and a source pinging it with scripted time.
    final class HeldQueue: @unchecked Sendable {
        /// What the source's closures share with the test.
        final class Shared: Sendable {
            let now = Mutex<UInt64>(5_000_000_000)
            let held = Mutex<[@Sendable () -> Void]>([])
            let attached = Atomic<Int>(0)
        }
        let shared = Shared()
        let latch = ActivityLatch(busyActivities: [.afterWaiting])
        let source: QueueActivitySource

        init() {
            let shared = shared
            source = QueueActivitySource(
                kind: .dispatchQueue, periodMicroseconds: 100_000, coarseNow: { shared.now.withLock { $0 } },
                enqueue: { block in shared.held.withLock { $0.append(block) } })
            source.connect(edges: latch) { shared.attached.add(1, ordering: .relaxed) }
        }

        /// Runs the held pings, on this thread, oldest first.
        func drain() {
            for block in shared.held.withLock({ blocks in defer { blocks = [] }; return blocks }) { block() }
        }

        func advance(milliseconds: UInt64) { shared.now.withLock { $0 += milliseconds * 1_000_000 } }
        var now: UInt64 { shared.now.withLock { $0 } }
        var attached: Int { shared.attached.load(ordering: .relaxed) }
        var pending: Int { shared.held.withLock { $0.count } }
        var isBusy: Bool { latch.snapshot().activity == QueueActivitySource.enter }
    }

    @Test func aQueueThatRunsEachPingWithinThePeriodIsNeverBusy() {
        let queue = HeldQueue()
        for _ in 0..<50 {
            queue.source.tick()
            #expect(queue.pending == 1)
            queue.drain()
            queue.advance(milliseconds: 100)
        }
        #expect(queue.latch.snapshot().word == 0, "the watchdog was never told anything")
        #expect(queue.attached == 1, "one draining thread, attached once")
    }

    @Test func aPingStillWaitingAPeriodLaterDeclaresTheQueueBusySinceItWasEnqueued() {
        let queue = HeldQueue()
        queue.source.tick()
        let enqueuedAt = queue.now
        queue.advance(milliseconds: 100)
        queue.source.tick()  // overdue: busy since the enqueue, no second ping
        #expect(queue.pending == 1)
        #expect(queue.isBusy)
        let declared = queue.latch.snapshot()
        #expect(declared.microseconds == ((enqueuedAt >> 10) << 10) / 1000)
        // Declared once: a stretch that lasts does not move its start.
        queue.advance(milliseconds: 100)
        queue.source.tick()
        #expect(queue.latch.snapshot() == declared && queue.pending == 1)
        // The ping runs at last: the stretch ends, and the next period pings again.
        queue.drain()
        #expect(!queue.isBusy)
        queue.advance(milliseconds: 100)
        queue.source.tick()
        #expect(queue.pending == 1)
    }

    @Test func eachNewDrainingThreadIsAttachedOnce() {
        let queue = HeldQueue()
        for _ in 0..<3 {
            queue.source.tick()
            queue.drain()
            queue.advance(milliseconds: 100)
        }
        #expect(queue.attached == 1)
        queue.source.tick()
        let done = DispatchSemaphore(value: 0)
        Thread {
            queue.drain()
            done.signal()
        }.start()
        done.wait()
        #expect(queue.attached == 2)
    }

    @Test func afterStopNothingIsPingedOrRecorded() {
        let queue = HeldQueue()
        queue.source.tick()
        queue.advance(milliseconds: 100)
        queue.source.tick()
        #expect(queue.isBusy)
        queue.source.stop()
        queue.drain()  // a ping that runs after stop leaves the latch alone
        #expect(queue.isBusy)
        queue.source.tick()
        #expect(queue.pending == 0)
    }
}
