import Dispatch
import Foundation
import Synchronization
import Testing

@testable import HangWatch

/// The labels in effect, as the watchdog reads them from another thread (`LabelsInEffect`).
@Suite struct LabelStackTests {
    /// The calling thread as the watchdog knows it.
    static func currentThread() -> MonitoredThread {
        MonitoredThread(tid: UnsafeCaptureBridge.currentThreadID(), startTimeTicks: 0, stackLow: 0, stackHigh: 0, name: nil, isMain: false)
    }

    /// Runs `body` on a thread of its own and waits for it.
    static func onThread(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }.start()
        done.wait()
    }

    @Test func aThreadsLabelsAreReadFromAnotherThreadNestedAndGoneAfter() {
        let seen = Mutex<[[[String: String]]]>([])
        let waiting = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let thread = Mutex<MonitoredThread?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            thread.withLock { $0 = Self.currentThread() }
            HangMonitor.withLabels(["route": "outer", "tenant": "acme"]) {
                waiting.signal()
                release.wait()
                HangMonitor.withLabels(["route": "inner"]) {
                    waiting.signal()
                    release.wait()
                }
                waiting.signal()
                release.wait()
            }
            waiting.signal()
            release.wait()
            done.signal()
        }.start()
        for _ in 0..<4 {
            waiting.wait()
            seen.withLock { $0.append(LabelsInEffect.read(thread.withLock { $0! })) }
            release.signal()
        }
        done.wait()
        #expect(seen.withLock { $0 } == [
            [["route": "outer", "tenant": "acme"]],
            [["route": "outer", "tenant": "acme"], ["route": "inner"]],
            [["route": "outer", "tenant": "acme"]],
            [],
        ])
    }

    @Test func aTasksLabelsFollowItAcrossSuspensionsAndAreNotItsChildTasks() async throws {
        let task = try #require(UnsafeCurrentTaskSlot.currentTaskID())
        #expect(UnsafeTaskLabelTable.shared.snapshot(task).isEmpty)
        let child = await HangMonitor.withLabels(["route": "GET /export"]) { () async -> [[String: String]]? in
            try? await Task.sleep(for: .milliseconds(5))
            let inner = await HangMonitor.withLabels(["request": "7"]) { () async -> [[String: String]] in
                await Task.yield()
                return UnsafeTaskLabelTable.shared.snapshot(task)
            }
            #expect(inner == [["route": "GET /export"], ["request": "7"]])
            #expect(UnsafeTaskLabelTable.shared.snapshot(task) == [["route": "GET /export"]])
            // A child task has labels of its own only.
            return await Task { () -> [[String: String]]? in
                UnsafeCurrentTaskSlot.currentTaskID().map { UnsafeTaskLabelTable.shared.snapshot($0) }
            }.value
        }
        #expect(child == [])
        #expect(UnsafeTaskLabelTable.shared.snapshot(task).isEmpty)
    }

    @Test func aTaskBlockedOnAPoolThreadIsFoundThroughThatThreadsTaskWord() async throws {
        let blocked = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let thread = Mutex<MonitoredThread?>(nil)
        let running = Task.detached {
            await HangMonitor.withLabels(["route": "blocked"]) {
                thread.withLock { $0 = Self.currentThread() }
                HangMonitor.withLabels(["step": "wait"]) {
                    blocked.signal()
                    release.wait()
                }
            }
        }
        blocked.wait()
        let seen = LabelsInEffect.read(try #require(thread.withLock { $0 }))
        release.signal()
        await running.value
        // The task's set, then the thread's own (inner).
        #expect(seen == [["route": "blocked"], ["step": "wait"]])
    }

    @Test func theWatchdogNeverSeesASetThatIsNotInEffect() {
        // One thread enters and leaves labels as fast as it can, each set a new dictionary freed
        // once left (the stack holds them unretained); another reads them all along: every read
        // is sets of one round, levels 0, 1, 2… in order, never a torn or freed one.
        let stack = UnsafeLabelStack()
        let stop = Atomic<Bool>(false)
        let reads = Atomic<Int>(0)
        let deep = Atomic<Int>(0)
        let bad = Mutex<[[[String: String]]]>([])
        let reader = DispatchSemaphore(value: 0)
        Thread {
            while !stop.load(ordering: .relaxed) {
                let seen = stack.snapshot()
                let levels = seen.map { $0["level"] ?? "?" }
                if levels != (0..<seen.count).map(String.init) || Set(seen.map { $0["round"] }).count > 1 {
                    bad.withLock { $0.append(seen) }
                }
                if seen.count > 1 { deep.add(1, ordering: .relaxed) }
                reads.add(1, ordering: .relaxed)
            }
            reader.signal()
        }.start()
        Self.onThread {
            for round in 0..<200_000 {
                let depth = 1 + round % 4
                func nest(_ level: Int) {
                    guard level < depth else { return }
                    let set = ["level": String(level), "round": String(round), "padding": String(repeating: "x", count: 24 + level)]
                    stack.push(set)
                    nest(level + 1)
                    stack.pop()
                    withExtendedLifetime(set) {}
                }
                nest(0)
            }
        }
        stop.store(true, ordering: .relaxed)
        reader.wait()
        #expect(bad.withLock { $0 }.isEmpty, "\(bad.withLock { $0.prefix(3) })")
        #expect(reads.load(ordering: .relaxed) > 0)
        #expect(stack.snapshot().isEmpty)
    }

    @Test func nestingPastTheCapacityStaysBalanced() {
        let stack = UnsafeLabelStack()
        let sets = (0..<(UnsafeLabelStack.capacity + 3)).map { ["level": "\($0)"] }
        for set in sets { stack.push(set) }
        #expect(stack.snapshot().count == UnsafeLabelStack.capacity)
        for _ in 0..<3 { stack.pop() }
        #expect(stack.snapshot().count == UnsafeLabelStack.capacity)
        for _ in 0..<UnsafeLabelStack.capacity { stack.pop() }
        #expect(stack.isEmpty && stack.snapshot().isEmpty)
        withExtendedLifetime(sets) {}
    }

    @Test func taskSlotsAreFreedWithTheirLastSetAndSpilledTasksAreStillFound() async throws {
        let table = UnsafeTaskLabelTable.shared
        let before = table.taskCount
        // Twenty tasks whose ids hash to one bucket of eight: twelve spill into the next buckets,
        // and each finds its own slot again (nested entries, readers), before and after others left.
        let base = UInt64.max / 2
        let home = UnsafeTaskLabelTable.home(base)
        let ids = Array((base..<(base + 10_000_000)).lazy.filter { UnsafeTaskLabelTable.home($0) == home }.prefix(20))
        try #require(ids.count == 20)
        let sets = ids.indices.map { ["task": "\($0)"] }
        let slots = ids.indices.map { table.enter(ids[$0], sets[$0]) }
        #expect(slots.allSatisfy { $0 >= 0 } && Set(slots).count == ids.count)
        #expect(slots.filter { $0 / UnsafeTaskLabelTable.bucket == home / UnsafeTaskLabelTable.bucket }.count == UnsafeTaskLabelTable.bucket)
        for index in ids.indices { #expect(table.snapshot(ids[index]) == [sets[index]]) }
        let nested = ["nested": "yes"]
        #expect(table.enter(ids[15], nested) == slots[15])
        #expect(table.snapshot(ids[15]) == [sets[15], nested])
        table.leave(slots[15])
        // The home bucket frees a slot: a spilled task is still found past it.
        table.leave(slots[2])
        #expect(table.snapshot(ids[19]) == [sets[19]])
        #expect(table.enter(ids[19], nested) == slots[19])
        table.leave(slots[19])
        for (index, slot) in slots.enumerated() where index != 2 { table.leave(slot) }
        #expect(table.taskCount == before)
        #expect(table.snapshot(ids[3]).isEmpty)
        withExtendedLifetime((sets, nested)) {}
    }
}
