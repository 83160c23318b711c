import Synchronization

/// Settings and requests the watchdog reads on every turn; written by `HangMonitor`'s API.
final class WatchdogControl: Sendable {
    let stopRequested = Atomic<Bool>(false)
    let thresholdMicroseconds: Atomic<UInt64>
    /// Nesting depth of `pause()` / `withoutHangDetection`.
    let pauseDepth = Atomic<Int>(0)
    /// Busy time before this instant does not count (start-up grace, or the last `resume()`).
    let countFromMicroseconds = Atomic<UInt64>(0)

    init(thresholdMicroseconds: UInt64) {
        self.thresholdMicroseconds = Atomic(thresholdMicroseconds)
    }

    var isPaused: Bool { pauseDepth.load(ordering: .acquiring) > 0 }
    var isStopping: Bool { stopRequested.load(ordering: .acquiring) }

    /// One more `pause()`.
    func pause() {
        pauseDepth.add(1, ordering: .acquiringAndReleasing)
    }

    /// Ends one `pause()`; the last one makes busy time count again from `now`. Returns whether it
    /// was the last (the watchdog must then look again).
    func resume(now: UInt64) -> Bool {
        while true {
            let depth = pauseDepth.load(ordering: .acquiring)
            guard depth > 0 else { return false }
            guard pauseDepth.compareExchange(expected: depth, desired: depth - 1, ordering: .acquiringAndReleasing).exchanged else {
                continue
            }
            guard depth == 1 else { return false }
            countFromMicroseconds.store(max(countFromMicroseconds.load(ordering: .acquiring), now), ordering: .releasing)
            return true
        }
    }
}

/// The monitored thread, once it has run the attach step.
final class ThreadSlot: Sendable {
    private let value = Mutex<MonitoredThread?>(nil)
    var thread: MonitoredThread? { value.withLock { $0 } }
    func set(_ thread: MonitoredThread) { value.withLock { $0 = thread } }
}
