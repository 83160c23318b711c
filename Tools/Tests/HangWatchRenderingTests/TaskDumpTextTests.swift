import Foundation
import HangWatchRendering
import HangWatchReport
import HangWatchTestSupport
import Testing

/// `hangwatch dump --tasks`'s text, as strings: findings first, the folds, the tree, the actors.
@Suite(.serialized) struct TaskDumpTextTests {
    static let symbols = [
        "(1) await resume partial function for tasks.waitForInventory(Swift.Int) async -> Swift.Int",
        "(1) await resume partial function for tasks.handleOrder(Swift.Int) async -> Swift.Int",
        "(2) await resume partial function for tasks.napFor(Swift.Int) async -> ()",
        "(1) await resume partial function for tasks.groupChild(Swift.Int) async -> Swift.Int",
        "full type metadata for tasks.Ledger",
        "tasks.Ledger.hold() -> ()",
    ]

    /// 1,000 orders (two seen unchanged for 4 min), 2 sleepers, a holder of actor Ledger running
    /// on thread 77 with a group of 2 children, one queued on the Ledger; the cycle and the held
    /// actor as findings, and the orders' continuation finding.
    static func report() -> HangReport {
        var report = ReportFixtures.report()
        report.source = "tasks"
        // The service's own image is `tasks`: its functions are named without the module.
        report.images = [HangReport.Image(path: "/srv/tasks/tasks", buildId: "abcdef0123", base: "0x555500000000", size: 0x10000, isMainExecutable: true)]
        report.frames = symbols.enumerated().map { index, symbol in
            HangReport.Frame(address: "0x\(String(0x1000 + index * 16, radix: 16))", image: 0, offset: nil, symbol: symbol, async: index < 4 ? true : nil)
        }
        report.stacks = [HangReport.Stack(frames: [5], truncated: false)]
        report.threads = [HangReport.ThreadSnapshot(tid: 77, name: "oot.default-qos", state: "S", syscall: "futex", stack: 0, verdict: "blocked")]
        var tasks = (10..<1010).map { id -> HangReport.TaskEntry in
            var task = HangReport.TaskEntry(id: UInt64(id), address: "0x\(id)", state: "suspended", priority: 25, basePriority: 25, chain: [0, 1])
            task.awaits = HangReport.TaskAwaits(kind: "continuation")
            task.labels = ["route": "POST /orders", "request.id": "order-\(id)"]
            if id < 12 { task.unchangedMs = 240_000 }
            return task
        }
        for (id, left) in [(2000, 599_000.0), (2001, 604_000.0)] {
            var sleeper = HangReport.TaskEntry(id: UInt64(id), address: "0x\(id)", state: "suspended", priority: 25, basePriority: 25, chain: [2])
            sleeper.awaits = HangReport.TaskAwaits(kind: "sleep", leftMs: left)
            tasks.append(sleeper)
        }
        var holder = HangReport.TaskEntry(id: 1, address: "0x1", state: "running", priority: 25, basePriority: 25, chainEnd: "running: its chain is on its thread's stack")
        holder.thread = 77
        holder.children = [3, 5]
        var parked = HangReport.TaskEntry(id: 3, address: "0x3", state: "suspended", priority: 25, basePriority: 25, chain: [0, 3])
        parked.traits = ["group child"]
        parked.group = "0x900"
        parked.parent = 1
        parked.awaits = HangReport.TaskAwaits(kind: "continuation")
        var queued = HangReport.TaskEntry(id: 5, address: "0x5", state: "enqueued", priority: 25, basePriority: 25, chain: [3])
        queued.traits = ["group child"]
        queued.group = "0x900"
        queued.parent = 1
        queued.awaits = HangReport.TaskAwaits(kind: "actor", actor: "0xa0")
        tasks += [holder, parked, queued]
        var dump = HangReport.TaskDump(selfTest: "passed", tasks: tasks, roots: [1])
        var ledger = HangReport.TaskActor(address: "0xa0", state: "running", priority: 25, queue: [5])
        ledger.type = 4
        ledger.holder = 1
        ledger.holderThread = 77
        dump.actors = [ledger]
        var orders = HangReport.TaskFold(count: 1000, state: "suspended", awaits: "continuation", chain: [0, 1], chainEnd: "complete", entry: nil, ids: (10..<1010).map(UInt64.init))
        orders.unchangedMs = 240_000
        var sleeps = HangReport.TaskFold(count: 2, state: "suspended", awaits: "sleep", chain: [2], chainEnd: "complete", entry: nil, ids: [2000, 2001])
        sleeps.leftMs = [599_000, 604_000]
        dump.folds = [orders, sleeps]
        var cycle = HangReport.TaskFinding(kind: "cycle")
        cycle.steps = [.init(task: 1), .init(task: 5), .init(actor: "0xa0")]
        cycle.actor = "0xa0"
        cycle.threads = [77]
        var held = HangReport.TaskFinding(kind: "actor held")
        held.actor = "0xa0"
        var waiting = HangReport.TaskFinding(kind: "continuations")
        waiting.fold = 0
        waiting.count = 1000
        waiting.unchangedMs = 240_000
        dump.findings = [cycle, held, waiting]
        dump.scan = HangReport.TaskScan(mappings: 40, bytes: 64 << 20, candidates: 1020, scanMs: 52, readMs: 9, tookMs: 120)
        report.tasks = dump
        return report
    }

    static func render(_ report: HangReport, over: Double = 60_000, ids: Bool = false) -> [String] {
        Text.utc = true
        return TaskDumpText(terminal: Terminal(colors: false, width: 120), maxFrames: 8, suspendedOverMs: over, showIDs: ids).render(report)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    @Test func theHeaderCountsTheTasksAndSaysWhatHowLongMeans() {
        let lines = Self.render(Self.report())
        #expect(lines[0].hasPrefix("task dump of billing (pid 42, host host-1) at "), "\(lines[0])")
        #expect(lines[1] == "1,005 tasks (1 running, 1 enqueued, 1,003 suspended), 1 thread; scan 52ms of 64 MiB, read 9ms, took 120ms", "\(lines[1])")
        #expect(lines[2].hasPrefix("how long: Swift keeps no time of a suspension;") && lines[2].contains("the first of this process: ask again"))
    }

    @Test func findingsComeFirstTheCycleTheHeldActorAndTheContinuationsPastTheBound() throws {
        let lines = Self.render(Self.report())
        let start = try #require(lines.firstIndex(of: "FINDINGS"))
        #expect(
            lines[start + 1]
                == "CYCLE  task 1 → task 5 → actor Ledger 0xa0 → task 1: each waits for the next; none can go on while this lasts (thread 77 \"oot.default-qos\" blocked in futex)")
        #expect(lines[start + 2] == "HELD   actor Ledger 0xa0: running, held by task 1 (thread 77 \"oot.default-qos\" blocked in futex); 1 waiting: tasks 5")
        #expect(
            lines[start + 3]
                == "WAITING 1,000 tasks wait on a continuation made in waitForInventory(_:) ← handleOrder(_:), unchanged for 4.0m (over 1.0m: a continuation nobody resumes?)")
        // Under a bound above their age, no such finding.
        #expect(!Self.render(Self.report(), over: 300_000).contains { $0.hasPrefix("WAITING") })
        var one = Self.report()
        one.tasks?.folds[0].count = 1
        #expect(Self.render(one).contains { $0.hasPrefix("WAITING 1 task waits on a continuation made in waitForInventory(_:)") })
        // A name hundreds of characters long (a thunk's) is cut to the width.
        var long = Self.report()
        long.frames[1].symbol = "tasks." + String(repeating: "reabstraction thunk helper ", count: 20) + "(Swift.Int) async -> Swift.Int"
        let cut = try #require(Self.render(long).first { $0.hasPrefix("       ← reabstraction thunk helper") }, "\(Self.render(long))")
        #expect(cut.count <= 9 + 120 && cut.hasSuffix("…"), "\(cut)")
    }

    @Test func identicalChainsAreFoldedWithTheirLabelsAndIdsOnRequest() throws {
        let lines = Self.render(Self.report())
        let start = try #require(lines.firstIndex { $0.hasPrefix("GROUPS") })
        #expect(lines[start + 1] == "  1,000 tasks suspended, on a continuation, unchanged for 4.0m (longest)")
        #expect(lines[start + 2] == "      in waitForInventory(_:)")
        #expect(lines[start + 3] == "       ← handleOrder(_:)")
        #expect(lines[start + 4] == "      labels: request.id: 1,000 values; route=POST /orders ×1,000")
        #expect(lines[start + 5] == "      ids: 10…1009 (1,000)")
        #expect(lines[start + 6] == "  2 tasks suspended, in Task.sleep, 10.0m–10.1m left")
        let all = Self.render(Self.report(), ids: true)
        #expect(all.contains { $0.hasPrefix("      ids: 10, 11, 12, ") && $0.hasSuffix(", 1008, 1009") })
    }

    @Test func theTreeShowsTheHolderItsThreadsStackItsGroupAndTheActor() throws {
        let lines = Self.render(Self.report())
        let start = try #require(lines.firstIndex { $0.hasPrefix("TREE") })
        #expect(lines[start + 1] == "task 1: running on thread 77, holds actor Ledger 0xa0")
        #expect(lines[start + 2] == "    thread 77 \"oot.default-qos\" blocked in futex")
        #expect(lines[start + 3] == "      #0  Ledger.hold()")
        #expect(lines[start + 4] == "    task group 0x900: 2 children")
        #expect(lines[start + 5] == "        task 3 [group child]: suspended, on a continuation  in waitForInventory(_:) ← groupChild(_:)")
        #expect(lines[start + 6] == "        task 5 [group child]: enqueued, waiting for actor Ledger 0xa0 (held by task 1)  in groupChild(_:)")
        #expect(lines.last == "  actor Ledger 0xa0: running, held by task 1 (thread 77 \"oot.default-qos\" blocked in futex); 1 waiting: tasks 5")
    }

    @Test func anAnswerWithoutTasksOrAnUnrecognisedLayoutSaysSoInOneLine() {
        var report = Self.report()
        report.tasks = HangReport.TaskDump(unavailable: "task layout not recognised for Swift 6.4 (…): no tasks listed")
        #expect(Array(Self.render(report).dropFirst()) == ["task layout not recognised for Swift 6.4 (…): no tasks listed"])
        report.tasks = nil
        #expect(Self.render(report).dropFirst().first?.hasPrefix("no tasks in this answer: the monitor answered with a thread dump") == true)
    }
}
