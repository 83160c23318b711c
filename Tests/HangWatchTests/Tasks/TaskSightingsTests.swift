@testable import HangWatch
import Testing

/// How long a task was seen waiting the same way: from one dump to the next, nothing else.
@Suite struct TaskSightingsTests {
    static func wait(_ context: UInt, _ record: UInt = 0x20, _ state: String = "suspended") -> TaskSightings.Wait {
        TaskSightings.Wait(context: context, record: record, state: state)
    }

    @Test func aTaskSeenTheSameAtTwoDumpsWaitedAtLeastTheTimeBetweenThem() {
        var sightings = TaskSightings()
        #expect(sightings.observe([(1, Self.wait(0x100)), (2, Self.wait(0x200))], at: 1_000_000).isEmpty)
        #expect(sightings.earliest == 1_000_000)
        // Task 1 unchanged; task 2 resumed and waits elsewhere; task 3 is new.
        let second = sightings.observe([(1, Self.wait(0x100)), (2, Self.wait(0x280)), (3, Self.wait(0x300))], at: 61_000_000)
        #expect(second == [1: 60_000_000])
        // Task 2's new wait counts from the second dump; task 1 still from the first.
        let third = sightings.observe([(1, Self.wait(0x100)), (2, Self.wait(0x280))], at: 121_000_000)
        #expect(third == [1: 120_000_000, 2: 60_000_000])
        // Task 3 ended: forgotten, so a task with its id later would start afresh.
        #expect(sightings.observe([(3, Self.wait(0x300))], at: 130_000_000).isEmpty)
    }

    @Test func aTaskThatMovedFromEnqueuedToSuspendedIsNotUnchanged() {
        var sightings = TaskSightings()
        _ = sightings.observe([(1, Self.wait(0x100, 0x20, "enqueued"))], at: 0)
        #expect(sightings.observe([(1, Self.wait(0x100, 0x20, "suspended"))], at: 5_000_000).isEmpty)
    }

    @Test func pastItsCapacityTheNewestAreNotKept() {
        var sightings = TaskSightings(capacity: 2)
        _ = sightings.observe([(1, Self.wait(1)), (2, Self.wait(2)), (3, Self.wait(3))], at: 0)
        #expect(sightings.observe([(1, Self.wait(1)), (2, Self.wait(2)), (3, Self.wait(3))], at: 10) == [1: 10, 2: 10])
    }
}
