@testable import HangWatch
import Testing

/// Who waits for whom, and the cycles: the issue's "a task awaiting a child that awaits an actor
/// the first holds".
@Suite struct TaskWaitGraphTests {
    static let layout = TaskLayout.swift631
    static let running: UInt32 = 0x0819
    static let suspended: UInt32 = 0x4019
    static let enqueued: UInt32 = 0x5019

    /// The parent runs on actor 0xa0 (holding it), blocked; its group child 3 is queued on 0xa0.
    @Test func aRunningHolderWhoseChildWaitsForItsActorIsACycle() {
        let parent = TaskSnapshot(address: 0x100, id: 1, statusFlags: Self.running, children: [0x200, 0x300], groups: [0x900])
        let waiting = TaskSnapshot(address: 0x200, id: 2, statusFlags: Self.suspended, dependency: .continuation(0x1), parent: 0x100, group: 0x900)
        let queued = TaskSnapshot(
            address: 0x300, id: 3, statusFlags: Self.enqueued, dependency: .executor(identity: 0xa0, implementation: 0), parent: 0x100, group: 0x900)
        let graph = TaskWaitGraph(tasks: [parent, waiting, queued], layout: Self.layout, holders: [0xa0: 0x100])
        #expect(graph.cycles() == [[.task(0x100), .task(0x300), .actor(0xa0)]])
    }

    /// The same actor held by an unrelated blocked task: a chain, not a cycle.
    @Test func anActorHeldByAnotherTaskIsNoCycle() {
        let holder = TaskSnapshot(address: 0x100, id: 1, statusFlags: Self.running)
        let queued = TaskSnapshot(address: 0x300, id: 3, statusFlags: Self.enqueued, dependency: .executor(identity: 0xa0, implementation: 0))
        let graph = TaskWaitGraph(tasks: [holder, queued], layout: Self.layout, holders: [0xa0: 0x100])
        #expect(graph.cycles().isEmpty)
        #expect(graph.edges[.task(0x300)] == [.actor(0xa0)] && graph.edges[.actor(0xa0)] == [.task(0x100)])
    }

    /// Two tasks each awaiting the other (`Task.value`), and a task awaiting its group whose child
    /// waits on a continuation: one cycle, found once whatever the order of the tasks.
    @Test func twoTasksAwaitingEachOtherAreOneCycleAndAGroupWaitIsNone() {
        let a = TaskSnapshot(address: 0x100, id: 1, statusFlags: Self.suspended, dependency: .task(0x200))
        let b = TaskSnapshot(address: 0x200, id: 2, statusFlags: Self.suspended, dependency: .task(0x100))
        let owner = TaskSnapshot(address: 0x300, id: 3, statusFlags: Self.suspended, dependency: .group(0x900), groups: [0x900])
        let child = TaskSnapshot(address: 0x400, id: 4, statusFlags: Self.suspended, dependency: .continuation(0x1), parent: 0x300, group: 0x900)
        for tasks in [[a, b, owner, child], [child, owner, b, a]] {
            let graph = TaskWaitGraph(tasks: tasks, layout: Self.layout, holders: [:])
            #expect(graph.cycles() == [[.task(0x100), .task(0x200)]])
            #expect(graph.edges[.task(0x300)] == [.task(0x400)])
        }
    }
}
