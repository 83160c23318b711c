/// Decides an event loop's busy edges from what its watcher sees (pure: times come in as values,
/// so tests script them). Times are `CLOCK_MONOTONIC_COARSE` nanoseconds, the latch's clock.
///
/// - The loop woke (its epoll instance had an event): work may have begun, at that moment.
/// - A look an interval later (`lookInterval`: 10 ms at a 250 ms threshold): a loop back in its wait finished that work well within the
///   threshold. One still busy gets a ping: a closure on the loop, which runs right after the
///   work in hand, so its answer is the work's end.
/// - Still unanswered a threshold after the wake: a hang, busy since the wake (exact start). The
///   ping's answer ends it (exact end).
/// - Under steady load the loop is busy at every look (one per sample interval then); each answered
///   ping is a boundary between iterations, so a hang is busy since the last answer at most. A loop found blocked in a system
///   call is dated more closely when the watcher can (`blockedSince`: the CPU and run-queue time
///   the thread had since the answer, when it slept only once since, in that call); a computing
///   one is known to one interval.
struct EventLoopEdges: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        /// Waiting for events (seen in its wait at the last look).
        case idle
        /// Busy since `since`; `pinged` when a ping is out; `declared` when the watchdog was told;
        /// `steady` when `since` is a ping's answer, not a wake from idle (the loop under load).
        case busy(since: UInt64, pinged: Bool, declared: Bool, steady: Bool = false)
    }

    enum Action: Sendable, Equatable {
        /// Enqueue a ping on the loop.
        case ping
        /// Tell the watchdog: busy since this time (it is a hang: a threshold has passed).
        case declareBusy(since: UInt64)
        /// Tell the watchdog: idle again (the hang ended now).
        case declareIdle
    }

    private(set) var phase = Phase.idle
    /// When a look last found the loop waiting.
    private(set) var idleAt: UInt64?
    let intervalNanoseconds: UInt64

    init(intervalNanoseconds: UInt64) {
        self.intervalNanoseconds = intervalNanoseconds
    }

    /// How long after a wake or an answer the watcher looks: the sample interval, but at most a
    /// 25th of the threshold (at least 5 ms), so that under steady load, where each answer is the
    /// last known boundary, a hang's start is off by at most 4 % of the threshold. Under load each
    /// look costs a ping and a wake-up of the watcher (docs/performance.md, `H1`).
    func lookInterval(thresholdNanoseconds: UInt64) -> UInt64 {
        max(5_000_000, min(intervalNanoseconds, thresholdNanoseconds / 25))
    }

    /// When the watcher must look next: a look interval after a wake (a sample interval after an
    /// answer), then a threshold after it. Nil while idle (it sleeps until the loop wakes) and
    /// during a declared hang (it sleeps until the ping's answer).
    func nextLook(thresholdNanoseconds: UInt64) -> UInt64? {
        guard case .busy(let since, let pinged, let declared, _) = phase, !declared else { return nil }
        // (Looking only once per sample interval under load, `steady`, cut the cost to a third but
        // put starts up to an interval early: a loop blocked 300 ms under load read as 328-336 ms.)
        let interval = lookInterval(thresholdNanoseconds: thresholdNanoseconds)
        return since &+ (pinged ? max(thresholdNanoseconds, interval) : interval)
    }

    /// The loop's epoll instance had an event at `now` (`steady`: it was seen waiting less than a
    /// sample interval ago, under load; recorded, not used for now).
    mutating func loopWoke(at now: UInt64) {
        guard case .idle = phase else { return }
        let steady = idleAt.map { now &- $0 < intervalNanoseconds } ?? false
        phase = .busy(since: now, pinged: false, declared: false, steady: steady)
    }

    /// A look at `now`: the loop's thread is in its wait (`waiting`) or not. `blockedSince`: when
    /// the blocking call the thread is in now began, if the watcher could tell (under load, the
    /// work before it since the last answer was other, short work).
    mutating func look(at now: UInt64, waiting: Bool, thresholdNanoseconds: UInt64, blockedSince: UInt64? = nil) -> [Action] {
        guard case .busy(var since, let pinged, let declared, let steady) = phase else { return [] }
        if !declared, let blockedSince, blockedSince > since, blockedSince <= now { since = blockedSince }
        if waiting {
            // Done (a hang whose ping was lost with the loop ends here, at the look).
            phase = .idle
            idleAt = now
            return declared ? [.declareIdle] : []
        }
        var actions: [Action] = []
        var nowPinged = pinged
        if !pinged {
            nowPinged = true
            actions.append(.ping)
        }
        var nowDeclared = declared
        if !declared, now &- since >= thresholdNanoseconds, now >= since {
            nowDeclared = true
            actions.append(.declareBusy(since: since))
        }
        phase = .busy(since: since, pinged: nowPinged, declared: nowDeclared, steady: steady)
        return actions
    }

    /// The ping ran on the loop at `now`: the work it waited behind is over. The loop may go on
    /// working (load): busy from now, looked at again an interval later.
    mutating func pingAnswered(at now: UInt64) -> [Action] {
        guard case .busy(_, _, let declared, _) = phase else { return [] }
        phase = .busy(since: now, pinged: false, declared: false, steady: true)
        return declared ? [.declareIdle] : []
    }
}
