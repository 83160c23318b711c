import HangWatchReport
@testable import HangWatch
import Testing

@Suite struct TaskFoldingTests {
    static func task(_ id: UInt64, _ state: String, _ awaits: HangReport.TaskAwaits?, chain: [Int], unchanged: Double? = nil) -> HangReport.TaskEntry {
        var entry = HangReport.TaskEntry(id: id, address: "0x\(id)", state: state, priority: 21, basePriority: 21, chain: chain)
        entry.awaits = awaits
        entry.unchangedMs = unchanged
        return entry
    }

    /// Same state, same kind of wait, same chain: one fold with every id, its longest unchanged
    /// time, and a sleep fold's least and most time left; an actor's waiters fold per actor.
    @Test func identicalTasksFoldLargestFirst() {
        let continuation = HangReport.TaskAwaits(kind: "continuation")
        var tasks = (10..<1010).map { Self.task(UInt64($0), "suspended", continuation, chain: [0, 1, 2], unchanged: $0 == 500 ? 240_000 : 1000) }
        tasks += (2000..<2010).map { Self.task(UInt64($0), "suspended", HangReport.TaskAwaits(kind: "sleep", leftMs: Double($0 - 2000) * 1000), chain: [5, 6]) }
        tasks.append(Self.task(3000, "enqueued", HangReport.TaskAwaits(kind: "actor", actor: "0xa0"), chain: [7]))
        tasks.append(Self.task(3001, "enqueued", HangReport.TaskAwaits(kind: "actor", actor: "0xb0"), chain: [7]))
        tasks.append(Self.task(4000, "suspended", continuation, chain: [0, 1, 3]))
        let folds = TaskFolding.fold(tasks)
        #expect(folds.map(\.count) == [1000, 10, 1, 1, 1])
        #expect(folds[0].ids.count == 1000 && folds[0].ids.first == 10 && folds[0].ids.last == 1009)
        #expect(folds[0].unchangedMs == 240_000 && folds[0].awaits == "continuation" && folds[0].chain == [0, 1, 2])
        #expect(folds[1].leftMs == [0, 9000] && folds[1].awaits == "sleep")
        #expect(Set(folds.dropFirst(2).map(\.awaits)) == ["actor 0xa0", "actor 0xb0", "continuation"])
    }
}
