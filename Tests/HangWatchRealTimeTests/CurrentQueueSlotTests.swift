import Dispatch
import Foundation
import HangWatchTestSupport
import Synchronization
import Testing

@testable import HangWatch

/// libdispatch's current-queue word of a worker, read from another thread (what a watched queue
/// does at a stall to find the worker that runs it), and the source's use of it.
@Suite struct CurrentQueueSlotTests {
    /// What a block saw of itself while it held its worker (parked on a semaphore).
    struct Parked: Sendable {
        var located: (queue: UInt, slot: UInt)?
        var tid: Int32 = 0
    }

    /// Runs a block on `queue` that finds its thread's word, then waits until the test lets it go.
    func park(on queue: DispatchQueue, _ release: DispatchSemaphore) -> (Parked, done: DispatchSemaphore) {
        let found = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let parked = Mutex(Parked())
        queue.async {
            let located = UnsafeCurrentQueueSlot.locateOnCurrentThread()
            parked.withLock { $0 = Parked(located: located, tid: UnsafeCaptureBridge.currentThreadID()) }
            found.signal()
            release.wait()
            done.signal()
        }
        found.wait()
        return (parked.withLock { $0 }, done)
    }

    @Test func aWorkersQueueIsReadFromAnotherThreadAndTwoQueuesAreTwoValues() throws {
        let release = DispatchSemaphore(value: 0)
        let (first, firstDone) = park(on: DispatchQueue(label: "slot.first"), release)
        let (second, secondDone) = park(on: DispatchQueue(label: "slot.second"), release)
        let one = try #require(first.located, "the word was not found (another libdispatch layout?)")
        let two = try #require(second.located)
        #expect(first.tid != second.tid, "two blocks held two workers")
        #expect(one.queue != two.queue && one.slot != two.slot)
        // From this thread, while each block holds its worker: that worker's queue.
        #expect(UnsafeCurrentQueueSlot.queue(slot: one.slot) == one.queue)
        #expect(UnsafeCurrentQueueSlot.queue(slot: two.slot) == two.queue)
        release.signal()
        release.signal()
        firstDone.wait()
        secondDone.wait()
        // Done, the workers no longer say they drain those queues.
        #expect(Eventually.holds(timeout: 5) {
            UnsafeCurrentQueueSlot.queue(slot: one.slot) != one.queue && UnsafeCurrentQueueSlot.queue(slot: two.slot) != two.queue
        })
    }

    /// A watched serial queue stalls, round after round, on whichever worker libdispatch picks: the
    /// source names the thread running the stalling block, never another one: by its word when it
    /// ran a ping before ("elsewhere" only when it did not), and then by its thread descriptor.
    @Test func theSourceFindsTheWorkerThatRunsTheStallNeverAnother() throws {
        let queue = DispatchQueue(label: "slot.watched")
        let latch = ActivityLatch(busyActivities: [.afterWaiting])
        let source = QueueActivitySource(kind: .dispatchQueue, periodMicroseconds: 10_000, enqueue: { queue.async(execute: $0) })
        let pinged = Mutex<Set<Int32>>([])
        source.connect(edges: latch) { pinged.withLock { _ = $0.insert(UnsafeCaptureBridge.currentThreadID()) } }
        // Another queue keeps a worker busy now and then, so that the watched one moves between workers.
        let other = DispatchQueue(label: "slot.other")
        var found = 0
        for round in 0..<12 {
            usleep(15_000)  // a period since the last ping: this tick sends one
            source.tick()
            queue.sync {}  // the ping ran
            if round % 3 == 1 { other.async { usleep(30_000) } }
            let release = DispatchSemaphore(value: 0)
            let (stall, done) = park(on: queue, release)
            let ranPing = pinged.withLock { $0.contains(stall.tid) }
            var draining = source.workers.draining()
            if draining == .elsewhere {
                // On a worker no ping ran on (then, and only then, it is elsewhere): found among
                // the process's workers by its descriptor.
                #expect(!ranPing, "round \(round): the stalling thread ran a ping, yet was not named")
                source.workers.discover(at: QueueActivitySource.coarseNanoseconds(), force: true)
                draining = source.workers.draining()
            }
            switch draining {
            case .thread(let named):
                #expect(named == stall.tid, "round \(round): named \(named), the stall ran on \(stall.tid)")
                found += 1
            case .elsewhere:
                Issue.record("round \(round): the stall's worker \(stall.tid) was found by no word")
            case .unknown:
                #expect(stall.located == nil, "round \(round): the words were located, yet nothing was known")
            }
            release.signal()
            done.wait()
        }
        #expect(found == 12, "the stalling worker was named in \(found) rounds of 12")
        source.stop()
    }
}
