import Dispatch
import Foundation
import Synchronization

/// A queue as a source of activity, by pinging it (a dispatch queue, or anything that runs
/// closures in order: a SwiftNIO event loop). Once per period (the threshold) a thread enqueues a
/// tiny block. A period later, a ping the queue has not run yet is overdue: the queue is declared
/// busy since the ping was enqueued, which wakes the watchdog, and the threshold has already
/// passed, so the hang is recorded at once; the ping, when it finally runs, ends it. A queue that
/// answers in time never touches the watchdog.
///
/// The thread to capture is whichever thread ran the last ping: the one draining the queue. (On
/// Linux, after `dispatchMain()` — and so for an `async` `@main` and the MainActor — that is a
/// libdispatch worker, not the process's main thread.) The ping block attaches each new draining
/// thread (alternate signal stack) the first time it runs there.
///
/// Measurement limits: a stall is seen from the ping's enqueueing, so a report's duration is a
/// lower bound (the stall began up to one period earlier) and detection comes 1 to 2 thresholds
/// after the stall began. Idle cost: one wake-up of the pinging thread and one tiny block per period.
final class QueueActivitySource: ActivitySource, @unchecked Sendable {
    let kind: ActivitySourceKind
    /// Set by `start`, before the pinging thread runs.
    private var latch: ActivityLatch!
    private let enqueue: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// The pinging thread sleeps on this between pings; `invalidate()` signals it to finish.
    private let sleeper = DispatchSemaphore(value: 0)
    private let periodNanoseconds: Int
    /// The ping's state, and when the outstanding one was enqueued (coarse ns). Taken by the
    /// pinging thread and by the ping, once per period each: the latch writes stay in order with it.
    private struct PingState {
        var outstanding = false
        /// The watchdog was told the queue is busy (the ping is overdue).
        var declared = false
        var enqueuedAt: UInt64 = 0
    }
    private let state = Mutex(PingState())
    private let stopped = Atomic<Bool>(false)
    /// The draining thread the capture side is attached to (only the ping block touches it).
    private let attachedThread = Mutex<pthread_t?>(nil)
    private var attach: @Sendable () -> Void = {}
    /// `CLOCK_MONOTONIC_COARSE` in nanoseconds (the latch's clock); scripted in tests.
    private let coarseNow: @Sendable () -> UInt64

    static let enter = HangMonitor.Activity.afterWaiting.rawValue
    static let leave = HangMonitor.Activity.beforeWaiting.rawValue

    init(
        kind: ActivitySourceKind, periodMicroseconds: UInt64,
        coarseNow: @escaping @Sendable () -> UInt64 = QueueActivitySource.coarseNanoseconds,
        enqueue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
    ) {
        self.enqueue = enqueue
        self.coarseNow = coarseNow
        self.kind = kind
        periodNanoseconds = Int(max(10_000, periodMicroseconds)) * 1000
    }

    /// Starts the pinging thread: one thread that sleeps a period between pings (a libdispatch
    /// timer would wake its timer thread and a worker each period as well). The first ping on each
    /// new draining thread runs `attach` there.
    func start(edges latch: ActivityLatch, attach: @escaping @Sendable () -> Void) {
        connect(edges: latch, attach: attach)
        NamedThread.start("hangwatch-ping", stackSize: 256 << 10) { [self] in
            while !stopped.load(ordering: .relaxed) {
                ping()
                _ = sleeper.wait(timeout: .now() + .nanoseconds(periodNanoseconds))
            }
        }
    }

    /// Where the edges go, without the pinging thread (tests call `ping()` themselves).
    func connect(edges latch: ActivityLatch, attach: @escaping @Sendable () -> Void) {
        self.latch = latch
        self.attach = attach
    }

    /// Once per period, on the pinging thread: declare an overdue ping busy, or enqueue the next one.
    func ping() {
        guard !stopped.load(ordering: .relaxed) else { return }
        let enqueue = state.withLock { state -> Bool in
            if state.outstanding {
                if !state.declared {
                    state.declared = true
                    latch.recordBusy(Self.enter, sinceCoarseNanoseconds: state.enqueuedAt)
                }
                return false
            }
            state.outstanding = true
            state.enqueuedAt = coarseNow()
            return true
        }
        guard enqueue else { return }
        self.enqueue { [self] in
            guard !stopped.load(ordering: .relaxed) else { return }
            let current = pthread_self()
            let isNew = attachedThread.withLock { attached -> Bool in
                if let attached, pthread_equal(attached, current) != 0 { return false }
                attached = current
                return true
            }
            if isNew { attach() }
            state.withLock { state in
                if state.declared { latch.record(Self.leave) }
                state = PingState()
            }
        }
    }

    static func coarseNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// No ping is out (the queue answered the last one).
    var isQuiet: Bool { state.withLock { !$0.outstanding } }

    /// An outstanding ping is work the queue has not reached.
    func confirmBusy() -> BusyConfirmation { .busy(context: nil) }

    var edges: ActivityEdges { .ping }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sleeper.signal()
    }
}

#if canImport(Glibc)
import Glibc
#endif
