import Foundation
import HangWatchReport
@testable import HangWatch
import Testing

/// A census turned into the report's task dump, on scripted censuses: states, chains (cut at an
/// address not proven to start a function), waits in words, sleeps, the tree, actors and holders,
/// labels, ages, folds and findings.
@Suite struct TaskDumpBuilderTests {
    /// Frames by address, in the order asked; addresses ending in 0xbad are not a function's start.
    struct Frames: TaskFrames {
        var addresses: [UInt] = []
        var plain: [UInt] = []
        mutating func asyncFrame(_ address: UInt) -> Int {
            if let index = addresses.firstIndex(of: address) { return index }
            addresses.append(address)
            return addresses.count - 1
        }
        mutating func plainFrame(_ address: UInt) -> Int {
            plain.append(address)
            return 1000 + plain.count - 1
        }
        func isResumeStart(_ address: UInt) -> Bool { address & 0xfff != 0xbad }
    }

    static let layout = TaskLayout.swift631
    static let (running, suspended, enqueued, idle): (UInt32, UInt32, UInt32, UInt32) = (0x0819, 0x4019, 0x5019, 0x0015)

    /// The issue's service in small: 3 orders on continuations (labelled), a sleeper and its wake
    /// task, a parent running on actor Ledger with a group of 2 (one queued on Ledger), a task
    /// waiting for the pool, and a task whose chain reaches an unproven address.
    static func census() -> TaskCensus {
        var tasks = (0..<3).map { n in
            TaskSnapshot(
                address: 0x1000 + UInt(n) * 0x100, id: 10 + UInt64(n), statusFlags: suspended, basePriority: 0x19, resumeFunction: 0x5_0010,
                resumeContext: 0x9000, chain: [0x5_0010, 0x5_0020, 0x5_0030], dependency: .continuation(0x9000), dependencyRecord: 0x9100)
        }
        tasks.append(
            TaskSnapshot(
                address: 0x2000, id: 20, statusFlags: suspended, basePriority: 0x19, resumeContext: 0xa000, chain: [0x6_0010, 0x6_0020],
                dependency: .continuation(0xa000)))
        tasks.append(TaskSnapshot(address: 0x2100, id: 21, statusFlags: idle, basePriority: 0x15, resumeFunction: 0x6_0100, notStarted: true))
        tasks.append(
            TaskSnapshot(
                address: 0x3000, id: 30, statusFlags: running, basePriority: 0x19, chainEnd: .running, children: [0x3100, 0x3200], groups: [0x3900]))
        tasks.append(
            TaskSnapshot(
                address: 0x3100, id: 31, jobFlags: 1 << 24 | 1 << 26, statusFlags: suspended, basePriority: 0x19, chain: [0x5_0010, 0x7_0010],
                dependency: .continuation(0x1), parent: 0x3000, group: 0x3900))
        tasks.append(
            TaskSnapshot(
                address: 0x3200, id: 32, jobFlags: 1 << 24 | 1 << 26, statusFlags: enqueued, basePriority: 0x19, chain: [0x7_0020, 0x7_0010],
                dependency: .executor(identity: 0xa0, implementation: 0), parent: 0x3000, group: 0x3900))
        tasks.append(
            TaskSnapshot(address: 0x4000, id: 40, statusFlags: enqueued, chain: [0x8_0010], dependency: .executor(identity: 0, implementation: 0)))
        tasks.append(TaskSnapshot(address: 0x4100, id: 41, statusFlags: suspended, chain: [0x8_0020, 0x8_0bad, 0x8_0030], dependency: .continuation(0x2)))
        var census = TaskCensus(layout: .success(layout), tasks: tasks)
        census.threads = [UnsafeTaskThreadWords.Look(tid: 77, task: 0x3000, executor: 0xa0), UnsafeTaskThreadWords.Look(tid: 78, task: 0, executor: 0)]
        census.actors = [0xa0: ActorSnapshot(address: 0xa0, metadata: 0xfeed0, flags: 0x1902, queue: [0x3200])]
        census.sleeps = [0x2000: TaskCensus.Sleep(wake: 0x2100, leftNanoseconds: 599_000_000_000)]
        census.labels = [10: [["route": "POST /orders", "request.id": "r-10"]], 11: [["route": "POST /orders"], ["request.id": "r-11"]]]
        census.selfTest = .passed
        return census
    }

    static func build(_ census: TaskCensus, unchanged: [UInt64: UInt64] = [:], blocked: [Int32] = []) -> (HangReport.TaskDump, Frames) {
        var builder = TaskDumpBuilder(frames: Frames())
        let dump = builder.build(census, unchanged: unchanged, sightingsSince: nil, blockedPoolThreads: blocked)
        return (dump, builder.frames)
    }

    @Test func eachTaskSaysItsStateWaitChainAndLabels() throws {
        let (dump, frames) = Self.build(Self.census(), unchanged: [10: 90_000_000, 11: 30_000_000])
        let byID = Dictionary(uniqueKeysWithValues: dump.tasks.map { ($0.id, $0) })
        #expect(dump.tasks.map(\.id) == [10, 11, 12, 20, 21, 30, 31, 32, 40, 41])
        let order = try #require(byID[10])
        #expect(order.state == "suspended" && order.awaits == HangReport.TaskAwaits(kind: "continuation"))
        #expect(order.chain.map { frames.addresses[$0] } == [0x5_0010, 0x5_0020, 0x5_0030] && order.chainEnd == "complete")
        #expect(order.labels == ["route": "POST /orders", "request.id": "r-10"] && order.unchangedMs == 90_000)
        #expect(byID[11]?.labels == ["route": "POST /orders", "request.id": "r-11"])
        #expect(byID[20]?.awaits == HangReport.TaskAwaits(kind: "sleep", leftMs: 599_000))
        #expect(byID[21]?.state == "not started" && byID[21]?.awaits == HangReport.TaskAwaits(kind: "sleep timer", sleeper: 20))
        #expect(byID[21]?.entry.map { frames.addresses[$0] } == 0x6_0100)
        #expect(byID[30]?.state == "running" && byID[30]?.thread == 77 && byID[30]?.children == [31, 32] && byID[30]?.chainEnd == "running: its chain is on its thread's stack")
        #expect(byID[31]?.traits == ["group child"] && byID[31]?.parent == 30 && byID[31]?.group == "0x3900")
        #expect(byID[32]?.awaits == HangReport.TaskAwaits(kind: "actor", actor: "0xa0"))
        #expect(byID[40]?.awaits == HangReport.TaskAwaits(kind: "pool thread"))
        // Cut at the address that is no function's start.
        #expect(byID[41]?.chain.map { frames.addresses[$0] } == [0x8_0020] && byID[41]?.chainEnd == "async resume address unproven")
        #expect(dump.roots == [30])
    }

    @Test func theActorSaysItsHolderAndQueueAndTheFindingsComeFirst() throws {
        let (dump, frames) = Self.build(Self.census(), unchanged: [10: 90_000_000, 11: 30_000_000], blocked: [78])
        let ledger = try #require(dump.actors.first)
        #expect(ledger.address == "0xa0" && ledger.state == "running" && ledger.priority == 0x19 && ledger.holder == 30 && ledger.holderThread == 77)
        #expect(ledger.queue == [32] && ledger.type == 1000 && frames.plain == [0xfeed0])
        let kinds = dump.findings.map(\.kind)
        #expect(kinds == ["cycle", "actor held", "continuations", "pool starved"], "\(kinds)")
        #expect(dump.findings[0].steps == [.init(task: 30), .init(task: 32), .init(actor: "0xa0")] && dump.findings[0].threads == [77])
        #expect(dump.findings[1].tasks == [30, 32] && dump.findings[1].count == 1)
        let orders = try #require(dump.findings[2].fold.map { dump.folds[$0] })
        #expect(orders.ids == [10, 11, 12] && dump.findings[2].unchangedMs == 90_000 && dump.findings[2].count == 3)
        #expect(dump.findings[3].tasks == [40] && dump.findings[3].threads == [78])
    }

    @Test func noBlockedPoolThreadNoStarvationAndNoAgeNoContinuationFinding() {
        let (dump, _) = Self.build(Self.census())
        #expect(dump.findings.map(\.kind) == ["cycle", "actor held"])
    }

    @Test func anUnrecognisedLayoutOrAFailedSelfTestListsNothingAndSaysWhy() {
        var census = Self.census()
        census.layout = .failure(TaskLayoutProblem(reason: "task layout not recognised for Swift 6.4 (…): no tasks listed"))
        let (unrecognised, _) = Self.build(census)
        #expect(unrecognised.tasks.isEmpty && unrecognised.unavailable == "task layout not recognised for Swift 6.4 (…): no tasks listed")
        census = Self.census()
        census.selfTest = .failed("HangWatch's probe task read with id 5, the runtime says 6")
        let (failed, _) = Self.build(census)
        #expect(failed.tasks.isEmpty && failed.folds.isEmpty)
        #expect(failed.unavailable?.hasSuffix("(HangWatch's probe task read with id 5, the runtime says 6): no tasks listed") == true, "\(failed.unavailable ?? "")")
    }

    @Test func theProbeTaskIsNotListed() {
        var census = Self.census()
        census.probe = 0x4100
        let (dump, _) = Self.build(census)
        #expect(!dump.tasks.contains { $0.id == 41 })
    }

    /// The self-test's verdict on the probe, as a table.
    @Test func theSelfTestJudgesWhatWasReadOfTheProbe() {
        let parked = TaskSnapshot(address: 0x100, id: 9, statusFlags: Self.suspended, chain: [0x1], dependency: .continuation(0x1))
        #expect(TaskDumpSelfTest.judge(probe: 0x100, id: 9, read: parked, layout: Self.layout) == .passed)
        #expect(TaskDumpSelfTest.judge(probe: 0x100, id: 10, read: parked, layout: Self.layout) == .failed("HangWatch's probe task read with id 9, the runtime says 10"))
        #expect(TaskDumpSelfTest.judge(probe: 0x100, id: 9, read: nil, layout: Self.layout) == .failed("HangWatch's probe task was not found among the tasks"))
        var running = parked
        running.statusFlags = Self.running
        #expect(TaskDumpSelfTest.judge(probe: 0x100, id: 9, read: running, layout: Self.layout) == .notRun("HangWatch's probe task had not yet parked"))
        var wrong = parked
        wrong.dependency = .group(0x5)
        if case .failed = TaskDumpSelfTest.judge(probe: 0x100, id: 9, read: wrong, layout: Self.layout) {} else { Issue.record("not failed") }
    }
}
