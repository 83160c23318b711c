@_spi(Internal) import HangWatchReport
import Synchronization

/// A stop asked of one start's lanes (`MonitorAssembly`: each start has its own, so a stop that
/// waits for its lanes is never undone by a start that came after it).
final class StopFlag: Sendable {
    private let raised = Atomic<Bool>(false)
    var isRaised: Bool { raised.load(ordering: .acquiring) }
    func raise() { raised.store(true, ordering: .releasing) }
}

/// Settings and requests the watchdog reads on every turn; written by `HangMonitor`'s API (they
/// outlive a start: a threshold set while stopped holds at the next start).
final class WatchdogControl: Sendable {
    let thresholdMicroseconds: Atomic<UInt64>
    /// Nesting depth of `pause()` / `withoutHangDetection`.
    let pauseDepth = Atomic<Int>(0)
    /// Busy time before this instant does not count (start-up grace, or the last `resume()`).
    let countFromMicroseconds = Atomic<UInt64>(0)

    init(thresholdMicroseconds: UInt64) {
        self.thresholdMicroseconds = Atomic(thresholdMicroseconds)
    }

    var isPaused: Bool { pauseDepth.load(ordering: .acquiring) > 0 }

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

/// The monitored thread, once it has run the attach step; and the last few threads that ran it
/// (a queue's work moves between libdispatch workers), any of which the source may point the
/// capture back at (`select(tid:)`).
final class ThreadSlot: Sendable {
    private struct State {
        var current: MonitoredThread?
        var attached: [MonitoredThread] = []
        /// Why there is no thread to capture when `current` is nil.
        var whyNoThread = StackSample.Failure.threadNotAttached
    }
    private let value = Mutex(State())
    var thread: MonitoredThread? { value.withLock { $0.current } }

    /// The thread to capture, or why there is none.
    var capture: (thread: MonitoredThread?, whyNoThread: StackSample.Failure) { value.withLock { ($0.current, $0.whyNoThread) } }

    /// No thread is to be captured, for `reason` (the work is known to run on a thread that cannot
    /// be captured: showing another thread's stack would name the wrong culprit). The next
    /// `set` or `select` ends it.
    func vacate(_ reason: StackSample.Failure) {
        value.withLock { state in
            state.current = nil
            state.whyNoThread = reason
        }
    }

    /// Captures `thread`, which never ran the attach step (the sampler prepares it for captures),
    /// until the next `set` or `select`.
    func adopt(_ thread: MonitoredThread) {
        value.withLock { state in
            state.current = thread
            state.whyNoThread = .threadNotAttached
        }
    }

    func set(_ thread: MonitoredThread) {
        value.withLock { state in
            state.current = thread
            state.whyNoThread = .threadNotAttached
            state.attached.removeAll { $0.tid == thread.tid }
            state.attached.append(thread)
            if state.attached.count > 8 { state.attached.removeFirst() }
        }
    }

    /// Makes the attached thread `tid` the one captured. False when no thread of that id ran the
    /// attach step (among the last eight).
    @discardableResult
    func select(tid: Int32) -> Bool {
        value.withLock { state in
            // The same thread still (a thread id can be given to a new thread once the old one
            // exits): checked from another thread only.
            guard let thread = state.attached.last(where: { $0.tid == tid }),
                tid == UnsafeCaptureBridge.currentThreadID() || thread.startTimeTicks == 0
                    || ProcTask(tid: tid).stat()?.startTimeTicks == thread.startTimeTicks
            else { return false }
            state.current = thread
            state.whyNoThread = .threadNotAttached
            return true
        }
    }
}
