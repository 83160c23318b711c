/// Decides an event loop's busy edges from what its watcher sees (pure: times come in as values,
/// so tests script them). Times are `CLOCK_MONOTONIC_COARSE` nanoseconds, the latch's clock.
///
/// - The loop woke (its epoll instance had an event): work may have begun, at that moment.
/// - A look an interval later: a loop back in its wait finished that work well within the
///   threshold. One still busy gets a ping: a closure on the loop, which runs right after the
///   work in hand, so its answer is the work's end.
/// - Still unanswered a threshold after the wake: a hang, busy since the wake (exact start). The
///   ping's answer ends it (exact end).
/// - Under steady load the loop is busy at every look; each answered ping is a boundary between
///   iterations, so a hang is busy since the last answer at most (then the start is known to one
///   interval, not exactly).
struct EventLoopEdges: Sendable, Equatable {
    enum Phase: Sendable, Equatable {
        /// Waiting for events (seen in its wait at the last look).
        case idle
        /// Busy since `since`; `pinged` when a ping is out; `declared` when the watchdog was told.
        case busy(since: UInt64, pinged: Bool, declared: Bool)
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
    let intervalNanoseconds: UInt64

    init(intervalNanoseconds: UInt64) {
        self.intervalNanoseconds = intervalNanoseconds
    }

    /// When the watcher must look next: an interval after the wake (or the last answer), then a
    /// threshold after it. Nil while idle (it sleeps until the loop wakes) and during a declared
    /// hang (it sleeps until the ping's answer).
    func nextLook(thresholdNanoseconds: UInt64) -> UInt64? {
        guard case .busy(let since, let pinged, let declared) = phase, !declared else { return nil }
        return since &+ (pinged ? max(thresholdNanoseconds, intervalNanoseconds) : intervalNanoseconds)
    }

    /// The loop's epoll instance had an event at `now`.
    mutating func loopWoke(at now: UInt64) {
        if case .idle = phase { phase = .busy(since: now, pinged: false, declared: false) }
    }

    /// A look at `now`: the loop's thread is in its wait (`waiting`) or not.
    mutating func look(at now: UInt64, waiting: Bool, thresholdNanoseconds: UInt64) -> [Action] {
        guard case .busy(let since, let pinged, let declared) = phase else { return [] }
        if waiting {
            // Done (a hang whose ping was lost with the loop ends here, at the look).
            phase = .idle
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
        phase = .busy(since: since, pinged: nowPinged, declared: nowDeclared)
        return actions
    }

    /// The ping ran on the loop at `now`: the work it waited behind is over. The loop may go on
    /// working (load): busy from now, looked at again an interval later.
    mutating func pingAnswered(at now: UInt64) -> [Action] {
        guard case .busy(_, _, let declared) = phase else { return [] }
        phase = .busy(since: now, pinged: false, declared: false)
        return declared ? [.declareIdle] : []
    }
}
