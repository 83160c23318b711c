import Dispatch
import HangWatchReport

/// One timed duty of the watchdog thread, the process's only timing thread for every source: a
/// watched source's hangs (`HangLane`), a queue's pings and looks (`QueuePingLane`), the cooperative
/// pool's probes and looks (`PoolWatch`), reports held for the rate limit's token
/// (`ReportHoldBackLane`), a report directory's heartbeat (`HeartbeatLane`), `hangwatch dump`
/// requests (`DumpLane`), an event loop's looks (`EventLoopLane`). The watchdog steps every lane
/// it holds, then waits on one wake for the earliest time any of them asked for; each lane is a
/// state machine whose steps run
/// only on that thread and depend only on the environment's time, so tests run any mix of lanes on
/// their own thread against scripted time.
protocol WatchdogLane: AnyObject, Sendable {
    /// The lane's one step: carried out at the turn's time, it says what the lane waits for next.
    /// Called after every wait of the watchdog, a wake-up meant for another lane included (a lane
    /// asked to wait until a later time simply says so again); after a wait that timed out, only
    /// for the lanes whose time came, with how late it woke (`turn.timedOut`).
    func advance(_ turn: WatchdogTurn) -> WatchdogWait

    /// Signalled once the lane returned `.finished` and the watchdog let it go (what
    /// `Watchdog.remove` waits for).
    var finished: DispatchSemaphore { get }
}

/// One turn of the watchdog, as its lanes see it: the environment (the time, the counters), and
/// how the wait before it ended.
struct WatchdogTurn {
    /// The wait ended by its deadline at `woke`; it began at `began`; `began`, `before` and `after`
    /// are read around it only when a lane asked for `.until` (nil otherwise). Only the wait's
    /// own lateness (past the deadline, or past its start when the turn before it ran past the
    /// deadline) is covered by the counters: time the turn itself took (its lanes' steps, or off
    /// its CPU before `before` was read) is not. A hang lane judges a stop before a hang (which
    /// would give the loop a second look) by the wait's lateness only.
    struct TimedOut {
        var woke: UInt64
        var began: UInt64?
        var before: ProcTask.SchedStat?
        var after: ProcTask.SchedStat?

        /// How late the wait itself woke for `deadline`: from the deadline, or from the wait's
        /// start if that came after it.
        func lateInWait(for deadline: UInt64) -> UInt64 {
            let from = max(deadline, began ?? 0)
            return woke > from ? woke - from : 0
        }
    }

    let environment: any WatchdogEnvironment
    /// Nil after a wake-up (an edge, a control call, a request) and at the first turn.
    var timedOut: TimedOut?
}

/// What a parked lane waits on: its latch, the snapshot it last saw, and its stop. Parking is the
/// latches' handshake, which the watchdog carries out for every parked lane before it blocks.
struct WatchdogPark: Equatable {
    let latch: ActivityLatch
    let snapshot: ActivitySnapshot
    let stop: StopFlag

    static func == (a: WatchdogPark, b: WatchdogPark) -> Bool {
        a.latch === b.latch && a.snapshot == b.snapshot && a.stop === b.stop
    }

    /// Announces the park on the latch and reads it again: false when the loop moved since
    /// `snapshot` or the lane is stopping (the watchdog must not block).
    func announce() -> Bool {
        latch.park() == snapshot && !stop.isRaised
    }

    /// Ends the park `announce()` began, after the wait.
    func withdraw() {
        latch.unpark()
    }
}

/// What a lane asks of the watchdog's next wait.
enum WatchdogWait: Equatable {
    /// Wake me when the loop leaves the park's snapshot (the latch posts the wake on its next busy
    /// edge), or at `deadline` (the heartbeat).
    case park(WatchdogPark, deadline: UInt64?)
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
