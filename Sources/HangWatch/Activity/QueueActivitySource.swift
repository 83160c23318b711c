import Dispatch
import Foundation
import Synchronization

/// A queue as a source of activity, by pinging it (a dispatch queue, or anything that runs
/// closures in order: a SwiftNIO event loop before its epoll instance is known) and, where it is
/// given a looker, by looking at the thread that drains it once per sample interval. The
/// decisions are `QueueEdges`'.
///
/// With looks (the main queue and serial queues on Linux): work is seen within an interval of its
/// start, dated to half an interval at most (a computation exactly, from the thread's clock), and a
/// ping then sent ends it; a threshold after the start with the ping out, the queue is declared
/// busy since the start (`sampled` edges), which wakes the watchdog, and the hang is recorded at
/// once; the answer ends it. Without looks (or before the thread and its idle wait are known), a
/// ping once per threshold: one a threshold overdue declares the queue busy since its enqueueing
/// (`ping` edges: a lower bound, detected 1 to 2 thresholds after the stall began).
///
/// The thread to capture is whichever thread ran the last ping: the one draining the queue. (On
/// Linux, after `dispatchMain()` — and so for an `async` `@main` and the MainActor — that is a
/// libdispatch worker, not the process's main thread.) The ping block attaches each new draining
/// thread (alternate signal stack) the first time it runs there.
///
/// Idle cost: one wake-up of the pinging thread per interval (a read of one small `/proc` file
/// with looks), and one tiny block per threshold.
final class QueueActivitySource: ActivitySource, @unchecked Sendable {
    let kind: ActivitySourceKind
    /// Set by `start`, before the pinging thread runs.
    private var latch: ActivityLatch!
    private let enqueue: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// The pinging thread sleeps on this between ticks; `invalidate()` signals it to finish.
    private let sleeper = DispatchSemaphore(value: 0)
    private let thresholdMicroseconds: @Sendable () -> UInt64
    /// The decisions and the looker, taken by the pinging thread at each tick and by each ping's
    /// answer: the latch writes stay in order with them.
    private struct State: @unchecked Sendable {
        var edges: QueueEdges
        var looker: QueueThreadLooking?
        /// Pings left to send an interval apart while the idle wait is not known (learning it
        /// takes two answered pings; a queue that never shows it goes back to one per threshold).
        var eagerPings = 10
    }
    private let state: Mutex<State>
    private let stopped = Atomic<Bool>(false)
    /// The draining thread the capture side is attached to (only the ping block touches it).
    private let attachedThread = Mutex<pthread_t?>(nil)
    private var attach: @Sendable () -> Void = {}
    /// `CLOCK_MONOTONIC_COARSE` in nanoseconds (the latch's clock); scripted in tests.
    private let coarseNow: @Sendable () -> UInt64
    private let intervalNanoseconds: UInt64

    static let enter = HangMonitor.Activity.afterWaiting.rawValue
    static let leave = HangMonitor.Activity.beforeWaiting.rawValue

    /// `looker`: looks at the draining thread once per `intervalMicroseconds` (nil: pinged only,
    /// once per threshold).
    init(
        kind: ActivitySourceKind, thresholdMicroseconds: @escaping @Sendable () -> UInt64, intervalMicroseconds: UInt64,
        looker: QueueThreadLooking? = nil,
        coarseNow: @escaping @Sendable () -> UInt64 = QueueActivitySource.coarseNanoseconds,
        enqueue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
    ) {
        self.enqueue = enqueue
        self.coarseNow = coarseNow
        self.kind = kind
        self.thresholdMicroseconds = { max(10_000, thresholdMicroseconds()) }
        intervalNanoseconds = max(1_000_000, intervalMicroseconds * 1000)
        state = Mutex(State(edges: QueueEdges(intervalNanoseconds: intervalNanoseconds), looker: looker))
    }

    /// Pinged only, once per `periodMicroseconds` (the threshold).
    convenience init(
        kind: ActivitySourceKind, periodMicroseconds: UInt64,
        coarseNow: @escaping @Sendable () -> UInt64 = QueueActivitySource.coarseNanoseconds,
        enqueue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
    ) {
        self.init(
            kind: kind, thresholdMicroseconds: { periodMicroseconds }, intervalMicroseconds: periodMicroseconds, coarseNow: coarseNow,
            enqueue: enqueue)
    }

    /// Starts the pinging thread: one thread that sleeps an interval between ticks (a libdispatch
    /// timer would wake its timer thread and a worker each time as well). The first ping on each
    /// new draining thread runs `attach` there.
    func start(edges latch: ActivityLatch, attach: @escaping @Sendable () -> Void) {
        connect(edges: latch, attach: attach)
        // The first ping from here: work enqueued after `start` returns waits behind it, so the
        // draining thread is known (and attached) before that work can stall it.
        let first = tick()
        NamedThread.start("hangwatch-ping", stackSize: 256 << 10) { [self] in
            var next = first
            while !stopped.load(ordering: .relaxed) {
                let now = coarseNow()
                _ = sleeper.wait(timeout: .now() + .nanoseconds(Int(min(next > now ? next - now : 0, 60_000_000_000))))
                next = tick()
            }
        }
    }

    /// Where the edges go, without the pinging thread (tests call `tick()` themselves).
    func connect(edges latch: ActivityLatch, attach: @escaping @Sendable () -> Void) {
        self.latch = latch
        self.attach = attach
    }

    /// Once per interval, on the pinging thread: looks at the draining thread, declares an overdue
    /// stretch, or enqueues the next ping. Returns when to tick next.
    @discardableResult
    func tick() -> UInt64 {
        let now = coarseNow()
        guard !stopped.load(ordering: .relaxed) else { return now &+ intervalNanoseconds }
        let threshold = thresholdMicroseconds() * 1000
        let (ping, next) = state.withLock { state -> (UInt64?, UInt64) in
            let observation = state.looker?.look(at: now) ?? .unknown
            let eager = state.eagerPings > 0 && state.looker.map { !$0.knowsIdleWait } ?? false
            let actions = state.edges.look(at: now, observation, thresholdNanoseconds: threshold, eager: eager)
            perform(actions)
            let ping = actions.contains(.ping)
            if ping, eager { state.eagerPings -= 1 }
            if ping { state.looker?.pingSent(at: now) }
            return (ping ? now : nil, state.edges.nextLook(after: now, thresholdNanoseconds: threshold))
        }
        if let ping { sendPing(enqueuedAt: ping) }
        return next
    }

    /// The same as one tick (tests written for the ping alone).
    func ping() { tick() }

    private func sendPing(enqueuedAt: UInt64) {
        self.enqueue { [self] in
            guard !stopped.load(ordering: .relaxed) else { return }
            let current = pthread_self()
            let isNew = attachedThread.withLock { attached -> Bool in
                if let attached, pthread_equal(attached, current) != 0 { return false }
                attached = current
                return true
            }
            if isNew { attach() }
            let tid = UnsafeCaptureBridge.currentThreadID()
            let now = coarseNow()
            state.withLock { state in
                state.looker?.pingAnswered(by: tid, enqueuedAt: enqueuedAt, at: now)
                perform(state.edges.pingAnswered(at: now))
            }
        }
    }

    /// Carries out the latch's part of `actions` (under the state's lock: its writes stay in order).
    private func perform(_ actions: [QueueEdges.Action]) {
        for action in actions {
            switch action {
            case .declareBusy(let since, _):
                latch.recordBusy(Self.enter, sinceCoarseNanoseconds: since)
            case .declareIdle: latch.record(Self.leave)
            case .ping: break
            }
        }
    }

    static func coarseNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        return UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
    }

    /// No ping is out (the queue answered the last one).
    var isQuiet: Bool { state.withLock { $0.edges.pingEnqueuedAt == nil } }

    /// An outstanding ping is work the queue has not reached.
    func confirmBusy() -> BusyConfirmation { .busy(context: nil) }

    /// How the stretch declared now was found; when none is, how one would be: `sampled` once the
    /// draining thread's idle wait is known, else `ping`.
    var edges: ActivityEdges {
        state.withLock { $0.edges.declared ?? ($0.looker?.knowsIdleWait == true ? .sampled : .ping) }
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sleeper.signal()
    }
}

#if canImport(Glibc)
import Glibc
#endif
