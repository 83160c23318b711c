@_spi(Internal) import HangWatchReport
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
/// The pings and looks run on the monitor's watchdog thread, as its `QueuePingLane` (`timerLane`).
/// Idle cost: one wake-up of the watchdog per interval (a read of one small `/proc` file with
/// looks), and one tiny block per threshold.
final class QueueActivitySource: ActivitySource, @unchecked Sendable {
    let kind: ActivitySourceKind
    /// Set by `start`, before the first tick.
    private var latch: ActivityLatch!
    private let enqueue: @Sendable (@escaping @Sendable () -> Void) -> Void
    private let thresholdMicroseconds: @Sendable () -> UInt64
    /// The decisions and the looker, taken by the watchdog's thread at each tick and by each ping's
    /// answer: the latch writes stay in order with them.
    private struct State: @unchecked Sendable {
        var edges: QueueEdges
        var looker: QueueThreadLooking?
        /// Pings left to send an interval apart (a ping prepares the worker it runs on for
        /// captures, and its word for the looks): at the start, when libdispatch may hand the
        /// queue to several workers in turn, and again after a ping ran on a worker never seen
        /// before. Then one per threshold.
        var eagerPings = Self.eagerBurst
        static let eagerBurst = 40
        /// What the last look saw.
        var lastObservation = QueueEdges.Observation.unknown
        /// The tasks the looks after the last ping was sent found the draining thread running,
        /// until its answer (`tasksAtLooks`; kept only while a ping is out).
        var lookTasks: SampledTasks?
    }
    private let state: Mutex<State>
    private let stopped = Atomic<Bool>(false)
    /// The draining thread the capture side is attached to (only the ping block touches it).
    private let attachedThread = Mutex<pthread_t?>(nil)
    private var attach: @Sendable () -> Void = {}
    /// Points the capture at another attached thread, or at none (set before `start`).
    private var capture = CaptureSelector.none
    /// The workers that may drain the queue, with their current-queue words: those that ran a
    /// ping, and the process's other libdispatch workers, found by their descriptors.
    let workers = QueueWorkers()
    typealias DrainSlot = QueueWorkers.Slot
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

    /// The watchdog lane that ticks the source (`start` makes it).
    private(set) var timerLane: (any WatchdogLane)?

    /// Sends the first ping, and makes the lane that ticks the source from the watchdog's thread
    /// (`timerLane`: an interval between ticks; a libdispatch timer would wake its timer thread and
    /// a worker each time as well). The first ping on each new draining thread runs `attach` there.
    func start(edges latch: ActivityLatch, attach: @escaping @Sendable () -> Void) {
        connect(edges: latch, attach: attach)
        // The first ping from here: work enqueued after `start` returns waits behind it, so the
        // draining thread is known (and attached) before that work can stall it.
        timerLane = QueuePingLane(source: self, firstTickIn: microseconds(untilCoarse: tick()))
    }

    /// Microseconds from now to coarse instant `next`, at most `longestWaitMicroseconds`.
    func microseconds(untilCoarse next: UInt64) -> UInt64 {
        let now = coarseNow()
        return min(next > now ? (next - now) / 1000 : 0, Self.longestWaitMicroseconds)
    }

    /// A timer lane waits a minute at most at a time.
    static let longestWaitMicroseconds: UInt64 = 60_000_000

    var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// Where the edges go, without a lane (tests call `tick()` themselves).
    func connect(edges latch: ActivityLatch, attach: @escaping @Sendable () -> Void) {
        self.latch = latch
        self.attach = attach
    }

    /// Once per interval, on the watchdog's thread: looks at the draining thread, declares an overdue
    /// stretch, or enqueues the next ping. Returns when to tick next.
    @discardableResult
    func tick() -> UInt64 {
        let now = coarseNow()
        guard !stopped.load(ordering: .relaxed) else { return now &+ intervalNanoseconds }
        let threshold = thresholdMicroseconds() * 1000
        // A ping out for more than an interval with no known worker running the queue: the
        // queue runs on a worker not known yet.
        let unexplained = state.withLock { $0.edges.pingOutstanding(at: now, longerThan: intervalNanoseconds) && $0.lastObservation == .waiting }
        let found = state.withLock({ $0.looker != nil }) && workers.discover(at: now, force: unexplained)
        let (ping, next) = state.withLock { state -> (UInt64?, UInt64) in
            if found, unexplained { state.edges.workersFound() }
            let observation = state.looker?.look(at: now, words: workers.all, queue: workers.queue) ?? .unknown
            state.lastObservation = observation
            if state.lookTasks != nil, case .working = observation { noteTaskAtLook(&state) }
            let eager = state.eagerPings > 0 && state.looker != nil
            let actions = state.edges.look(at: now, observation, thresholdNanoseconds: threshold, eager: eager)
            perform(actions)
            let ping = actions.contains(.ping)
            if ping, eager { state.eagerPings -= 1 }
            if ping {
                state.looker?.pingSent(at: now)
                // Read from the next look on: after the ping is enqueued (below).
                state.lookTasks = SampledTasks()
            }
            return (ping ? now : nil, state.edges.nextLook(after: now, thresholdNanoseconds: threshold))
        }
        if let ping { sendPing(enqueuedAt: ping) }
        return next
    }

    private func sendPing(enqueuedAt: UInt64) {
        self.enqueue { [self] in
            guard !stopped.load(ordering: .relaxed) else { return }
            let current = pthread_self()
            let isNew = attachedThread.withLock { attached -> Bool in
                if let attached, pthread_equal(attached, current) != 0 { return false }
                attached = current
                return true
            }
            let tid = UnsafeCaptureBridge.currentThreadID()
            // A new thread is prepared; one seen before is made the captured one again (after a
            // stall elsewhere, or another worker's turn).
            if isNew || !capture.select(tid) { attach() }
            let noted = isNew ? workers.noteCurrentThread(tid: tid) : nil
            let now = coarseNow()
            let answeredAt = UnsafeClock.monotonicNanoseconds()
            state.withLock { state in
                if noted?.firstSeen == true { state.eagerPings = max(state.eagerPings, State.eagerBurst / 4) }
                state.looker?.pingAnswered(by: tid, enqueuedAt: enqueuedAt, at: now, answeredAt: answeredAt)
                state.lookTasks = nil
                perform(state.edges.pingAnswered(at: now), answeredAt: answeredAt)
            }
        }
    }

    /// A worker that ran a ping or was found by its descriptor: its thread pointer and where the
    /// current-task word lies from it (learnt on a pool thread, or by the main actor's probe).
    func taskWord(of tid: Int32) -> UInt? {
        workers.threadPointer(tid: tid).flatMap { UnsafePoolThreadAttachments.shared.taskSlot(threadPointer: $0) }
    }

    func useCaptureSelector(_ selector: CaptureSelector) {
        capture = selector
    }

    /// The tasks the looks found the draining thread running since the ping still out was sent.
    /// A main-actor job enqueued after the ping waits behind it, so a task read on the draining
    /// thread after the ping was enqueued, while it is still out, runs a job enqueued before it:
    /// the same job the hang's samples find that task in, if they find it (`QueueHangKind`).
    func tasksAtLooks() -> SampledTasks? {
        state.withLock { $0.lookTasks.flatMap { $0.reads > 0 ? $0 : nil } }
    }

    /// A look that found the queue's thread working with a ping out: the task the thread it found
    /// runs (one that found none dates nothing, and is not kept).
    private func noteTaskAtLook(_ state: inout State) {
        guard let tid = state.looker?.runningThread, let word = taskWord(of: tid), let task = UnsafeCurrentTaskSlot.taskID(slot: word), task != 0
        else { return }
        state.lookTasks?.note(task, at: UnsafeClock.monotonicNanoseconds() / 1000)
    }

    /// Carries out the latch's part of `actions` (under the state's lock: its writes stay in order).
    /// `answeredAt`: the fine time of the ping's answer whose actions these are (a declared hang
    /// ends then, not at the coarse clock's last tick, up to 4 ms earlier).
    private func perform(_ actions: [QueueEdges.Action], answeredAt: UInt64? = nil) {
        for action in actions {
            switch action {
            case .declareBusy(let since, _):
                latch.recordBusy(Self.enter, sinceCoarseNanoseconds: since)
            case .declareIdle: latch.record(Self.leave, atNanoseconds: answeredAt)
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

    /// An outstanding ping is work the queue has not reached. libdispatch may have started that
    /// work on another worker than the one that ran the last ping: the capture goes to the thread
    /// whose current queue is this one, when that is known (and it ran a ping before, so it is
    /// prepared for captures).
    func confirmBusy() -> BusyConfirmation {
        var draining = workers.draining()
        if draining == .elsewhere {
            workers.discover(at: coarseNow(), force: true)
            draining = workers.draining()
        }
        switch draining {
        case .thread(let tid):
            // A worker that never ran a ping (found by its descriptor) is captured once prepared.
            if !capture.select(tid), let start = ProcTask(tid: tid).stat()?.startTimeTicks {
                capture.adopt(
                    MonitoredThread(tid: tid, startTimeTicks: start, stackLow: 0, stackHigh: 0, name: ProcTask(tid: tid).name(), isMain: false))
            }
        case .elsewhere: capture.vacate(.workOnUnpreparedThread)
        case .unknown: break
        }
        return .busy(context: nil)
    }

    /// How the stretch declared now was found; when none is, how one would be: `sampled` once the
    /// looks can tell the queue busy (the workers' current-queue words, or the draining thread's
    /// idle wait, are known), else `ping`.
    var edges: ActivityEdges {
        let wordsKnown = workers.queue != nil
        return state.withLock { state in
            state.edges.declared ?? (state.looker.map { wordsKnown || $0.knowsIdleWait } == true ? .sampled : .ping)
        }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
    }
}

#if canImport(Glibc)
import Glibc
#endif
