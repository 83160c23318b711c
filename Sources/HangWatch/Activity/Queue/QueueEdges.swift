/// Decides a pinged queue's busy edges from its pinging thread's looks at the thread that drains
/// it (pure: times come in as values, so tests script them). Times are `CLOCK_MONOTONIC_COARSE`
/// nanoseconds, the latch's clock.
///
/// A queue cannot be watched from inside (its blocks run on a libdispatch worker the monitor does
/// not own), but the thread that answered the last ping can be looked at through `/proc` once per
/// sample interval, which costs one read of a small file while it sleeps:
///
/// - Seen in its idle wait: the queue had nothing to run, now (`responsiveAt`).
/// - Seen working: work began since the last look. Its start is dated from the thread's own clock
///   when that proves it (woken once and on a CPU ever since: a computation), else half-way
///   between the two looks (off by at most half an interval). A ping goes out: it runs right
///   after the work in hand, so its answer is the work's end.
/// - A threshold after that start with the ping still out: a hang, declared busy since the start
///   (`sampled` edges). The answer ends it.
/// - Where the thread or its idle wait is not known (before the first answers, a thread gone),
///   and to find work that moved to another thread, the queue is pinged once per threshold as
///   before: a ping still out a threshold after it was enqueued is a hang since the enqueue
///   (`ping` edges: a lower bound, detected one to two thresholds late).
struct QueueEdges: Sendable, Equatable {
    /// What a look found the draining thread doing.
    enum Observation: Sendable, Equatable {
        /// In its idle wait: the queue has nothing to run.
        case waiting
        /// Not in its idle wait: running or blocked in a block's work. `since`: when that began,
        /// where the thread's clock proves it (read on `CLOCK_MONOTONIC`, which runs up to a tick
        /// of the coarse clock ahead of the look's time).
        case working(since: UInt64?)
        /// Not known: no draining thread or idle wait learnt yet, or the thread is gone.
        case unknown
    }

    enum Action: Sendable, Equatable {
        /// Enqueue a ping on the queue.
        case ping
        /// Tell the watchdog: busy since this time (a threshold has passed), found this way.
        case declareBusy(since: UInt64, edges: ActivityEdges)
        /// Tell the watchdog: idle again (the hang ended now).
        case declareIdle
    }

    let intervalNanoseconds: UInt64
    /// When the queue was last known to have nothing in hand: a ping's answer or a look that found
    /// the thread in its idle wait.
    private(set) var responsiveAt: UInt64?
    /// When the previous look was.
    private(set) var lastLookAt: UInt64?
    /// The outstanding ping's enqueueing, and the last ping's.
    private(set) var pingEnqueuedAt: UInt64?
    private(set) var lastPingAt: UInt64?
    /// When the work in hand began, as the looks dated it (nil: not dated by a look).
    private(set) var busySince: UInt64?
    /// The last ping's answer (the queue had nothing in hand then).
    private(set) var answeredAt: UInt64?
    /// The looks since that answer did not see every worker that may run the queue (one was found
    /// since): their idle sightings prove nothing, and only a start the worker's clock proves dates
    /// the work (`workersFound`).
    private(set) var looksUnproven = false
    /// The watchdog was told (and how the stretch was found).
    private(set) var declared: ActivityEdges?

    init(intervalNanoseconds: UInt64) {
        self.intervalNanoseconds = intervalNanoseconds
    }

    /// How much earlier than a period a tick may come and still count as a period later: a tick
    /// once per threshold reads the coarse clock (4 ms steps) a little short now and then, and
    /// would otherwise wait a whole period more. Also how far after a look's coarse time a start
    /// proven on the fine clock may lie.
    private var slack: UInt64 { min(intervalNanoseconds / 2, 10_000_000) }

    /// When the pinging thread must look next, after a look at `now`: an interval later, or at
    /// the moment a dated stretch reaches the threshold if that comes first.
    func nextLook(after now: UInt64, thresholdNanoseconds: UInt64) -> UInt64 {
        var next = now &+ intervalNanoseconds
        if declared == nil, pingEnqueuedAt != nil, let busySince {
            next = min(next, max(now &+ 1_000_000, busySince &+ thresholdNanoseconds))
        }
        return next
    }

    /// A look at `now` found the thread as `observation`. `eager`: ping at every look, not once
    /// per threshold, when no ping is out (while the source learns the thread's idle wait).
    mutating func look(at now: UInt64, _ observation: Observation, thresholdNanoseconds: UInt64, eager: Bool = false) -> [Action] {
        defer { lastLookAt = now }
        var actions: [Action] = []
        switch observation {
        case .waiting:
            responsiveAt = now
            busySince = nil
            if declared == .sampled {
                // Its ping's answer is on its way; the look saw the end first. The ping is now as
                // good as one sent at this look (it is not overdue since it was enqueued).
                declared = nil
                pingEnqueuedAt = now
                actions.append(.declareIdle)
            }
        case .working(let since):
            // Dated only when the queue was known to be idle at the look before (or answered
            // since): the work began between then and now. After looks that missed a worker, only
            // by the worker's clock, and not before the last answer. A look in the same tick of
            // the coarse clock as the answer dates it by the worker's clock all the same: left to
            // the next look, it would be dated half-way, and a job following the last one at once
            // would read up to 25 ms short.
            // A start proven on the fine clock is kept as proven, though it may lie up to a tick
            // after the look's coarse time: cut to that time, it would be up to 4 ms early when
            // the look came within a tick of the start.
            if busySince == nil, looksUnproven, let since, let answeredAt, since >= answeredAt, since <= now &+ slack {
                busySince = since
            } else if busySince == nil, !looksUnproven, let responsiveAt, let lastLookAt, responsiveAt >= lastLookAt,
                responsiveAt < now || since != nil && responsiveAt == now
            {
                busySince = since.map { min(max($0, responsiveAt), now &+ slack) } ?? responsiveAt &+ (now &- responsiveAt) / 2
            }
            if pingEnqueuedAt == nil { actions.append(ping(at: now)) }
        case .unknown:
            break
        }
        let period = eager ? intervalNanoseconds : thresholdNanoseconds
        if pingEnqueuedAt == nil, declared == nil, lastPingAt.map({ now &- $0 &+ slack >= period }) ?? true {
            // Once per threshold whatever the looks say: work that moved to another thread.
            actions.append(ping(at: now))
        }
        if declared == nil, let enqueuedAt = pingEnqueuedAt {
            if let busySince, now >= busySince, now &- busySince >= thresholdNanoseconds {
                declared = .sampled
                actions.append(.declareBusy(since: busySince, edges: .sampled))
            } else if now >= enqueuedAt, now &- enqueuedAt &+ slack >= thresholdNanoseconds {
                let edges: ActivityEdges = busySince == nil ? .ping : .sampled
                declared = edges
                actions.append(.declareBusy(since: busySince ?? enqueuedAt, edges: edges))
            }
        }
        return actions
    }

    /// Whether a ping has been out longer than `duration` at `now`: the queue has work in hand, even
    /// where no look saw a thread running it (it runs on a worker not looked at yet).
    func pingOutstanding(at now: UInt64, longerThan duration: UInt64) -> Bool {
        guard let pingEnqueuedAt, now >= pingEnqueuedAt else { return false }
        return now &- pingEnqueuedAt > duration
    }

    /// A worker that may run the queue was found that the looks since the last answer did not see:
    /// what they saw as idle proves nothing.
    mutating func workersFound() {
        guard busySince == nil else { return }
        looksUnproven = true
        responsiveAt = answeredAt
    }

    /// The ping ran at `now`: the work it waited behind is over.
    mutating func pingAnswered(at now: UInt64) -> [Action] {
        guard pingEnqueuedAt != nil else { return [] }
        pingEnqueuedAt = nil
        responsiveAt = now
        answeredAt = now
        looksUnproven = false
        busySince = nil
        guard declared != nil else { return [] }
        declared = nil
        return [.declareIdle]
    }

    private mutating func ping(at now: UInt64) -> Action {
        pingEnqueuedAt = now
        lastPingAt = now
        return .ping
    }
}
