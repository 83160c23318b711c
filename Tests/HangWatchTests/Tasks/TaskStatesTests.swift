@testable import HangWatch
import Testing

/// A task's state, traits and priority from its status word and dependency, as a table (Swift
/// 6.3.1's flags: running 0x800, enqueued 0x1000, has dependency 0x4000; priority the low byte).
@Suite struct TaskStatesTests {
    static let layout = TaskLayout.swift631

    @Test(arguments: [
        // status, dependency, state
        (UInt32(0x0819), TaskSnapshot.Dependency.none, TaskState.running),
        (0x5019, .executor(identity: 0x7000, implementation: 0), .enqueued),
        (0x5015, .executor(identity: 0, implementation: 0), .enqueued),
        (0x4019, .continuation(0x9000), .suspended),
        (0x4019, .task(0xa000), .suspended),
        (0x4019, .group(0xb000), .suspended),
        (0x0015, .none, .notStarted),
    ])
    func theStatusAndDependencySayTheState(_ status: UInt32, _ dependency: TaskSnapshot.Dependency, _ state: TaskState) {
        let task = TaskSnapshot(address: 0x1000, id: 7, statusFlags: status, basePriority: 0x15, dependency: dependency)
        #expect(TaskState(task, layout: Self.layout) == state)
    }

    @Test func traitsNameTheKindOfChildCancellationAndEscalation() {
        let asyncLet = TaskSnapshot(address: 0x1000, id: 1, jobFlags: 1 << 24 | 1 << 25 | 1 << 28, statusFlags: 0x4015, basePriority: 0x15)
        #expect(TaskState.traits(asyncLet, layout: Self.layout) == ["async let"])
        let groupChild = TaskSnapshot(address: 0x1000, id: 2, jobFlags: 1 << 24 | 1 << 26, statusFlags: 0x4115, basePriority: 0x15)
        #expect(TaskState.traits(groupChild, layout: Self.layout) == ["group child", "cancelled"])
        // A background task (9) awaited by a high one: its status priority rose to 25.
        let escalated = TaskSnapshot(address: 0x1000, id: 3, statusFlags: 0x4019, basePriority: 9)
        #expect(TaskState.traits(escalated, layout: Self.layout) == ["escalated"])
        #expect(TaskState.priority(escalated, layout: Self.layout) == 25)
        let plain = TaskSnapshot(address: 0x1000, id: 4, jobFlags: 1 << 24, statusFlags: 0x4015, basePriority: 0x15)
        #expect(TaskState.traits(plain, layout: Self.layout) == ["child"])
    }
}
