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
        #expect(TaskLabelTable.shared.snapshot(task).isEmpty)
        let child = await HangMonitor.withLabels(["route": "GET /export"]) { () async -> [[String: String]]? in
            try? await Task.sleep(for: .milliseconds(5))
            let inner = await HangMonitor.withLabels(["request": "7"]) { () async -> [[String: String]] in
                await Task.yield()
                return TaskLabelTable.shared.snapshot(task)
            }
            #expect(inner == [["route": "GET /export"], ["request": "7"]])
            #expect(TaskLabelTable.shared.snapshot(task) == [["route": "GET /export"]])
            // A child task has labels of its own only.
            return await Task { () -> [[String: String]]? in
                UnsafeCurrentTaskSlot.currentTaskID().map { TaskLabelTable.shared.snapshot($0) }
            }.value
        }
        #expect(child == [])
        #expect(TaskLabelTable.shared.snapshot(task).isEmpty)
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
        // One thread enters and leaves labels as fast as it can; another reads them all along:
        // every read is a prefix of the sets the owner pushes, in order, never a torn or freed one.
        let stack = UnsafeLabelStack()
        let sets: [[String: String]] = (0..<4).map { ["level": "\($0)", "padding": String(repeating: "x", count: 40 + $0)] }
        let stop = Atomic<Bool>(false)
        let reads = Atomic<Int>(0)
        let bad = Mutex<[[[String: String]]]>([])
        let reader = DispatchSemaphore(value: 0)
        Thread {
            while !stop.load(ordering: .relaxed) {
                let seen = stack.snapshot()
                if seen != Array(sets.prefix(seen.count)) { bad.withLock { $0.append(seen) } }
                reads.add(1, ordering: .relaxed)
            }
            reader.signal()
        }.start()
        Self.onThread {
            for round in 0..<200_000 {
                let depth = 1 + round % sets.count
                for level in 0..<depth { stack.push(sets[level]) }
                for _ in 0..<depth { stack.pop() }
            }
        }
        stop.store(true, ordering: .relaxed)
        reader.wait()
        #expect(bad.withLock { $0 }.isEmpty)
        #expect(reads.load(ordering: .relaxed) > 0)
        #expect(stack.snapshot().isEmpty)
    }

    @Test func nestingPastTheCapacityStaysBalanced() {
        let stack = UnsafeLabelStack()
        for level in 0..<(UnsafeLabelStack.capacity + 3) { stack.push(["level": "\(level)"]) }
        #expect(stack.snapshot().count == UnsafeLabelStack.capacity)
        for _ in 0..<3 { stack.pop() }
        #expect(stack.snapshot().count == UnsafeLabelStack.capacity)
        for _ in 0..<UnsafeLabelStack.capacity { stack.pop() }
        #expect(stack.isEmpty && stack.snapshot().isEmpty)
    }
}
