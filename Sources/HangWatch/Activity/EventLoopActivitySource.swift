import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// An event loop that sleeps in `epoll_wait` between iterations (SwiftNIO's loops on Linux), with
/// exact edges, and no wake-ups once it has been idle for a minute (`lookWindow`).
///
/// A watcher thread sleeps on the loop's own epoll instance (`UnsafeLoopEpollWatch`): it wakes when
/// the loop wakes, which is when its work begins. An interval later it looks at the loop's thread
/// (`/proc`): back in `epoll_wait` means done. Still busy, it enqueues a ping, which runs right after
/// the work in hand: its answer is the work's end. A threshold after the wake with the ping still
/// out, the loop is declared busy since the wake, and the watchdog records a hang at once and
/// samples it; the answer ends it. The decisions are `EventLoopEdges`'.
///
/// Until the loop has been seen in its wait once (its epoll instance is learnt from the thread's
/// `syscall` file then), and wherever that is not possible, it is pinged once per threshold as a
/// queue is (`QueueActivitySource`: late detection, a lower-bound duration).
final class EventLoopActivitySource: ActivitySource, @unchecked Sendable {
    let kind: ActivitySourceKind
    private let enqueue: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// Runs a closure on the loop after a delay (SwiftNIO's scheduled callbacks): pings are then
    /// chained on the loop under load (`EventLoopEdges.chained`). Called on the loop's thread.
    private let schedule: (@Sendable (UInt64, @escaping @Sendable () -> Void) -> Void)?
    private let fallback: QueueActivitySource
    private let thresholdMicroseconds: @Sendable () -> UInt64
    private let intervalNanoseconds: UInt64
    private let coarseNow: @Sendable () -> UInt64
    /// Set by `start`, before the watcher runs.
    private var latch: ActivityLatch!
    private let decisions: Mutex<EventLoopEdges>
    /// The loop's thread, recorded by the first ping that runs there.
    private let loopThread = Mutex<Int32?>(nil)
    private let watch = Mutex<UnsafeLoopEpollWatch?>(nil)
    private let stopped = Atomic<Bool>(false)
    /// The watcher sleeps on this while it pings as a queue; `stop()` signals it.
    private let sleeper = DispatchSemaphore(value: 0)
    /// Which mode the watcher is in (tests and reports of the source's state).
    private let exactEdges = Atomic<Bool>(false)

    init(
        kind: ActivitySourceKind = .nioEventLoop, thresholdMicroseconds: @escaping @Sendable () -> UInt64,
        intervalMicroseconds: UInt64, coarseNow: @escaping @Sendable () -> UInt64 = QueueActivitySource.coarseNanoseconds,
        enqueue: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        schedule: (@Sendable (UInt64, @escaping @Sendable () -> Void) -> Void)? = nil
    ) {
        self.kind = kind
        self.enqueue = enqueue
        self.schedule = schedule
        self.thresholdMicroseconds = thresholdMicroseconds
        self.coarseNow = coarseNow
        intervalNanoseconds = max(1_000_000, intervalMicroseconds * 1000)
        decisions = Mutex(EventLoopEdges(intervalNanoseconds: max(1_000_000, intervalMicroseconds * 1000), chained: schedule != nil))
        fallback = QueueActivitySource(kind: kind, periodMicroseconds: thresholdMicroseconds(), coarseNow: coarseNow, enqueue: enqueue)
    }

    /// Whether the loop's epoll instance is watched (exact edges), rather than pinged.
    var hasExactEdges: Bool { exactEdges.load(ordering: .acquiring) }

    func start(edges latch: ActivityLatch, attach: @escaping @Sendable () -> Void) {
        self.latch = latch
        fallback.connect(edges: latch) { [self] in
            loopThread.withLock { $0 = UnsafeCaptureBridge.currentThreadID() }
            attach()
        }
        NamedThread.start("hangwatch-loop", stackSize: 256 << 10) { [self] in
            guard let (watch, epoll, files) = pingUntilLearnt() else { return }
            self.watch.withLock { $0 = watch }
            exactEdges.store(true, ordering: .releasing)
            watchEdges(watch, epoll: epoll, files: files)
        }
    }

    /// Pings once per threshold (the fallback) until the loop's thread is seen waiting on its epoll
    /// instance with no ping out; then returns the watch on it. Nil when stopped first.
    private func pingUntilLearnt() -> (UnsafeLoopEpollWatch, Int32, ProcTaskFiles)? {
        var files: ProcTaskFiles?
        while !stopped.load(ordering: .acquiring) {
            if fallback.isQuiet, let tid = loopThread.withLock({ $0 }) {
                if files?.tid != tid { files = ProcTaskFiles(tid: tid) }
                if let files, let epoll = Self.epollWaitedOn(files), let watch = UnsafeLoopEpollWatch(loopEpoll: epoll),
                    Self.epollWaitedOn(files) == epoll, fallback.isQuiet
                {
                    return (watch, epoll, files)
                }
            }
            fallback.tick()
            _ = sleeper.wait(timeout: .now() + .microseconds(Int(thresholdMicroseconds())))
        }
        return nil
    }

    /// The epoll instance the thread waits on now, if it waits on one.
    private static func epollWaitedOn(_ files: ProcTaskFiles) -> Int32? {
        guard case .inSyscall(let number, let arguments, _, _)? = files.readSyscall(), SyscallNames.isEpollWait(number),
            let first = arguments.first, first <= UInt(Int32.max)
        else { return nil }
        return Int32(first)
    }

    private func watchEdges(_ watch: UnsafeLoopEpollWatch, epoll: Int32, files: ProcTaskFiles) {
        /// The loop's thread at a look that found it outside any system call (on a CPU, or waiting
        /// for one): when, its CPU and run-queue time, how often it was put on a CPU. Dates a
        /// blocking call it is found in later: a thread not put on a CPU again since (it ran on
        /// until it blocked) entered the call that much CPU and run-queue time after the look.
        var ranAt: (at: UInt64, ran: UInt64, timeslices: UInt64)?
        while !stopped.load(ordering: .acquiring) {
            let threshold = thresholdMicroseconds() * 1000
            let (next, idle) = decisions.withLock { ($0.nextLook(thresholdNanoseconds: threshold), $0.phase == .idle) }
            let wake: UnsafeLoopEpollWatch.Wake
            if let next {
                let now = coarseNow()
                wake = next > now ? watch.sleep(milliseconds: Int32(min((next - now + 999_999) / 1_000_000, 60_000))) : .timeout
            } else if idle {
                // Wakes from now on are news (the loop's instance was out of ours while it was
                // busy); a loop that got busy again since the last look is busy from now.
                let nested = watch.nestLoop()
                if !Self.isWaiting(files.readSyscall(), on: epoll) {
                    loopWoke()
                    continue
                }
                wake = waitForLoop(watch, nested: nested, files: files, epoll: epoll, threshold: threshold)
            } else {
                // A declared hang: until the ping's answer ends it.
                wake = watch.sleep(milliseconds: -1)
            }
            switch wake {
            case .stopped: return
            case .nudged: continue  // the answer the watcher waited for
            case .loop:
                loopWoke()
                continue
            case .timeout: break
            }
            let state = files.readSyscall()
            let isWaiting = Self.isWaiting(state, on: epoll)
            var blocked: UInt64?
            if !isWaiting, case .inSyscall? = state, let ranAt, let schedule = files.readSchedStat(),
                schedule.timeslices > 0, schedule.timeslices == ranAt.timeslices
            {
                let ran = schedule.runnableNanoseconds
                if ran >= ranAt.ran { blocked = ranAt.at &+ (ran &- ranAt.ran) }
            }
            let now = coarseNow()
            if !isWaiting, let state, !Self.inSyscall(state), let schedule = files.readSchedStat() {
                ranAt = (now, schedule.runnableNanoseconds, schedule.timeslices)
            }
            let pingChain = decisions.withLock { edges -> UInt64? in
                let actions = edges.look(at: now, waiting: isWaiting, thresholdNanoseconds: threshold, blockedSince: blocked)
                perform(actions)
                return actions.contains(.ping) ? edges.chain : nil
            }
            if let chain = pingChain { enqueue(ping(chain: chain)) }
        }
    }

    /// The loop was seen to wake (its epoll instance, or out of its wait right after a look): a
    /// stretch that begins now has an exact start.
    private func loopWoke() {
        if decisions.withLock({ $0.loopWoke(at: coarseNow()) }) { startFoundByLook.store(false, ordering: .relaxed) }
    }

    /// Waits for the idle loop to wake. The wake comes through the loop's epoll instance, nested in
    /// ours, and can be lost: woken, our instance asks the loop's whether it still has an event
    /// ready, and a loop that ran first and consumed it (NIO registers level-triggered) leaves none,
    /// so our wait goes on (traced; a server with one blocking request every 1.8 s lost 5 to 7 of
    /// 40 that way: docs/sources.md). So for `lookWindow` after the loop went idle the watcher also
    /// looks at the thread every half threshold: a loop found out of its wait woke since the look
    /// before, dated by its `schedstat` (exactly when it is still on a CPU, put there once since;
    /// otherwise half-way between the look before and the latest moment its run-queue and CPU time
    /// allow). An idle loop costs nothing after the window. Not `nested` (the loop's instance could
    /// not be put back in ours), the looks go on until the loop is found awake.
    private func waitForLoop(
        _ watch: UnsafeLoopEpollWatch, nested: Bool, files: ProcTaskFiles, epoll: Int32, threshold: UInt64
    ) -> UnsafeLoopEpollWatch.Wake {
        let idleAt = coarseNow()
        var seenWaiting = idleAt
        var asleep = files.readSchedStat()
        let period = max(1, Int32(min(threshold / 2_000_000, 60_000)))
        while !nested || coarseNow() &- idleAt < Self.lookWindowNanoseconds {
            let wake = watch.waitForLoop(milliseconds: period)
            guard case .timeout = wake else { return wake }
            let state = files.readSyscall()
            let now = coarseNow()
            if !Self.isWaiting(state, on: epoll) {
                // It woke after the look before and, if put on a CPU only once since, no later
                // than its run-queue and CPU time ago (exactly then if it is still on a CPU).
                var latest = now
                var ranOnce = false
                if let asleep, let schedule = files.readSchedStat(), schedule.timeslices == asleep.timeslices &+ 1 {
                    let ran = schedule.runnableNanoseconds &- asleep.runnableNanoseconds
                    if ran < now &- seenWaiting {
                        latest = now &- ran
                        ranOnce = true
                    }
                }
                let onCPU = ranOnce && state.map(Self.inSyscall) == false
                let woke = onCPU ? latest : seenWaiting &+ (latest &- seenWaiting) / 2
                startFoundByLook.store(true, ordering: .relaxed)
                _ = decisions.withLock { $0.loopWoke(at: woke) }
                return .loop  // (busy already: the caller's `loopWoke` changes nothing)
            }
            seenWaiting = now
            asleep = files.readSchedStat()
        }
        return watch.waitForLoop(milliseconds: -1)
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
    private func perform(_ actions: [EventLoopEdges.Action]) {
        for action in actions {
            switch action {
            case .declareBusy(let since): latch.recordBusy(QueueActivitySource.enter, sinceCoarseNanoseconds: since)
            case .declareIdle: latch.record(QueueActivitySource.leave)
            case .ping, .wakeWatcher, .pingLater: break
            }
        }
    }

    /// A ping of `chain`: on the loop, it ends the work it waited behind, wakes the watcher if it
    /// waits for it, and (chained) schedules the next one.
    private func ping(chain: UInt64) -> @Sendable () -> Void {
        { [self] in
            guard !stopped.load(ordering: .relaxed) else { return }
            let now = coarseNow()
            let threshold = thresholdMicroseconds() * 1000
            let actions = decisions.withLock { edges in
                let actions = edges.pingAnswered(at: now, chain: chain, thresholdNanoseconds: threshold)
                perform(actions)
                return actions
            }
            // (An answer that ends a hang is read by the watchdog after the hang's edges were.)
            if !actions.isEmpty { startFoundByLook.store(false, ordering: .relaxed) }
            for action in actions {
                switch action {
                case .wakeWatcher: watch.withLock { $0?.nudge() }
                case .pingLater(let nanoseconds): schedule?(nanoseconds, ping(chain: chain))
                case .ping, .declareBusy, .declareIdle: break
                }
            }
        }
    }

    var edges: ActivityEdges { hasExactEdges ? (startFoundByLook.load(ordering: .relaxed) ? .sampled : .exact) : .ping }

    /// A declared stretch is work the loop has not finished.
    func confirmBusy() -> BusyConfirmation { .busy(context: nil) }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        fallback.stop()
        sleeper.signal()
        watch.withLock { $0?.stop() }
    }
}
