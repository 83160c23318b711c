import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An event loop that sleeps in `epoll_wait` between iterations (SwiftNIO's loops on Linux), with
/// exact edges, and no wake-ups once it has been idle for a minute (`lookWindow`).
///
/// A watcher thread (`EventLoopWatcher`, one for a whole group) sleeps on the loop's own epoll
/// instance (`UnsafeLoopEpollWatch`): it wakes when the loop wakes, which is when its work begins,
/// and posts the watchdog's wake. The rest is the loop's lane of the watchdog (`EventLoopLane`,
/// the source's `timerLane`): an interval after the wake it looks at the loop's thread (`/proc`):
/// back in `epoll_wait` means done. Still busy, it enqueues a ping, which runs right after the
/// work in hand: its answer is the work's end. A threshold after the wake with the ping still out,
/// the loop is declared busy since the wake, and the hang lane records a hang at once and samples
/// it; the answer ends it. The decisions are `EventLoopEdges'`; this type carries them out, one
/// step per thing the lane found (`watcherStep`, in `EventLoopActivitySource+Watch`: the watch's
/// states), and says when it must be stepped again.
///
/// Until the loop has been seen in its wait once (its epoll instance is learnt from the thread's
/// `syscall` file then), and wherever that is not possible, it is pinged once per threshold as a
/// queue is (`QueueActivitySource`: late detection, a lower-bound duration).
final class EventLoopActivitySource: ActivitySource, @unchecked Sendable {
    let kind: ActivitySourceKind
    let enqueue: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// When the loop last finished an iteration (SwiftNIO's metrics delegate; nil before its
    /// first): the boundaries under load, read at each look (`EventLoopEdges.look(…, lastIterationEnd:)`). Without it,
    /// a ping at each look is the boundary. Either way the looks of every loop fall on one grid.
    let lastIterationEnd: (@Sendable () -> UInt64?)?
    /// The iteration end the last look read (touched only by the watchdog's thread).
    var iterationEndSeen: UInt64 = 0
    let fallback: QueueActivitySource
    let thresholdMicroseconds: @Sendable () -> UInt64
    private let intervalNanoseconds: UInt64
    let coarseNow: @Sendable () -> UInt64
    let watcher: EventLoopWatcher
    /// Set by `start`, before the watcher runs.
    var latch: ActivityLatch!
    let decisions: Mutex<EventLoopEdges>
    /// The loop's thread, recorded by the first ping that runs there.
    let loopThread = Mutex<Int32?>(nil)
    private let stopped = Atomic<Bool>(false)
    /// A ping's answer the lane waits for came; the lane steps this loop for it.
    private let nudged = Atomic<Bool>(false)
    /// When the watcher saw the loop wake (`CLOCK_MONOTONIC_COARSE` ns; 0: not since the lane
    /// last took it).
    private let sawWake = Atomic<UInt64>(0)
    /// The key of the loop's registration in the watcher's instance (0: none), for the watcher's thread.
    let registrationKeyWord = Atomic<UInt64>(0)
    /// Which mode the watcher is in (tests and reports of the source's state).
    let exactEdges = Atomic<Bool>(false)
    /// Since when the edges are exact (the latch's units, 1024 ns; 0: not yet): the flight
    /// recorder, written only then, covers its window from there (`leadUpCovers`).
    let exactSinceUnits = Atomic<UInt64>(0)
    /// The flight recorder the edges write (`EventLoopLeadUp`), when the monitor keeps one; set by
    /// `start`.
    private(set) var leadUp: EventLoopLeadUp?

    /// The busy stretch now began at a wake found by looking: its start is sampled, not exact
    /// (reports say `edges: sampled`). A wake through the epoll instance or an answer clears it.
    let startFoundByLook = Atomic<Bool>(false)

    /// What the lane does for this loop (`EventLoopActivitySource+Watch`); the watchdog's thread only.
    var watchState = Watch.learning(files: nil)
    /// When the lane must step this loop next (`CLOCK_MONOTONIC_COARSE` ns); nil: only for news.
    var watcherDeadline: UInt64?
    /// The lane that steps this loop (`start` makes it).
    private(set) var timerLane: (any WatchdogLane)?
    /// The lane's first step was made (`started`).
    private var laneStarted = false

    init(
        kind: ActivitySourceKind = .nioEventLoop, thresholdMicroseconds: @escaping @Sendable () -> UInt64,
        intervalMicroseconds: UInt64, coarseNow: @escaping @Sendable () -> UInt64 = QueueActivitySource.coarseNanoseconds,
        watcher: EventLoopWatcher,
        enqueue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        lastIterationEnd: (@Sendable () -> UInt64?)? = nil
    ) {
        self.kind = kind
        self.enqueue = enqueue
        self.lastIterationEnd = lastIterationEnd
        self.thresholdMicroseconds = thresholdMicroseconds
        self.coarseNow = coarseNow
        self.watcher = watcher
        intervalNanoseconds = max(1_000_000, intervalMicroseconds * 1000)
        decisions = Mutex(
            EventLoopEdges(
                intervalNanoseconds: max(1_000_000, intervalMicroseconds * 1000)))
        fallback = QueueActivitySource(kind: kind, periodMicroseconds: thresholdMicroseconds(), coarseNow: coarseNow, enqueue: enqueue)
    }

    /// Whether the loop's epoll instance is watched (exact edges), rather than pinged.
    var hasExactEdges: Bool { exactEdges.load(ordering: .acquiring) }

    var isStopped: Bool { stopped.load(ordering: .acquiring) }

    /// Whether the loop's idle wakes come through the watcher's io_uring (never lost).
    var wakesThroughIoUring: Bool { watcher.pollsThroughRing }

    func start(edges latch: ActivityLatch, attach: @escaping @Sendable () -> Void) {
        self.latch = latch
        leadUp = latch.sourceLeadUp.map(EventLoopLeadUp.init(recorder:))
        fallback.connect(edges: latch) { [self] in
            loopThread.withLock { $0 = UnsafeCaptureBridge.currentThreadID() }
            attach()
        }
        timerLane = EventLoopLane(source: self)
        watcher.add(self)
    }

    /// The watcher saw the loop wake (on its thread): the lane takes it at its next step, which
    /// the watchdog's wake brings on now. The earliest wake not taken yet is kept.
    func watcherSawWake(at coarse: UInt64) {
        _ = sawWake.compareExchange(expected: 0, desired: max(coarse, 1), ordering: .releasing)
        latch.wake.signal()
    }

    /// The key of the loop's registration in the watcher's instance, once learnt (any thread).
    var registeredKey: UInt64? {
        let key = registrationKeyWord.load(ordering: .acquiring)
        return key == 0 ? nil : key
    }

    /// The lane's step (on the watchdog's thread): the first one starts the watch; then the loop's
    /// wake the watcher saw, a ping's answer, and the deadline if `due` or passed, in that order.
    func laneStep(due: Bool) {
        if !laneStarted {
            laneStarted = true
            watcherStep(.started)
        }
        let woke = sawWake.load(ordering: .relaxed) == 0 ? 0 : sawWake.exchange(0, ordering: .acquiring)
        if woke != 0 { watcherStep(.loopWoke(at: woke)) }
        if takeNudge() { watcherStep(.nudged) }
        if let deadline = watcherDeadline, due || deadline <= coarseNow() { watcherStep(.due) }
    }

    /// Takes the loop's nudge (a ping's answer the lane waited for), if one came.
    private func takeNudge() -> Bool {
        nudged.load(ordering: .relaxed) && nudged.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// Microseconds from now to coarse instant `next`, on the same clock and with the same cap as
    /// the fallback's (`QueueActivitySource.longestWaitMicroseconds`).
    func microseconds(untilCoarse next: UInt64) -> UInt64 { fallback.microseconds(untilCoarse: next) }

    /// The lane lets go of the loop (stopped; on the watchdog's thread): its epoll instance
    /// leaves the watcher's.
    func watcherRemoved() {
        registrationKeyWord.store(0, ordering: .releasing)
        watchState = .learning(files: nil)
        watcherDeadline = nil
    }

    /// Runs `body` on the edges under their lock, and writes what the change of phase it made
    /// tells the flight recorder, while the edges are exact (`EventLoopLeadUp.pieces`: `now`,
    /// `finishedAt` and `sleptSince` as there).
    func decideEdges<Result>(
        at now: UInt64, finishedAt: UInt64? = nil, sleptSince: UInt64? = nil, _ body: (inout EventLoopEdges) -> Result
    ) -> Result {
        decisions.withLock { edges in
            let before = edges.phase
            let result = body(&edges)
            if let leadUp, exactEdges.load(ordering: .relaxed) {
                leadUp.record(EventLoopLeadUp.pieces(from: before, to: edges.phase, at: now, finishedAt: finishedAt, sleptSince: sleptSince))
            }
            return result
        }
    }

    /// Whether the flight recorder covers the `windowUnits` before `onsetUnits` (the edges were
    /// exact from before it began, and still are): a window it does not cover would read idle
    /// where nothing was recorded.
    func leadUpCovers(windowUnits: UInt64, before onsetUnits: UInt64) -> Bool {
        let since = exactSinceUnits.load(ordering: .relaxed)
        return since != 0 && exactEdges.load(ordering: .relaxed) && since &+ windowUnits <= onsetUnits
    }

    /// Carries out the latch's part of `actions` (under the edges' lock: its writes stay in order).
    /// `answeredAt`: the fine time of the ping's answer whose actions these are (a declared hang
    /// ends then, not at the coarse clock's last tick).
    func perform(_ actions: [EventLoopEdges.Action], answeredAt: UInt64? = nil) {
        for action in actions {
            switch action {
            case .declareBusy(let since): latch.recordBusy(QueueActivitySource.enter, sinceCoarseNanoseconds: since)
            case .declareIdle: latch.record(QueueActivitySource.leave, atNanoseconds: answeredAt)
            case .ping, .wakeWatcher: break
            }
        }
    }

    /// A ping: on the loop, it ends the work it waited behind, and wakes the watcher if it waits
    /// for it.
    func ping() -> @Sendable () -> Void {
        { [self] in
            guard !stopped.load(ordering: .relaxed) else { return }
            // The fine clock, for both the end of the work it waited behind and the boundary the
            // answer is under load: the earliest start of a block after it (the coarse clock's
            // last tick is up to 4 ms earlier, and would date such a block that much early).
            let answeredAt = UnsafeClock.monotonicNanoseconds()
            let actions = decideEdges(at: answeredAt) { edges in
                let actions = edges.pingAnswered(at: answeredAt)
                perform(actions, answeredAt: answeredAt)
                return actions
            }
            // (An answer that ends a hang is read by the watchdog after the hang's edges were.)
            if !actions.isEmpty { startFoundByLook.store(false, ordering: .relaxed) }
            if actions.contains(.wakeWatcher) {
                nudged.store(true, ordering: .releasing)
                latch.wake.signal()
            }
        }
    }

    var edges: ActivityEdges { hasExactEdges ? (startFoundByLook.load(ordering: .relaxed) ? .sampled : .exact) : .ping }

    /// A declared stretch is work the loop has not finished.
    func confirmBusy() -> BusyConfirmation { .busy(context: nil) }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        fallback.stop()
        watcher.remove(self)
    }
}
