import Dispatch
import Foundation
import HangWatch
import Synchronization

// hangwatch-faults queued --reports DIR --mode pool|main --count N [--seconds S]
//   Tasks waiting to run behind a hang, for the report's `queuedTasks` (threshold 200 ms):
//   - pool: a monitor watching scopes (only the pool watch reports); N tasks made in
//     `spawnQueuedOrders(count:)` park in `queuedOrder(_:)` → `waitForRestock()` on a
//     continuation; then every pool thread is blocked S seconds in `usleep` (2 x cores tasks) and
//     the continuations are resumed: the N tasks wait for a pool thread behind the blocking ones.
//   - main: a monitor watching the main queue; a job on it makes N tasks in
//     `spawnMainActorOrders(count:)`, half `Task { @MainActor in }` (not started) and half
//     hopping to the main actor from the pool (enqueued on it), then blocks the main queue S
//     seconds, so every one waits behind it.
//   Exits once a report is written (or 10 s passed), printing one JSON line: the reports written,
//   and the queued tasks that ran.

let queuedRan = Atomic<Int>(0)
let restocks = Mutex<[CheckedContinuation<Void, Never>]>([])

@inline(never)
func waitForRestock() async {
    await withCheckedContinuation { continuation in restocks.withLock { $0.append(continuation) } }
}

@inline(never)
func queuedOrder(_ index: Int) async {
    await waitForRestock()
    queuedRan.add(1, ordering: .relaxed)
}

/// The tasks that wait for a pool thread: their entry is a closure of this function.
@inline(never)
func spawnQueuedOrders(count: Int) {
    for index in 0..<count {
        Task.detached(priority: .medium) { await queuedOrder(index) }
    }
}

@MainActor @inline(never)
func mainActorOrder(_ index: Int) {
    queuedRan.add(1, ordering: .relaxed)
}

/// The tasks that wait for the main actor behind the hang.
@inline(never)
func spawnMainActorOrders(count: Int) {
    for index in 0..<count {
        if index % 2 == 0 {
            Task { @MainActor in mainActorOrder(index) }
        } else {
            Task.detached(priority: .medium) { await MainActor.run { mainActorOrder(index) } }
        }
    }
}

func runQueued(_ options: Options) -> Never {
    var configuration = HangMonitor.Configuration(serviceName: "queued", threshold: .milliseconds(200), reportDirectory: options.reports)
    configuration.repeatWindow = .zero
    let monitor = startedMonitor(configuration) { monitor in
        if options.mode == "main" { try monitor.startWatchingMainQueue() } else { try monitor.startWatchingScopes() }
    }
    let count = max(1, options.count)
    let microseconds = UInt32(options.seconds * 1e6)
    // The exit: once a report is written (the hang over), from a plain thread.
    Thread {
        usleep(600_000)
        if options.mode == "main" {
            DispatchQueue.main.async {
                spawnMainActorOrders(count: count)
                // The pool's hops reach the main actor's queue meanwhile.
                usleep(microseconds)
            }
        } else {
            spawnQueuedOrders(count: count)
            let parked = Date().addingTimeInterval(10)
            while restocks.withLock({ $0.count }) < count && Date() < parked { usleep(1000) }
            _ = awaitFreshProbe(monitor)
            for _ in 0..<(2 * ProcessInfo.processInfo.activeProcessorCount) {
                Task.detached(priority: .medium) { usleep(microseconds) }
            }
            // The blocking tasks take every pool thread first.
            usleep(50_000)
            for continuation in restocks.withLock({ parked in defer { parked = [] }; return parked }) { continuation.resume() }
        }
        let deadline = Date().addingTimeInterval(10 + options.seconds)
        while monitor.statistics.reportsWritten + monitor.statistics.writeFailures < 1 && Date() < deadline {
            usleep(20_000)
        }
        usleep(300_000)
        monitor.stop()
        print("{\"reportsWritten\":\(monitor.statistics.reportsWritten),\"ran\":\(queuedRan.load(ordering: .relaxed))}")
        exit(0)
    }.start()
    dispatchMain()
}
