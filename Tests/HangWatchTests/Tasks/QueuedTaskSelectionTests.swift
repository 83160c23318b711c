import Foundation
import HangWatchReport
@testable import HangWatch
import Testing

/// Which tasks of a census a hang report counts as queued, and its summary, on scripted censuses.
@Suite struct QueuedTaskSelectionTests {
    typealias Frames = TaskDumpBuilderTests.Frames
    static let layout = TaskDumpBuilderTests.layout
    static let (running, suspended, enqueued, idle) = (TaskDumpBuilderTests.running, TaskDumpBuilderTests.suspended, TaskDumpBuilderTests.enqueued, TaskDumpBuilderTests.idle)

    /// The pool's queue (2 made in one place, 1 resumed elsewhere), the main actor's (1), an actor's
    /// (1), a new task (counted on both), a sleep's wake task, a suspended and a running task.
    static func census() -> TaskCensus {
        var tasks = (0..<2).map { n in
            TaskSnapshot(address: 0x1000 + UInt(n) * 0x100, id: 10 + UInt64(n), statusFlags: enqueued, chain: [0x5_0010, 0x5_0020], dependency: .executor(identity: 0, implementation: 0))
        }
        tasks.append(TaskSnapshot(address: 0x1800, id: 18, statusFlags: enqueued, chain: [0x5_0030], dependency: .executor(identity: 0, implementation: 0)))
        tasks.append(TaskSnapshot(address: 0x2000, id: 20, statusFlags: enqueued, chain: [0x6_0010], dependency: .executor(identity: 0xa1, implementation: 0xb1)))
        tasks.append(TaskSnapshot(address: 0x2100, id: 21, statusFlags: enqueued, chain: [0x6_0020], dependency: .executor(identity: 0xa0, implementation: 0)))
        tasks.append(TaskSnapshot(address: 0x3000, id: 30, statusFlags: idle, resumeFunction: 0x7_0010, notStarted: true))
        tasks.append(TaskSnapshot(address: 0x3100, id: 31, statusFlags: idle, resumeFunction: 0x7_0020, notStarted: true))
        tasks.append(TaskSnapshot(address: 0x4000, id: 40, statusFlags: suspended, chain: [0x8_0010], dependency: .continuation(0x9000)))
        tasks.append(TaskSnapshot(address: 0x4100, id: 41, statusFlags: running, chainEnd: .running))
        var census = TaskCensus(layout: .success(layout), tasks: tasks)
        census.sleeps = [0x4000: TaskCensus.Sleep(wake: 0x3100, leftNanoseconds: 1_000_000)]
        return census
    }

    static func summary(_ census: TaskCensus, queue: QueuedTaskCensus.Queue) -> (HangReport.QueuedTasks, [UInt64]) {
        var builder = TaskDumpBuilder(frames: Frames())
        let dump = builder.build(QueuedTaskCensus(queue: queue, census: census, tookMicroseconds: 0).census, unchanged: [:], sightingsSince: nil, blockedPoolThreads: [])
        return (QueuedTaskSelection.summary(dump, tookMicroseconds: 12_345), dump.tasks.map(\.id))
    }

    @Test func aStarvedPoolCountsTheTasksEnqueuedOnItAndTheNewOnesFoldedByChain() {
        let (summary, ids) = Self.summary(Self.census(), queue: .pool)
        #expect(ids == [10, 11, 18, 30])
        #expect(summary.count == 4 && summary.unavailable == nil && summary.tookMs == 12.345)
        #expect(summary.folds.map(\.count) == [2, 1, 1] && summary.folds[0].ids == [10, 11] && summary.folds[0].awaits == "pool thread")
    }

    @Test func aMainQueueHangCountsTheTasksOnASerialExecutorThatIsNoActorAndTheNewOnes() {
        let (summary, ids) = Self.summary(Self.census(), queue: .mainActor)
        #expect(ids == [20, 30])
        #expect(summary.count == 2 && summary.folds.map(\.awaits) == ["executor", nil])
    }

    @Test func foldsAndIdsAreBoundedAndWhatIsLeftOutCounted() {
        var census = TaskCensus(layout: .success(Self.layout))
        var id: UInt64 = 1
        for place in 0..<7 {
            for _ in 0..<(place == 0 ? 30 : 2) {
                census.tasks.append(
                    TaskSnapshot(address: 0x10_0000 + UInt(id) * 0x100, id: id, statusFlags: Self.enqueued, chain: [0x5_0000 + UInt(place) * 0x10],
                        dependency: .executor(identity: 0, implementation: 0)))
                id += 1
            }
        }
        let (summary, _) = Self.summary(census, queue: .pool)
        #expect(summary.count == 42 && summary.folds.count == HangReport.QueuedTasks.maxFolds && summary.foldsOmitted == 4)
        #expect(summary.folds[0].count == 30 && summary.folds[0].ids == Array(1...20))
    }

    /// An unrecognised layout, or one that failed its self-test: the field says why, and counts none.
    @Test func aLayoutNotRecognisedIsSaidNotGuessed() {
        let (unknown, _) = Self.summary(TaskCensus(layout: .failure(TaskLayoutProblem(reason: "task layout not recognised for Swift 9.9: no tasks listed"))), queue: .pool)
        #expect(unknown.unavailable == "task layout not recognised for Swift 9.9: no tasks listed" && unknown.count == 0 && unknown.folds.isEmpty)
        var failed = Self.census()
        failed.selfTest = .failed("read wrong")
        let (refused, _) = Self.summary(failed, queue: .mainActor)
        #expect(refused.unavailable?.hasPrefix("task layout not recognised for Swift") == true && refused.count == 0)
    }
}
