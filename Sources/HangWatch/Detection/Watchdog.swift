import Dispatch
import Foundation
import HangWatchReport
import Logging
import Synchronization

/// The watchdog: the process's one thread for every watched source (`HangLane`s: every monitor's,
/// a whole event-loop group's) and for every other timed duty (a queue's pings, an event loop's
/// looks, the pool watch, the writers' held reports, the heartbeats, dump requests: `WatchdogLane`),
/// owned by the `ProcessRuntime`. It sleeps
/// while every loop sleeps (parked on the latches' shared semaphore, woken by a loop's next
/// idle-to-busy transition), sleeps until the earliest
/// threshold deadline while a loop is busy, and when a deadline passes with no progress the lane
/// records the hang: samples every `sampleInterval` until the loop moves, then hands the finished
/// hang to the sink. Lanes record their hangs side by side: the thread never blocks in one.
///
/// Everything it decides depends only on the time and waits of its `environment`, the latches'
/// words, the sources' confirmations and the samples the samplers return: `run()` runs on its own
/// thread in a monitor (`add(_:)` starts it), or on a test's thread against a scripted environment.
final class Watchdog: @unchecked Sendable {
    struct Settings: Sendable {
        var busyMask: UInt8
        var sampleIntervalMicroseconds: UInt64
        var maxSamples: Int
        var clockResolutionMicroseconds: UInt64
        var serviceName: String
    }

    private let environment: any WatchdogEnvironment
    /// Posted by every lane's latch (a loop leaving idle while parked), by control calls and by
    /// the parties a resting lane waits for; the latches of the lanes are made with it
    /// (`ActivityLatch(…, wake:)`).
    let wake: WatchdogWake
    /// True: `run()` runs on a thread of its own while the watchdog has lanes. False (scripted
    /// time): the caller runs it on its own thread.
    let startsThread: Bool
    /// The thread, while it has lanes (it exits when its last lane leaves; the next `add` starts
    /// another).
    private let thread: OnDemandThread<any WatchdogLane>
    /// `lanes`: watched from the start (by `run()` on the caller's thread, in tests); the latches
    /// must post `wake`.
    init(
        environment: any WatchdogEnvironment, startsThread: Bool = true, wake: WatchdogWake = WatchdogWake(),
        lanes: [any WatchdogLane] = []
    ) {
        self.environment = environment
        self.startsThread = startsThread
        self.wake = wake
        thread = OnDemandThread(name: Self.threadName, stackSize: 1 << 20, members: lanes)
    }

    /// The watchdog thread's name, as `top -H` and `/proc/<pid>/task/*/comm` show it (15 bytes at most).
    static let threadName = "hangwatch-wdog"

    /// Watches `lane` from now on (its latch must post `wake`): from its next turn, starting the
    /// thread if none runs (scripted: from the next turn of the caller's `run()`).
    func add(_ lane: any WatchdogLane) {
        guard startsThread else { return thread.enlist(lane) }
        if !thread.add(lane, body: { [self] in run() }) { wake.signal() }
    }

    /// Waits for `lane` to finish after its stop was raised (a hang in progress is handed on as
    /// `monitor stopped during hang`). Scripted: the caller's `run()` drops it at its next turn.
    func remove(_ lane: any WatchdogLane) {
        remove([lane]) {}
    }

    /// Lets `lanes` go, their stops raised, and then runs `then`: on a thread, once each has
    /// finished (a hang in progress handed on); scripted, at once when none of them is watched
    /// (any more), else on the caller's `run()` at the turn that dropped the last of them (the
    /// script's own step may be what asks: `run()` must go on to finish them first).
    func remove(_ lanes: [any WatchdogLane], then: @escaping @Sendable () -> Void) {
        guard startsThread else {
            let watched = thread.contains { member in lanes.contains { $0 === member } }
            if watched {
                removals.withLock { $0.append(Removal(lanes: lanes.map(ObjectIdentifier.init), then: then)) }
                wake.signal()
            } else {
                then()
            }
            return
        }
        wake.signal()
        for lane in lanes { lane.finished.wait() }
        then()
    }

    /// Scripted removals waiting for their lanes to be dropped by `run()`.
    private struct Removal {
        var lanes: [ObjectIdentifier]
        var then: @Sendable () -> Void
    }
    private let removals = Mutex<[Removal]>([])

    /// Scripted: runs the removals none of whose lanes is watched any more.
    private func completeRemovals(watching current: [any WatchdogLane]) {
        let due = removals.withLock { removals -> [Removal] in
            let watched = Set(current.map(ObjectIdentifier.init))
            let due = removals.filter { $0.lanes.allSatisfy { !watched.contains($0) } }
            removals.removeAll { $0.lanes.allSatisfy { !watched.contains($0) } }
            return due
        }
        for removal in due { removal.then() }
    }

    /// Steps the lanes and waits, until no lane is left (each leaves once stopped). After a wake-up
    /// (an edge, a control call, a request) every lane steps; after a wait that timed out, only the
    /// lanes whose time came, told how late it was (`WatchdogTurn.timedOut`): nothing was posted,
    /// so the others would answer as they did (a queue's pings, 20 a second, do not step a parked
    /// loop's lane each time).
    func run() {
        // Kept from turn to turn, so a wake-up allocates nothing: the lanes that finished, the
        // parked ones, and each lane's last answer (`answers[i]` is `answered[i]`'s).
        var done: [any WatchdogLane] = []
        var parked: [WatchdogPark] = []
        var answered: [any WatchdogLane] = []
        var answers: [WatchdogWait?] = []
        var timedOut: WatchdogTurn.TimedOut?
        while true {
            let (current, dropped) = thread.turn(dropping: { lane in done.contains { $0 === lane } })
            for lane in dropped { lane.finished.signal() }
            if !startsThread && !dropped.isEmpty { completeRemovals(watching: current) }
            guard !current.isEmpty else { return }
            done.removeAll(keepingCapacity: true)
            parked.removeAll(keepingCapacity: true)
            Self.align(&answers, of: &answered, to: current)
            var deadline: UInt64?
            var timed = false
            for (index, lane) in current.enumerated() {
                let wait: WatchdogWait
                if let now = timedOut?.woke, let answer = answers[index], !Self.isDue(answer, at: now) {
                    wait = answer
                } else {
                    wait = lane.advance(WatchdogTurn(environment: environment, timedOut: timedOut))
                    answers[index] = wait
                }
                switch wait {
                case .finished:
                    done.append(lane)
                case .until(let time):
                    deadline = min(deadline ?? time, time)
                    timed = true
                case .at(let time):
                    deadline = min(deadline ?? time, time)
                case .rest(let time):
                    if let time { deadline = min(deadline ?? time, time) }
                case .park(let park, let time):
                    parked.append(park)
                    if let time { deadline = min(deadline ?? time, time) }
                }
            }
            timedOut = nil
            if !done.isEmpty { continue }  // (they leave at the next turn)
            // Parking is the latches' handshake: announce, then re-read. A loop that moved since
            // its lane looked (or a stop requested meanwhile) means look again now.
            var block = true
            for park in parked where !park.announce() {
                block = false
            }
            if block {
                // (Its own counters tell a stopped process from a starved one when a lane's
                // deadline comes late; a heartbeat's deadline needs none.)
                let before = timed ? environment.ownSchedule() : nil
                let began = timed ? environment.now() : nil
                if !environment.wait(wake, until: deadline) {
                    let woke = environment.now()
                    timedOut = WatchdogTurn.TimedOut(
                        woke: woke, began: began, before: before, after: before == nil ? nil : environment.ownSchedule())
                }
            }
            for park in parked { park.withdraw() }
        }
    }

    /// Lines `answers` up with `lanes`: unchanged when the lanes are the ones answered last turn
    /// (the common case, nothing copied); else each lane keeps its answer, and a new lane has none.
    static func align(_ answers: inout [WatchdogWait?], of answered: inout [any WatchdogLane], to lanes: [any WatchdogLane]) {
        if answered.count == lanes.count, zip(answered, lanes).allSatisfy({ $0 === $1 }) { return }
        answers = lanes.map { lane in answered.firstIndex { $0 === lane }.flatMap { answers[$0] } }
        answered = lanes
    }

    /// Whether a lane that answered `wait` must step at `now`, with no wake-up since.
    static func isDue(_ wait: WatchdogWait, at now: UInt64) -> Bool {
        switch wait {
        case .until(let time), .at(let time): time <= now
        case .rest(let time), .park(_, let time): time.map { $0 <= now } ?? false
        case .finished: true
        }
    }

    /// Whether the watchdog, `late` microseconds late out of a wait, was stopped rather than starved.
    /// Starved, the time was spent runnable on a run queue (its own schedstat from `before` to
    /// `after` shows it); stopped (SIGSTOP, a debugger), it was not.
    static func lateBecauseStopped(late: UInt64, before: ProcTask.SchedStat, after: ProcTask.SchedStat) -> Bool {
        let queued = (after.runQueueNanoseconds &- before.runQueueNanoseconds) / 1000
        return queued * 2 < late
    }

    /// A long hang's provisional report is rewritten at least this often.
    static let provisionalRefreshMicroseconds: UInt64 = 30_000_000
}
