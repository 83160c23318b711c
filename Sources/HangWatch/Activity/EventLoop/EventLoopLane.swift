import Dispatch

/// An event loop's timed work as a lane of the watchdog (`EventLoopActivitySource.timerLane`): the
/// looks at the busy loop, the looks of an idle loop's first minute, the pings until its epoll
/// instance is learnt, and what the watcher thread saw (a wake) or a ping's answer brought, each
/// when it is due or posted (`laneStep`). A wake-up meant for another lane steps it too, and finds
/// nothing new. Stopped, it lets go of the loop's instance here, on the thread that held it.
final class EventLoopLane: WatchdogLane, @unchecked Sendable {
    /// Weak: the source keeps its lane, and the monitor keeps the source until the lane has finished.
    private weak var source: EventLoopActivitySource?
    /// When the source's deadline falls, on the environment's clock (nil: none).
    private var next: UInt64?
    /// `next` was cut to a minute: the deadline is still ahead when it comes.
    private var capped = false
    let finished = DispatchSemaphore(value: 0)

    init(source: EventLoopActivitySource) {
        self.source = source
    }

    func advance(_ turn: WatchdogTurn) -> WatchdogWait {
        guard let source, !source.isStopped else {
            source?.watcherRemoved()
            return .finished
        }
        let now = turn.environment.now()
        source.laneStep(due: !capped && next.map { now >= $0 } ?? false)
        guard let deadline = source.watcherDeadline else {
            next = nil
            return .rest(until: nil)
        }
        let distance = source.microseconds(untilCoarse: deadline)
        capped = distance >= QueueActivitySource.longestWaitMicroseconds
        next = now + distance
        return .at(now + distance)
    }
}
