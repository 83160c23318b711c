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
/// step per thing the lane found (`watcherStep`), and says when it must be stepped again.
///
/// Until the loop has been seen in its wait once (its epoll instance is learnt from the thread's
/// `syscall` file then), and wherever that is not possible, it is pinged once per threshold as a
/// queue is (`QueueActivitySource`: late detection, a lower-bound duration).
final class EventLoopActivitySource: ActivitySource, @unchecked Sendable {
    let kind: ActivitySourceKind
    private let enqueue: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// When the loop last finished an iteration (SwiftNIO's metrics delegate; nil before its
    /// first): the boundaries under load, read at each look (`EventLoopEdges.look(…, lastIterationEnd:)`). Without it,
    /// a ping at each look is the boundary. Either way the looks of every loop fall on one grid.
    private let lastIterationEnd: (@Sendable () -> UInt64?)?
    /// The iteration end the last look read (touched only by the watchdog's thread).
    private var iterationEndSeen: UInt64 = 0
    private let fallback: QueueActivitySource
    private let thresholdMicroseconds: @Sendable () -> UInt64
    private let intervalNanoseconds: UInt64
    private let coarseNow: @Sendable () -> UInt64
    private let watcher: EventLoopWatcher
    /// Set by `start`, before the watcher runs.
    private var latch: ActivityLatch!
    private let decisions: Mutex<EventLoopEdges>
    /// The loop's thread, recorded by the first ping that runs there.
    private let loopThread = Mutex<Int32?>(nil)
    private let stopped = Atomic<Bool>(false)
    /// A ping's answer the lane waits for came; the lane steps this loop for it.
    private let nudged = Atomic<Bool>(false)
    /// When the watcher saw the loop wake (`CLOCK_MONOTONIC_COARSE` ns; 0: not since the lane
    /// last took it).
    private let sawWake = Atomic<UInt64>(0)
    /// The key of the loop's registration in the watcher's instance (0: none), for the watcher's thread.
    private let registrationKeyWord = Atomic<UInt64>(0)
    /// Which mode the watcher is in (tests and reports of the source's state).
    private let exactEdges = Atomic<Bool>(false)

    /// What the lane does for this loop; touched only by the watchdog's thread.
    private enum Watch {
        /// Pinged once per threshold until the loop is seen in its wait (`files`: its thread's).
        case learning(files: ProcTaskFiles?)
        /// Its epoll instance is known (`registration`, in the watcher's).
        case watching(Watched)
    }
    private struct Watched {
        let registration: UnsafeLoopEpollWatch.Registration
        let epoll: Int32
        let files: ProcTaskFiles
        /// The loop's thread at a look that found it outside any system call (on a CPU, or waiting
        /// for one): when, its CPU and run-queue time, how often it was put on a CPU. Dates a
        /// blocking call it is found in later: a thread not put on a CPU again since (it ran on
        /// until it blocked) entered the call that much CPU and run-queue time after the look.
        var ranAt: (at: UInt64, ran: UInt64, timeslices: UInt64)?
        var waiting: Waiting
    }
    /// What the lane waits for.
    private enum Waiting {
        /// The time of the next look at the busy loop (its instance out of the watcher's).
        case look
        /// The ping's answer of a declared hang.
        case answer
        /// The idle loop's wake (`waitForLoop`).
        case wake(IdleWait)
    }
    /// An idle loop's wait: its instance polled or nested in the watcher's (unless `nested`
    /// failed), and, unless its wake is `certain` (polled), the looks of its first minute idle.
    private struct IdleWait {
        let idleAt: UInt64
        var seenWaiting: UInt64
        var asleep: ProcTask.SchedStat?
        let nested: Bool
        let certain: Bool
    }
    private var watchState = Watch.learning(files: nil)
    /// When the lane must step this loop next (`CLOCK_MONOTONIC_COARSE` ns); nil: only for news.
    private(set) var watcherDeadline: UInt64?
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

    /// What the lane found for this loop.
    enum WatcherEvent: Equatable {
        /// Its first step.
        case started
        /// Its deadline passed.
        case due
        /// Its epoll instance had an event ready: the loop woke (when the watcher saw it, coarse ns).
        case loopWoke(at: UInt64)
        /// A ping's answer it waited for came.
        case nudged
    }

    /// The lane's step for this loop (on the watchdog's thread): carries out what `event` means,
    /// and sets `watcherDeadline`.
    func watcherStep(_ event: WatcherEvent) {
        let epollWatch = watcher.epollWatch
        switch watchState {
        case .learning(let files):
            guard event == .started || event == .due else { return }
            learnOrPing(files, epollWatch)
        case .watching(var watched):
            switch (event, watched.waiting) {
            case (.due, .look):
                look(&watched)
            case (.due, .wake(var wait)):
                if idleLook(&wait, watched) {
                    loopWoke(at: coarseNow())
                } else {
                    watched.waiting = .wake(wait)
                    watchState = .watching(watched)
                    watcherDeadline = nextIdleLook(wait, after: watcherDeadline)
                    return
                }
            case (.loopWoke(let at), .wake):
                loopWoke(at: at)
            case (.nudged, _):
                break  // the answer the watcher waited for: decide again
            case (.started, _), (.due, .answer), (.loopWoke, .look), (.loopWoke, .answer):
                return  // (stale: nothing this loop waits for)
            }
            decide(&watched)
            watchState = .watching(watched)
        }
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

    /// Pings once per threshold (the fallback) until the loop's thread is seen waiting on its epoll
    /// instance with no ping out; then watches that instance.
    private func learnOrPing(_ known: ProcTaskFiles?, _ epollWatch: UnsafeLoopEpollWatch?) {
        var files = known
        if fallback.isQuiet, let tid = loopThread.withLock({ $0 }), let epollWatch {
            if files?.tid != tid { files = ProcTaskFiles(tid: tid) }
            if let files, let epoll = Self.epollWaitedOn(files), let registration = epollWatch.register(loopEpoll: epoll),
                Self.epollWaitedOn(files) == epoll, fallback.isQuiet
            {
                exactEdges.store(true, ordering: .releasing)
                registrationKeyWord.store(registration.key, ordering: .releasing)
                var watched = Watched(registration: registration, epoll: epoll, files: files, ranAt: nil, waiting: .look)
                decide(&watched)
                watchState = .watching(watched)
                return
            }
        }
        fallback.tick()
        watchState = .learning(files: files)
        watcherDeadline = coarseNow() &+ thresholdMicroseconds() * 1000
    }

    /// The epoll instance the thread waits on now, if it waits on one.
    private static func epollWaitedOn(_ files: ProcTaskFiles) -> Int32? {
        guard case .inSyscall(let number, let arguments, _, _)? = files.readSyscall(), SyscallNames.isEpollWait(number),
            let first = arguments.first, first <= UInt(Int32.max)
        else { return nil }
        return Int32(first)
    }

    /// What to wait for next, from the edges' state: the next look at a busy loop, the answer of a
    /// declared hang, or the idle loop's wake.
    private func decide(_ watched: inout Watched) {
        while true {
            let threshold = thresholdMicroseconds() * 1000
            let (next, idle) = decisions.withLock { ($0.nextLook(thresholdNanoseconds: threshold), $0.phase == .idle) }
            if let next {
                // A busy loop: its events are not news.
                watched.registration.unnest()
                watched.waiting = .look
                watcherDeadline = next
                return
            }
            guard idle else {
                // A declared hang: until the ping's answer ends it.
                watched.registration.unnest()
                watched.waiting = .answer
                watcherDeadline = nil
                return
            }
            // Wakes from now on are news (the loop's instance was out of ours while it was busy);
            // a loop that got busy again since the last look is busy from now.
            let nested = watched.registration.nest()
            if !Self.isWaiting(watched.files.readSyscall(), on: watched.epoll) {
                loopWoke(at: coarseNow())
                continue
            }
            let now = coarseNow()
            let certain = nested && watched.registration.wakeIsCertain
            let wait = IdleWait(
                idleAt: now, seenWaiting: now, asleep: certain ? nil : watched.files.readSchedStat(), nested: nested,
                certain: certain)
            watched.waiting = .wake(wait)
            watcherDeadline = nextIdleLook(wait, after: nil)
            return
        }
    }

    /// A look at the busy loop: back in its wait, still busy (a ping goes out), blocked since when.
    /// A loop whose last iteration ended since the look before and within a millisecond
    /// of this one is working: its thread's files are not read. One whose end is older is read:
    /// found in its wait, it slept since that iteration and is busy from this look at the earliest
    /// (it is not taken for idle: under load it wakes within microseconds; the first look that
    /// finds no new iteration decides).
    private func look(_ watched: inout Watched) {
        let threshold = thresholdMicroseconds() * 1000
        let files = watched.files
        let iterationEnd = lastIterationEnd?()
        let progressed = iterationEnd.map { $0 > iterationEndSeen } ?? false
        let readsThread = EventLoopEdges.readsThread(
            lastIterationEnd: iterationEnd, endSeenBefore: iterationEndSeen, fineNow: UnsafeCaptureBridge.monotonicNanoseconds())
        if let iterationEnd { iterationEndSeen = max(iterationEndSeen, iterationEnd) }
        let state = readsThread ? files.readSyscall() : nil
        let inWait = readsThread && Self.isWaiting(state, on: watched.epoll)
        let isWaiting = inWait && !progressed
        var blocked: UInt64?
        if !inWait, case .inSyscall? = state, let ranAt = watched.ranAt, let schedule = files.readSchedStat(),
            schedule.timeslices > 0, schedule.timeslices == ranAt.timeslices
        {
            let ran = schedule.runnableNanoseconds
            if ran >= ranAt.ran { blocked = ranAt.at &+ (ran &- ranAt.ran) }
        }
        // The looks fall on instants of a grid: the one served has passed even when the coarse
        // clock (4 ms steps) has not shown it yet.
        let now = max(coarseNow(), watcherDeadline ?? 0)
        if !inWait, let state, !Self.inSyscall(state), let schedule = files.readSchedStat() {
            watched.ranAt = (now, schedule.runnableNanoseconds, schedule.timeslices)
        }
        let pings = decisions.withLock { edges -> Bool in
            let actions = edges.look(
                at: now, waiting: isWaiting, thresholdNanoseconds: threshold, blockedSince: blocked,
                lastIterationEnd: iterationEnd, inWaitAfterIteration: inWait && progressed)
            perform(actions)
            return actions.contains(.ping)
        }
        if pings { enqueue(ping()) }
    }

    /// When the idle loop is looked at next: every half threshold for `lookWindow` after it went
    /// idle; never after that (its wake alone wakes the watcher), unless its instance could not
    /// be nested (then the looks go on until the loop is found awake). The looks fall on multiples
    /// of the period, the same instants for every loop of a group: one wake-up of the watcher
    /// looks at all its idle loops (at most a period apart still). `served`: the look just made
    /// was for that instant (the next is after it, even when the coarse clock has not reached it).
    private func nextIdleLook(_ wait: IdleWait, after served: UInt64?) -> UInt64? {
        let now = coarseNow()
        guard !wait.certain, !wait.nested || now &- wait.idleAt < Self.lookWindowNanoseconds else { return nil }
        let period = max(1_000_000, min(thresholdMicroseconds() * 1000 / 2, 60_000_000_000))
        return (max(now, served ?? 0) / period + 1) &* period
    }

    /// The loop was seen to wake at `coarse` (its epoll instance, or out of its wait right after a
    /// look): a stretch that begins then has an exact start.
    private func loopWoke(at coarse: UInt64) {
        if decisions.withLock({ $0.loopWoke(at: coarse) }) { startFoundByLook.store(false, ordering: .relaxed) }
    }

    /// A look at the idle loop, whose wake comes through its epoll instance, nested in the
    /// watcher's, and can be lost: woken, the watcher's instance asks the loop's whether it still
    /// has an event ready, and a loop that ran first and consumed it (NIO registers
    /// level-triggered) leaves none, so the watcher's wait goes on (traced; a server with one
    /// blocking request every 1.8 s lost 5 to 7 of 40 that way: docs/sources.md). So for
    /// `lookWindow` after the loop went idle the watcher also looks at the thread every half
    /// threshold (`nextIdleLook`): a loop found out of its wait woke since the look before, dated
    /// by its `schedstat` (exactly when it is still on a CPU, put there once since; otherwise
    /// half-way between the look before and the latest moment its run-queue and CPU time allow).
    /// An idle loop costs nothing after the window. True when the loop was found awake (its wake
    /// is then recorded).
    private func idleLook(_ wait: inout IdleWait, _ watched: Watched) -> Bool {
        let files = watched.files
        let state = files.readSyscall()
        let now = coarseNow()
        guard Self.isWaiting(state, on: watched.epoll) else {
            // It woke after the look before and, if put on a CPU only once since, no later
            // than its run-queue and CPU time ago (exactly then if it is still on a CPU).
            var latest = now
            var ranOnce = false
            if let asleep = wait.asleep, let schedule = files.readSchedStat(), schedule.timeslices == asleep.timeslices &+ 1 {
                let ran = schedule.runnableNanoseconds &- asleep.runnableNanoseconds
                if ran < now &- wait.seenWaiting {
                    latest = now &- ran
                    ranOnce = true
                }
            }
            let onCPU = ranOnce && state.map(Self.inSyscall) == false
            let woke = onCPU ? latest : wait.seenWaiting &+ (latest &- wait.seenWaiting) / 2
            startFoundByLook.store(true, ordering: .relaxed)
            _ = decisions.withLock { $0.loopWoke(at: woke) }
            return true  // (busy already: the caller's `loopWoke` changes nothing)
        }
        wait.seenWaiting = now
        wait.asleep = files.readSchedStat()
        return false
    }

    /// How long after going idle (or after the watch starts) a loop is also looked at
    /// (`waitForLoop`): a wake can be lost whenever it comes, and a loop that worked (or started)
    /// in the last minute is likely to get work again. Idle for longer, it costs nothing.
    static let lookWindowNanoseconds: UInt64 = 60_000_000_000

    /// The busy stretch now began at a wake found by looking: its start is sampled, not exact
    /// (reports say `edges: sampled`). A wake through the epoll instance or an answer clears it.
    private let startFoundByLook = Atomic<Bool>(false)

    /// Whether `state` is the loop's wait on `epoll`. Not readable (the thread is gone): taken as
    /// waiting, so no hang is made up.
    private static func isWaiting(_ state: ProcTask.SyscallState?, on epoll: Int32) -> Bool {
        guard let state else { return true }
        guard case .inSyscall(let number, let arguments, _, _) = state else { return false }
        return SyscallNames.isEpollWait(number) && arguments.first == UInt(epoll)
    }

    private static func inSyscall(_ state: ProcTask.SyscallState) -> Bool {
        if case .inSyscall = state { return true }
        return false
    }

    /// Carries out the latch's part of `actions` (under the edges' lock: its writes stay in order).
    /// `answeredAt`: the fine time of the ping's answer whose actions these are (a declared hang
    /// ends then, not at the coarse clock's last tick).
    private func perform(_ actions: [EventLoopEdges.Action], answeredAt: UInt64? = nil) {
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
    private func ping() -> @Sendable () -> Void {
        { [self] in
            guard !stopped.load(ordering: .relaxed) else { return }
            // The fine clock, for both the end of the work it waited behind and the boundary the
            // answer is under load: the earliest start of a block after it. (Until 2026-12-02
            // the boundary was the coarse clock's last tick, up to 4 ms earlier, and such a block
            // was dated that much early.)
            let answeredAt = UnsafeCaptureBridge.monotonicNanoseconds()
            let actions = decisions.withLock { edges in
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
