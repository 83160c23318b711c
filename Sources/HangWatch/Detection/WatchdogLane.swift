import Dispatch
import HangWatchReport

/// One timed duty of the watchdog thread, the process's only timing thread for every source: a
/// watched source's hangs (`HangLane`), a queue's pings and looks (`QueuePingLane`), the cooperative
/// pool's probes and looks (`PoolWatch`). The watchdog steps every lane it holds, then waits on one
/// wake for the earliest time any of them asked for; each lane is a state machine whose steps run
/// only on that thread and depend only on the environment's time, so tests run any mix of lanes on
/// their own thread against scripted time.
protocol WatchdogLane: AnyObject, Sendable {
    /// Steps the lane at the environment's time and says what it waits for next. Called after every
    /// wait of the watchdog, a wake-up meant for another lane included: a lane asked to wait until
    /// a later time simply says so again.
    func advance(_ environment: any WatchdogEnvironment) -> WatchdogWait

    /// The watchdog's wait ended at `woke` by its deadline, `before` and `after` its own counters
    /// around it (nil when no lane asked for `.until`).
    func timedOut(woke: UInt64, before: ProcTask.SchedStat?, after: ProcTask.SchedStat?)

    /// For `.park`: announces the park on the lane's latch and re-reads it; false when the loop
    /// moved since `snapshot` (or the lane is stopping): the watchdog must not block.
    func park(_ snapshot: ActivitySnapshot) -> Bool

    /// Ends the park `park(_:)` announced, after the wait.
    func unpark()

    /// Signalled once the lane returned `.finished` and the watchdog let it go.
    var finished: DispatchSemaphore { get }
}

extension WatchdogLane {
    func timedOut(woke: UInt64, before: ProcTask.SchedStat?, after: ProcTask.SchedStat?) {}
    func park(_ snapshot: ActivitySnapshot) -> Bool { true }
    func unpark() {}
}

/// What a lane asks of the watchdog's next wait.
enum WatchdogWait: Equatable {
    /// Wake me when the loop leaves `snapshot` (park the latch), or at `deadline` (the heartbeat).
    case park(ActivitySnapshot, deadline: UInt64?)
    /// Wake me at `deadline`, and tell me how late I woke (a busy loop's threshold, the next
    /// sample): the watchdog reads its own counters around such a wait.
    case until(UInt64)
    /// Wake me at `time` (a timer: how late does not matter).
    case at(UInt64)
    /// Wake me when the wake is posted on my behalf (I armed something that posts it), or at
    /// `time` if one is given.
    case rest(until: UInt64?)
    /// Stopped: the lane is done.
    case finished
}
