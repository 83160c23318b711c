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
}

/// The monitored thread, once it has run the attach step.
final class ThreadSlot: Sendable {
    private let value = Mutex<MonitoredThread?>(nil)
    var thread: MonitoredThread? { value.withLock { $0 } }
    func set(_ thread: MonitoredThread) { value.withLock { $0 = thread } }
}
