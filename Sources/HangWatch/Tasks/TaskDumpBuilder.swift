import Foundation
import HangWatchReport

/// Where a task dump's frames go: the report's frame table (`ReportStackTable`), or a test's.
protocol TaskFrames {
    /// The index of an async caller's frame (added to the report's frames).
    mutating func asyncFrame(_ address: UInt) -> Int
    /// The index of a plain frame (an actor's type metadata).
    mutating func plainFrame(_ address: UInt) -> Int
    /// Whether an address read from the heap is a function's first instruction.
    func isResumeStart(_ address: UInt) -> Bool
}

extension ReportStackTable: TaskFrames {
    func isResumeStart(_ address: UInt) -> Bool { images.isAsyncResumeStart(address) }
}

/// Turns a census (`TaskCensus`) into the report's task dump: each task's state, thread, chain
/// (only the resume addresses proven to be a function's first instruction are kept, as a hang
/// report's async callers are), what it awaits, its labels and how long it was seen unchanged;
/// then the tree, the folds, the actors and the findings. Pure: frames come from the caller's
/// frame table, and whether an address is a function's start from the caller's images.
struct TaskDumpBuilder<Frames: TaskFrames> {
    var frames: Frames
    private var proven: [UInt: Bool] = [:]

    init(frames: Frames) {
        self.frames = frames
    }

    /// The dump of `census`; `unchanged`: how long each task (by id) was seen unchanged, µs;
    /// `blockedPoolThreads`: pool threads blocked in a system call (from the same dump's threads).
    mutating func build(
        _ census: TaskCensus, unchanged: [UInt64: UInt64], sightingsSince: Date?, blockedPoolThreads: [Int32]
    ) -> HangReport.TaskDump {
        var dump = HangReport.TaskDump(selfTest: census.selfTest.text, sightingsSince: sightingsSince)
        dump.scan = HangReport.TaskScan(
            mappings: census.mappings, bytes: census.bytes, candidates: census.candidates,
            rejected: Dictionary(census.rejected.map { ($0.key.rawValue, $0.value) }, uniquingKeysWith: +),
            scanMs: Double(census.scanNanoseconds) / 1e6, readMs: Double(census.readNanoseconds) / 1e6, stoppedEarly: census.stoppedEarly)
        let layout: TaskLayout
        switch census.layout {
        case .failure(let problem):
            dump.unavailable = problem.reason
            return dump
        case .success(let known):
            layout = known
        }
        if case .failed(let why) = census.selfTest {
            dump.unavailable = "task layout not recognised for Swift \(TaskLayout.builtWithSwift) (\(why)): no tasks listed"
            return dump
        }
        let tasks = census.tasks.filter { $0.address != census.probe }.sorted { $0.id < $1.id }
        let idOf = Dictionary(tasks.map { ($0.address, $0.id) }, uniquingKeysWith: { first, _ in first })
        let threadOf = Dictionary(census.threads.filter { $0.task != 0 }.map { ($0.task, $0.tid) }, uniquingKeysWith: { first, _ in first })
        var holders: [UInt: (task: UInt, tid: Int32)] = [:]
        for look in census.threads where look.executor != 0 && look.task != 0 { holders[look.executor] = (look.task, look.tid) }
        let wakes = Dictionary(census.sleeps.map { ($0.value.wake, $0.key) }, uniquingKeysWith: { first, _ in first })
        let tree = TaskTree(tasks)
        dump.tasks = tasks.map { task in
            var entry = entry(task, layout: layout, idOf: idOf, sleep: census.sleeps[task.address], sleeper: wakes[task.address])
            entry.thread = threadOf[task.address]
            entry.children = tree.children[task.address].map { $0.compactMap { idOf[$0] } }
            entry.labels = census.labels[task.id].flatMap { HangLabels.bounded($0).labels }
            entry.unchangedMs = unchanged[task.id].map { Double($0) / 1000 }
            return entry
        }
        dump.roots = tree.roots.compactMap { idOf[$0] }
        dump.actors = census.actors.values.sorted { $0.address < $1.address }.map { actor in
            self.actor(actor, holder: holders[actor.address], idOf: idOf, threadsKnown: !census.threads.isEmpty)
        }
        dump.folds = TaskFolding.fold(dump.tasks)
        let graph = TaskWaitGraph(tasks: tasks, layout: layout, holders: holders.mapValues(\.task))
        dump.findings = TaskFindings.make(dump: dump, cycles: graph.cycles(), idOf: idOf, blockedPoolThreads: blockedPoolThreads)
        return dump
    }

    private mutating func entry(
        _ task: TaskSnapshot, layout: TaskLayout, idOf: [UInt: UInt64], sleep: TaskCensus.Sleep?, sleeper: UInt?
    ) -> HangReport.TaskEntry {
        var chain: [Int] = []
        var end = task.chainEnd
        for address in task.chain {
            guard isProven(address) else {
                end = .unproven
                break
            }
            chain.append(frames.asyncFrame(address))
        }
        var entry = HangReport.TaskEntry(
            id: task.id, address: Hex.format(task.address), state: TaskState(task, layout: layout).rawValue,
            priority: TaskState.priority(task, layout: layout), basePriority: Int(task.basePriority), chain: chain, chainEnd: end.rawValue)
        let traits = TaskState.traits(task, layout: layout)
        entry.traits = traits.isEmpty ? nil : traits
        entry.parent = task.parent.flatMap { idOf[$0] }
        entry.group = task.group.map(Hex.format)
        if task.resumeFunction != 0, isProven(task.resumeFunction) { entry.entry = frames.asyncFrame(task.resumeFunction) }
        entry.awaits = Self.awaits(task.dependency, idOf: idOf, sleep: sleep, sleeper: sleeper)
        entry.changedWhileRead = task.changedWhileRead ? true : nil
        return entry
    }

    private mutating func isProven(_ address: UInt) -> Bool {
        if let known = proven[address] { return known }
        let answer = frames.isResumeStart(address)
        proven[address] = answer
        return answer
    }

    /// What the dependency record says, in the report's words.
    static func awaits(_ dependency: TaskSnapshot.Dependency, idOf: [UInt: UInt64], sleep: TaskCensus.Sleep?, sleeper: UInt?) -> HangReport.TaskAwaits? {
        switch dependency {
        case .none:
            guard let sleeper else { return nil }
            return HangReport.TaskAwaits(kind: "sleep timer", sleeper: idOf[sleeper])
        case .continuation:
            guard let sleep else { return HangReport.TaskAwaits(kind: "continuation") }
            return HangReport.TaskAwaits(kind: "sleep", leftMs: sleep.leftNanoseconds.map { Double($0) / 1e6 }, note: sleep.unknown)
        case .task(let other):
            return HangReport.TaskAwaits(kind: "task", task: idOf[other], note: idOf[other] == nil ? "task at \(Hex.format(other)), not listed" : nil)
        case .group(let group):
            return HangReport.TaskAwaits(kind: "task group", group: Hex.format(group))
        case .executor(0, _):
            return HangReport.TaskAwaits(kind: "pool thread")
        case .executor(let identity, 0):
            return HangReport.TaskAwaits(kind: "actor", actor: Hex.format(identity))
        case .executor(let identity, _):
            return HangReport.TaskAwaits(kind: "executor", executor: Hex.format(identity))
        case .unknown(let kind):
            return HangReport.TaskAwaits(kind: "unknown", note: "dependency kind \(kind) is not one this HangWatch knows")
        }
    }

    private mutating func actor(_ actor: ActorSnapshot, holder: (task: UInt, tid: Int32)?, idOf: [UInt: UInt64], threadsKnown: Bool)
        -> HangReport.TaskActor
    {
        let queued = actor.queue.compactMap { idOf[$0] }
        var entry = HangReport.TaskActor(address: Hex.format(actor.address), state: actor.state, priority: Int(actor.maxPriority), queue: queued)
        entry.type = actor.metadata == 0 ? nil : frames.plainFrame(actor.metadata)
        entry.otherJobs = actor.queue.count > queued.count ? actor.queue.count - queued.count : nil
        entry.queueEnd = actor.queueEnd
        if let holder {
            entry.holder = idOf[holder.task]
            entry.holderThread = holder.tid
        } else if actor.state == "running" {
            entry.holderUnknown =
                threadsKnown
                ? "no thread found running it (the main thread's words are not read)"
                : "where threads keep their executor is not learnt yet (HangWatch's probe task has not run)"
        }
        return entry
    }
}
