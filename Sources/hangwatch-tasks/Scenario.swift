import Dispatch
import Foundation
import HangWatch
import Synchronization

// The task population of issue 61: orders parked in handleOrder → waitForInventory →
// withCheckedContinuation, tasks in Task.sleep, and a task group of 8 whose parent holds actor
// Ledger while blocked in a synchronous call, one child queued on Ledger (a cycle while it lasts),
// plus an async let.

/// Every parked continuation, so nothing is leaked and `resumeAll` can end them.
final class Parked: Sendable {
    let continuations = Mutex<[CheckedContinuation<Int, Never>]>([])
    let count = Atomic<Int>(0)

    func park(_ continuation: CheckedContinuation<Int, Never>) {
        continuations.withLock { $0.append(continuation) }
        count.add(1, ordering: .releasing)
    }
}

let parked = Parked()

@inline(never)
func waitForInventory(_ order: Int) async -> Int {
    await withCheckedContinuation { parked.park($0) }
}

@inline(never)
func handleOrder(_ order: Int) async -> Int {
    let stock = await waitForInventory(order)
    return stock + order
}

@inline(never)
func napFor(_ seconds: Int) async {
    try? await Task.sleep(for: .seconds(seconds))
}

/// Released never: the Ledger's holder blocks on it (a synchronous call on an actor).
let ledgerGate = DispatchSemaphore(value: 0)
let ledgerHeld = DispatchSemaphore(value: 0)
/// The thread that holds the Ledger (blocked in `reconcile`).
let holderThread = Atomic<Int32>(0)

actor Ledger {
    var total = 0

    /// Holds the Ledger: blocks, synchronously, until `ledgerGate` is signalled (never).
    @inline(never)
    func hold() {
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        holderThread.store(Int32(link.split(separator: "/").last ?? "") ?? -1, ordering: .releasing)
        ledgerHeld.signal()
        ledgerGate.wait()
    }

    @inline(never)
    func balance() -> Int { total }
}

/// A task group of 8 whose parent then holds the Ledger (blocked in `hold`) while child 3 waits
/// for the Ledger: a task awaiting a child that awaits an actor the first holds.
@inline(never)
func reconcile() async -> Int {
    await withTaskGroup(of: Int.self) { group in
        for index in 0..<8 { group.addTask { await groupChild(index) } }
        await ledger.hold()
        var sum = 0
        for await value in group { sum += value }
        return sum
    }
}

let ledger = Ledger()

@inline(never)
func readLedger() async -> Int {
    await ledger.balance()
}

@inline(never)
func groupChild(_ index: Int) async -> Int {
    if index == 3 {
        // Once the parent holds the Ledger: then this waits for it.
        while holderThread.load(ordering: .acquiring) == 0 { await Task.yield() }
        return await readLedger()
    }
    return await waitForInventory(1000 + index)
}

@inline(never)
func fetchPrice() async -> Int { await waitForInventory(7) }

@inline(never)
func quoteWithAsyncLet() async -> Int {
    async let price = fetchPrice()
    return await price + 1
}

struct Scenario {
    var orders = 1000
    var sleepers = 10
    var sleepSeconds = 600
    var group = true
    var labels = true

    /// Continuations the scenario parks: the orders, 7 group children, the async let child.
    var expectedParked: Int { orders + (group ? 8 : 0) }

    /// Starts everything; returns once every parked task is parked (and the Ledger held).
    func start() {
        if group {
            Task { _ = await reconcile() }
            ledgerHeld.wait()
            Task { _ = await quoteWithAsyncLet() }
        }
        for order in 0..<orders {
            if labels {
                Task { _ = await HangMonitor.withLabels(["route": "POST /orders", "request.id": "order-\(order)"]) { await handleOrder(order) } }
            } else {
                Task { _ = await handleOrder(order) }
            }
        }
        for sleeper in 0..<sleepers { Task { await napFor(sleepSeconds + sleeper) } }
        while parked.count.load(ordering: .acquiring) < expectedParked { usleep(1000) }
    }
}
