/// Decides an event loop's busy edges from what its watcher sees (pure: times come in as values,
/// so tests script them). Times are monotonic nanoseconds, the latch's timebase: the watcher's
/// looks and wakes on `CLOCK_MONOTONIC_COARSE`, a ping's answer (read on the loop) on the fine
/// clock, which the coarse one follows a tick (4 ms) behind at most; a comparison of the two never
/// assumes which is later.
///
/// - The loop woke (its epoll instance had an event): work may have begun, at that moment.
/// - A look an interval later (`lookInterval`: 10 ms at a 250 ms threshold): a loop back in its wait finished that work well within the
///   threshold. One still busy gets a ping: a closure on the loop, which runs right after the
///   work in hand, so its answer is the work's end.
/// - Still unanswered a threshold after the wake: a hang, busy since the wake (exact start). The
///   ping's answer ends it (exact end).
/// - Under steady load the loop is busy at every look; each answered ping is a boundary between
///   iterations, so a hang is busy since the last answer at most. A loop found blocked in a system
///   call is dated more closely when the watcher can (`blockedSince`: the CPU time the thread had
///   since a look that found it on a CPU, when it was not put on one again since); a computing one
///   is known to one look interval.
/// - The looks fall on multiples of the look interval, the same instants for every loop: one
///   wake-up of the watcher looks at all of them. Where the loop reports the end of each of its
///   iterations (SwiftNIO's `NIOEventLoopMetricsDelegate`: `lastIterationEnd`), the boundaries under
///   load are the loop's own: each look reads when its last iteration ended, and a busy stretch is
///   busy since then at most. No ping goes out before a hang is declared (no timer on the loop);
///   the declared hang gets one, whose answer ends it. A loop found in its wait after an iteration
///   slept since: busy from that look at the earliest (`readsThread` says when a look must find
///   out). A loop that reports no iteration at all (its group was made without the delegate: what
///   a Vapor or Hummingbird user gets by default) is pinged at each of those looks instead, and
///   each answer is a boundary: no timer on the loop, no wake-up of the watcher of its own. An
///   answer wakes the watcher only when it waits for that answer (a look found the ping still out,
///   or a hang was declared); a quick one is seen at the next look. (Pings are not chained on the
///   loop, one scheduled a look interval after each answer: that is a timer firing on the loop 100
///   times a second, about 0.5 % of a saturated server's throughput; docs/performance.md, `H1`.)
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
        /// Wake the watcher (it sleeps until this answer, or until the threshold).
        case wakeWatcher
    }

    private(set) var phase = Phase.idle
    /// When a look last found the loop waiting.
    private(set) var idleAt: UInt64?
    /// When the last look at the busy loop was; the next comes a look interval after it. Nil after a
    /// wake from idle and after an answer the watcher was woken for: the next look is then a look
    /// interval after that moment.
    private(set) var lookedAt: UInt64?
    /// A look found the ping still out: the watcher sleeps until the threshold, and the answer wakes it.
    private(set) var awaitingAnswer = false
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

    /// When the watcher must look next: a look interval after a wake, an answer or the look before;
    /// with the ping still out at a look, a threshold after the start (the answer wakes it before).
    /// Nil while idle (it sleeps until the loop wakes) and during a declared hang (it sleeps until
    /// the ping's answer).
    func nextLook(thresholdNanoseconds: UInt64) -> UInt64? {
        guard case .busy(let since, let pinged, let declared, _) = phase, !declared else { return nil }
        let interval = lookInterval(thresholdNanoseconds: thresholdNanoseconds)
        let decision = since &+ max(thresholdNanoseconds, interval)
        if !pinged { return ((lookedAt ?? since) / interval &+ 1) &* interval }
        guard pinged else { return (lookedAt ?? since) &+ interval }
        return awaitingAnswer ? decision : min((lookedAt ?? since) &+ interval, decision)
    }

    /// The loop's epoll instance had an event at `now` (`steady`: it was seen waiting less than a
    /// sample interval ago, under load; recorded, not used for now).
    /// Returns whether it began a busy stretch (false: the loop was busy already).
    @discardableResult
    mutating func loopWoke(at now: UInt64) -> Bool {
        guard case .idle = phase else { return false }
        let steady = idleAt.map { now &- $0 < intervalNanoseconds } ?? false
        phase = .busy(since: now, pinged: false, declared: false, steady: steady)
        lookedAt = nil
        awaitingAnswer = false
        return true
    }

    /// How long before a look the loop's last iteration may have ended for the look to
    /// take the loop as working without reading its thread (`readsThread`).
    static let freshIterationNanoseconds: UInt64 = 1_000_000

    /// Whether a look reads the loop's thread (is it in its wait?). Not when the loop
    /// finished an iteration since the look before (`endSeenBefore`), at most
    /// `freshIterationNanoseconds` before the look (`fineNow`, the iterations' clock): it is
    /// working. An older end may have been followed by a sleep; a look that did not see it would
    /// date a block after that sleep from the end before it. Read at every look past that
    /// millisecond, a sleep goes unseen only when it ends within a look interval and a millisecond
    /// of the iteration before it, and a block after it is dated that much early at most.
    static func readsThread(lastIterationEnd: UInt64?, endSeenBefore: UInt64, fineNow: UInt64) -> Bool {
        guard let end = lastIterationEnd, end > endSeenBefore else { return true }
        return fineNow > end &+ freshIterationNanoseconds
    }

    /// A look at `now`: the loop's thread is in its wait (`waiting`) or not. `blockedSince`: when
    /// the blocking call the thread is in now began, if the watcher could tell (under load, the
    /// work before it since the last answer was other, short work). `lastIterationEnd`:
    /// when the loop last finished an iteration, nil if it never reported one.
    /// `inWaitAfterIteration`: the loop finished an iteration since the look before and
    /// is in its wait now: busy from now at the earliest, not idle (under load it wakes again
    /// within microseconds; the first look that finds no new iteration decides).
    mutating func look(
        at now: UInt64, waiting: Bool, thresholdNanoseconds: UInt64, blockedSince: UInt64? = nil, lastIterationEnd: UInt64? = nil,
        inWaitAfterIteration: Bool = false
    ) -> [Action] {
        guard case .busy(var since, var pinged, let declared, var steady) = phase else { return [] }
        // An iteration that ended since the stretch began: busy since then at most (its clock is
        // finer than the coarse one: never later than now).
        if !declared, let end = lastIterationEnd, end > since {
            since = min(end, now)
            steady = true
        }
        // In its wait after that iteration: whatever comes next begins after this look.
        if !declared, inWaitAfterIteration, now > since {
            since = now
            steady = true
        }
        if !declared, let blockedSince, blockedSince > since, blockedSince <= now { since = blockedSince }
        if waiting {
            // Done (a hang whose ping was lost with the loop ends here, at the look).
            phase = .idle
            idleAt = now
            lookedAt = nil
            awaitingAnswer = false
            return declared ? [.declareIdle] : []
        }
        lookedAt = now
        var actions: [Action] = []
        // A ping out since the look before: the watcher now waits for its answer.
        awaitingAnswer = pinged
        var nowDeclared = declared
        if !declared, now &- since >= thresholdNanoseconds, now >= since {
            nowDeclared = true
            actions.append(.declareBusy(since: since))
        }
        // The loop's iterations are the boundaries: a ping goes out only for a declared hang (its
        // answer ends it), or where the loop reports none.
        let pings = nowDeclared || lastIterationEnd == nil
        if !pinged, pings {
            actions.insert(.ping, at: 0)
            pinged = true
        }
        phase = .busy(since: since, pinged: pinged, declared: nowDeclared, steady: steady)
        return actions
    }

    /// A ping ran on the loop at `now`: the work it waited behind is over. The loop may go on
    /// working (load): busy from now. The watcher is woken only if it waits for this answer.
    mutating func pingAnswered(at now: UInt64) -> [Action] {
        guard case .busy(_, _, let declared, _) = phase else { return [] }
        let wake = declared || awaitingAnswer
        if wake { lookedAt = nil }
        awaitingAnswer = false
        phase = .busy(since: now, pinged: false, declared: false, steady: true)
        var actions: [Action] = declared ? [.declareIdle] : []
        if wake { actions.append(.wakeWatcher) }
        return actions
    }
}
