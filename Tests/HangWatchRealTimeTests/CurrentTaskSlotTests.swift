import Dispatch
import Foundation
import Synchronization
import Testing

@testable import HangWatch

/// The current-task word of a pool thread, read from another thread (what the pool watch does).
@Suite struct CurrentTaskSlotTests {
    /// What one task saw of itself, while it held its thread (parked on a semaphore).
    struct Parked: Sendable {
        var slot: UInt?
        var ownRead: UInt64?
    }

    /// Runs a task that finds its thread's word, then waits on `release` until the test let it go.
    func park(_ release: DispatchSemaphore) -> (Parked, done: DispatchSemaphore) {
        let found = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let parked = Mutex(Parked())
        Task.detached {
            let slot = UnsafeCurrentTaskSlot.locateOnCurrentThread()
            parked.withLock { $0 = Parked(slot: slot, ownRead: slot.flatMap(UnsafeCurrentTaskSlot.taskID(slot:))) }
            found.signal()
            release.wait()
            done.signal()
        }
        found.wait()
        return (parked.withLock { $0 }, done)
    }

    @Test func aTasksIdIsReadFromAnotherThreadAndTwoTasksNeverShareOne() throws {
        let release = DispatchSemaphore(value: 0)
        let (first, firstDone) = park(release)
        let slot = try #require(first.slot, "the word was not found (another runtime layout?)")
        let id = try #require(first.ownRead)
        #expect(id != 0)
        // From this thread, while the task holds its own: the same id.
        #expect(UnsafeCurrentTaskSlot.taskID(slot: slot) == id)
        release.signal()
        firstDone.wait()

        // A second task of the same code (likely in the first one's memory) has an id of its own.
        let (second, secondDone) = park(release)
        let secondID = try #require(second.ownRead)
        #expect(secondID != 0 && secondID != id)
        if second.slot == slot { #expect(UnsafeCurrentTaskSlot.taskID(slot: slot) == secondID) }
        release.signal()
        secondDone.wait()
    }

    @Test func outsideATaskThereIsNoWordAndABadAddressReadsAsNothing() {
        // A plain thread runs no task (a test itself runs in one).
        let located = Mutex<UInt?>(1)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            located.withLock { $0 = UnsafeCurrentTaskSlot.locateOnCurrentThread() }
            finished.signal()
        }.start()
        finished.wait()
        #expect(located.withLock { $0 } == nil)
        // An unmapped word is unreadable, never a crash.
        #expect(UnsafeCurrentTaskSlot.taskID(slot: 8) == nil)
    }
}
