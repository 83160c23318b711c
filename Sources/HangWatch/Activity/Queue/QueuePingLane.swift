import Dispatch

/// A queue source's timer as a lane of the watchdog: it ticks the source (a look at the draining
/// thread, a ping, an overdue stretch declared: `QueueActivitySource.tick()`) when the tick is due,
/// and asks to be woken at the next. A wake-up meant for another lane does not tick it early.
final class QueuePingLane: WatchdogLane, @unchecked Sendable {
    /// Weak: the source keeps its lane (`timerLane`), and the monitor keeps the source until the
    /// lane has finished.
    private weak var source: QueueActivitySource?
    /// The first tick's distance from the lane's first step (the source sent the first ping at
    /// `start`); then nil.
    private var firstTickIn: UInt64?
    /// When the next tick is due, on the environment's clock.
    private var next: UInt64 = 0
    let finished = DispatchSemaphore(value: 0)

    init(source: QueueActivitySource, firstTickIn: UInt64) {
        self.source = source
        self.firstTickIn = firstTickIn
    }

    func advance(_ turn: WatchdogTurn) -> WatchdogWait {
        let environment = turn.environment
        guard let source, !source.isStopped else { return .finished }
        let now = environment.now()
        if let first = firstTickIn {
            next = now + first
            firstTickIn = nil
        } else if now >= next {
            next = now + source.microseconds(untilCoarse: source.tick())
        }
        return .at(next)
    }
}
