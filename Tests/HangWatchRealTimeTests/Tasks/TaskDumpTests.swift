import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// `hangwatch dump --tasks` against the release-built service of issue 61 (`hangwatch-tasks`):
/// 1,000 orders parked in handleOrder(_:) → waitForInventory(_:) → withCheckedContinuation, 10 in
/// Task.sleep, a task group of 8 whose parent holds actor Ledger while blocked in a synchronous
/// call and whose child 3 waits for Ledger, and an async let. Asked as the CLI asks (the signal and
/// its answer file), read as the CLI reads it (symbolicated from the report's images).
@Suite(.serialized) struct TaskDumpTests {
    @Test func everyTaskOfTheIssuesServiceIsListedFoldedWithItsChainLabelsSleepsTreeAndCycle() throws {
        let host = try TaskHost()
        let report = try host.tasks()
        #expect(report.source == "tasks" && report.pid == host.pid)
        let dump = try #require(report.tasks)
        #expect(dump.unavailable == nil && dump.selfTest == "passed", "\(dump.unavailable ?? "") \(dump.selfTest ?? "")")
        // 1,000 orders, 10 sleepers and their 10 timers' wake tasks, the Ledger's holder and its 8
        // children, the async let's parent and child: 1,031, nothing else (HangWatch's probe is not listed).
        #expect(dump.tasks.count == 1031, "\(dump.tasks.count): \(dump.folds.map { "\($0.count) \($0.state) \($0.awaits ?? "") \(report.chainNames($0.chain).prefix(2))" })")
        #expect(Set(dump.tasks.map(\.id)).count == dump.tasks.count)

        // The orders: one fold of 1,000, its chain named to the handler, each labelled.
        let orders = try #require(dump.folds.first)
        #expect(orders.count == 1000 && orders.state == "suspended" && orders.awaits == "continuation")
        #expect(Array(report.chainNames(orders.chain).prefix(2)) == ["waitForInventory(_:)", "handleOrder(_:)"], "\(report.chainNames(orders.chain))")
        #expect(orders.chainEnd == "complete")
        let byID = Dictionary(uniqueKeysWithValues: dump.tasks.map { ($0.id, $0) })
        #expect(orders.ids.allSatisfy { byID[$0]?.labels?["route"] == "POST /orders" && byID[$0]?.labels?["request.id"]?.hasPrefix("order-") == true })

        // The sleepers: 10, each with its time left (600 to 609 s asked, a few seconds ago).
        let sleeps = dump.tasks.filter { $0.awaits?.kind == "sleep" }
        #expect(sleeps.count == 10)
        #expect(sleeps.allSatisfy { ($0.awaits?.leftMs ?? 0) > 540_000 && ($0.awaits?.leftMs ?? .infinity) <= 609_500 }, "\(sleeps.map { $0.awaits?.leftMs ?? -1 })")
        #expect(sleeps.allSatisfy { report.chainNames($0.chain).contains("napFor(_:)") })
        let timers = dump.tasks.filter { $0.awaits?.kind == "sleep timer" }
        #expect(timers.count == 10 && Set(timers.compactMap(\.awaits?.sleeper)) == Set(sleeps.map(\.id)))

        // The Ledger: held by the group's parent (on the thread the service named), child 3 queued.
        let ledger = try #require(dump.actors.first)
        let holder = try #require(ledger.holder.flatMap { byID[$0] })
        #expect(ledger.state == "running" && ledger.holderThread == host.holderTid && holder.state == "running" && holder.thread == host.holderTid)
        let type = try #require(ledger.type.map { report.frames[$0].symbol ?? "" })
        #expect(type.contains("Ledger"), "\(type)")
        #expect(ledger.queue.count == 1)
        let queued = try #require(byID[ledger.queue[0]])
        #expect(queued.state == "enqueued" && queued.awaits?.actor == ledger.address && queued.parent == holder.id)
        #expect(Array(report.chainNames(queued.chain).prefix(1)) == ["groupChild(_:)"], "\(report.chainNames(queued.chain))")

        // The tree: the holder with its group of 8; the async let's parent with its child.
        let children = (holder.children ?? []).compactMap { byID[$0] }
        #expect(children.count == 8 && children.allSatisfy { $0.traits == ["group child"] && $0.group != nil })
        #expect(dump.roots.contains(holder.id))
        let asyncLet = try #require(dump.tasks.first { $0.traits == ["async let"] })
        #expect(asyncLet.parent.flatMap { byID[$0]?.awaits?.task } == asyncLet.id)

        // The holder's thread, with its stack, blocked in the synchronous call.
        let thread = try #require(report.threads?.first { $0.tid == host.holderTid })
        #expect(thread.verdict == "blocked", "\(thread)")
        let stack = try #require(thread.stack.flatMap(report.stack(at:)))
        #expect(report.frames(of: stack).contains { ($0.symbol ?? "").contains("Ledger.hold") }, "\(report.frames(of: stack).map { $0.symbol ?? "?" })")

        // Findings: the cycle (the holder, its queued child, the Ledger) and the held actor.
        let cycle = try #require(dump.findings.first { $0.kind == "cycle" })
        #expect(Set((cycle.steps ?? []).compactMap(\.task)) == [holder.id, queued.id] && cycle.actor == ledger.address)
        #expect(dump.findings.contains { $0.kind == "actor held" && $0.actor == ledger.address })
        // Nothing was seen before: no age yet, no continuation finding.
        #expect(dump.sightingsSince == nil && !dump.findings.contains { $0.kind == "continuations" })
    }

    /// Swift keeps no suspension time: a second dump says how long the orders were seen waiting
    /// the same way, and the continuation finding comes with it.
    @Test func aSecondDumpSaysHowLongTheTasksWereSeenWaiting() throws {
        let host = try TaskHost(["--orders", "200", "--sleepers", "0"])
        let first = try #require(try host.tasks().tasks)
        #expect(first.folds.first?.unchangedMs == nil)
        usleep(1_500_000)
        let second = try #require(try host.tasks().tasks)
        let orders = try #require(second.folds.first)
        #expect(orders.count == 200 && (orders.unchangedMs ?? 0) >= 1400, "\(orders.unchangedMs ?? -1)")
        #expect(second.sightingsSince != nil)
        let finding = try #require(second.findings.first { $0.kind == "continuations" })
        #expect(finding.count == 200 && (finding.unchangedMs ?? 0) >= 1400)
    }
}
