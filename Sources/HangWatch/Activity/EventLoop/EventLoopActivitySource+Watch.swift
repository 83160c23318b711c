import Synchronization

/// The watch of one event loop, carried out by its lane on the watchdog's thread: what the lane
/// found (`WatcherEvent`) moves the loop between learning its epoll instance (pinged meanwhile),
/// looking at it while busy, waiting for the declared hang's answer, and waiting for the idle
/// loop's wake (its instance nested in the watcher's, looked at for a minute where a wake can be
/// lost). The decisions are `EventLoopEdges`'; this is where their inputs are read (the loop's
/// thread's `/proc` files, the iteration ends) and their waits kept.
extension EventLoopActivitySource {
    /// What the lane does for this loop; touched only by the watchdog's thread.
    enum Watch {
        /// Pinged once per threshold until the loop is seen in its wait (`files`: its thread's).
        case learning(files: ProcTaskFiles?)
        /// Its epoll instance is known (`registration`, in the watcher's).
        case watching(Watched)
    }
    struct Watched {
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
    enum Waiting {
        /// The time of the next look at the busy loop (its instance out of the watcher's).
        case look
        /// The ping's answer of a declared hang.
        case answer
        /// The idle loop's wake (`waitForLoop`).
        case wake(IdleWait)
    }
    /// An idle loop's wait: its instance polled or nested in the watcher's (unless `nested`
    /// failed), and, unless its wake is `certain` (polled), the looks of its first minute idle.
    struct IdleWait {
        let idleAt: UInt64
        var seenWaiting: UInt64
        var asleep: ProcTask.SchedStat?
        let nested: Bool
        let certain: Bool
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

    /// Pings once per threshold (the fallback) until the loop's thread is seen waiting on its epoll
    /// instance with no ping out; then watches that instance.
    func learnOrPing(_ known: ProcTaskFiles?, _ epollWatch: UnsafeLoopEpollWatch?) {
        var files = known
        if fallback.isQuiet, let tid = loopThread.withLock({ $0 }), let epollWatch {
            if files?.tid != tid { files = ProcTaskFiles(tid: tid) }
            if let files, let epoll = Self.epollWaitedOn(files), let registration = epollWatch.register(loopEpoll: epoll),
                Self.epollWaitedOn(files) == epoll, fallback.isQuiet
            {
                exactSinceUnits.store(max(coarseNow() >> 10, 1), ordering: .relaxed)
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
    static func epollWaitedOn(_ files: ProcTaskFiles) -> Int32? {
        guard case .inSyscall(let number, let arguments, _, _)? = files.readSyscall(), SyscallNames.isEpollWait(number),
            let first = arguments.first, first <= UInt(Int32.max)
        else { return nil }
        return Int32(first)
    }

    /// What to wait for next, from the edges' state: the next look at a busy loop, the answer of a
    /// declared hang, or the idle loop's wake.
    func decide(_ watched: inout Watched) {
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
    func look(_ watched: inout Watched) {
        let threshold = thresholdMicroseconds() * 1000
        let files = watched.files
        let iterationEnd = lastIterationEnd?()
        let progressed = iterationEnd.map { $0 > iterationEndSeen } ?? false
        let readsThread = EventLoopEdges.readsThread(
            lastIterationEnd: iterationEnd, endSeenBefore: iterationEndSeen, fineNow: UnsafeClock.monotonicNanoseconds())
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
        let pings = decideEdges(at: now, finishedAt: iterationEnd, sleptSince: inWait && progressed ? iterationEnd : nil) { edges -> Bool in
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
    func nextIdleLook(_ wait: IdleWait, after served: UInt64?) -> UInt64? {
        let now = coarseNow()
        guard !wait.certain, !wait.nested || now &- wait.idleAt < Self.lookWindowNanoseconds else { return nil }
        let period = max(1_000_000, min(thresholdMicroseconds() * 1000 / 2, 60_000_000_000))
        return (max(now, served ?? 0) / period + 1) &* period
    }

    /// The loop was seen to wake at `coarse` (its epoll instance, or out of its wait right after a
    /// look): a stretch that begins then has an exact start.
    func loopWoke(at coarse: UInt64) {
        if decideEdges(at: coarse, { $0.loopWoke(at: coarse) }) { startFoundByLook.store(false, ordering: .relaxed) }
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
    func idleLook(_ wait: inout IdleWait, _ watched: Watched) -> Bool {
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
            _ = decideEdges(at: woke) { $0.loopWoke(at: woke) }
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

    /// Whether `state` is the loop's wait on `epoll`. Not readable (the thread is gone): taken as
    /// waiting, so no hang is made up.
    static func isWaiting(_ state: ProcTask.SyscallState?, on epoll: Int32) -> Bool {
        guard let state else { return true }
        guard case .inSyscall(let number, let arguments, _, _) = state else { return false }
        return SyscallNames.isEpollWait(number) && arguments.first == UInt(epoll)
    }

    static func inSyscall(_ state: ProcTask.SyscallState) -> Bool {
        if case .inSyscall = state { return true }
        return false
    }
}
