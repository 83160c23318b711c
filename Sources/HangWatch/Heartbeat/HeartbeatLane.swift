import Dispatch
import HangWatchReport
import Synchronization

/// A report directory's heartbeat as a lane of the watchdog: it publishes the page
/// (`HeartbeatPublisher`) at every wake-up of the watchdog and at least once per heartbeat interval,
/// so a silent page means a silent watchdog. The page speaks for every monitor writing to the
/// directory (its members, each a hang lane): the most engaged state among them (recording, then
/// watching, idle, paused) with that monitor's activity word, the smallest threshold (with no
/// member, the one the page already says: never 0), and the sums
/// of their hangs, suppressions, loop-busy histograms and flight recorders' lag histograms,
/// monitors that stopped included (the counts a reader differences never go back). The pool watch's delays are in it while a member
/// runs the pool watch. Of the members whose run loop keeps a flight recorder, the busiest one's
/// busy time over the recorder's window ending at the tick (`RecorderBusyWindow`): read here, on
/// the wake-up the page is published on anyway.
final class HeartbeatLane: WatchdogLane, @unchecked Sendable {
    /// What a hang lane last saw, as its steps tell it (read by the heartbeat lane on the same
    /// thread; atomics, so a reader elsewhere never tears it either). A change of state is
    /// published at once (a hang's recording shows while it lasts, whatever the interval).
    final class Seen: Sendable {
        private let state = Atomic<UInt64>(HeartbeatPublisher.State.idle.rawValue)
        private let word = Atomic<UInt64>(0)
        /// The directory's heartbeat, once the lane is its member.
        private let heartbeat = Mutex<HeartbeatLane?>(nil)

        /// On the watchdog's thread (the hang lane's step).
        func note(_ state: HeartbeatPublisher.State, word: UInt64) {
            self.word.store(word, ordering: .relaxed)
            guard self.state.exchange(state.rawValue, ordering: .relaxed) != state.rawValue else { return }
            heartbeat.withLock { $0 }?.publish()
        }

        fileprivate func publish(to lane: HeartbeatLane?) {
            heartbeat.withLock { $0 = lane }
        }

        var current: (state: HeartbeatPublisher.State, word: UInt64) {
            (HeartbeatPublisher.State(rawValue: state.load(ordering: .relaxed)) ?? .idle, word.load(ordering: .relaxed))
        }
    }

    /// One monitor of the directory, as its heartbeat sees it.
    struct Member: Sendable {
        var owner: ObjectIdentifier
        var seen: Seen
        var latch: ActivityLatch
        var control: WatchdogControl
        var statistics: MonitorStatistics
        /// Whether its flight recorder's lag and busy ratio go on the page, whose readers label
        /// them `source="runloop"`: a run loop's (an event loop's pieces run between the
        /// boundaries its edges learnt, not iterations: `EventLoopLeadUp`).
        var pagesLeadUp = true

        /// The flight recorder the page counts (`pagesLeadUp`).
        var pagedLeadUp: UnsafeLeadUpRecorder? { pagesLeadUp ? latch.leadUp : nil }
    }

    private struct Members {
        var current: [Member] = []
        /// What the members that stopped had counted (their histograms are in the sums).
        var departedHangs: UInt64 = 0
        var departedSuppressed: UInt64 = 0
        /// The loop-busy histograms, and the flight recorders' lag histograms.
        let loop = SummedHistogram()
        let lag = SummedHistogram()
    }

    /// One of the page's histograms summed over the directory's members: those that stopped kept
    /// apart, the sum made anew at each publish (both the watchdog's own, under `members`' lock).
    /// Published from the first member that keeps one on, so the counts never go back.
    private final class SummedHistogram: @unchecked Sendable {
        private let departed = UnsafeLoopHistogram.allocate()
        private let sum = UnsafeLoopHistogram.allocate()
        private var kept = false

        deinit {
            departed.deallocate()
            sum.deallocate()
        }

        /// A member joined, keeping `histogram` (nil: none).
        func joined(_ histogram: UnsafeLoopHistogram?) {
            if histogram != nil { kept = true }
        }

        /// A member stopped: what it counted stays.
        func left(_ histogram: UnsafeLoopHistogram?) {
            if let histogram { departed.accumulate(histogram) }
        }

        /// Starts a sum with what the members that stopped counted.
        func begin() {
            guard kept else { return }
            sum.reset()
            sum.accumulate(departed)
        }

        func add(_ histogram: UnsafeLoopHistogram?) {
            if let histogram { sum.accumulate(histogram) }
        }

        /// The sum to publish; nil while no member ever kept one.
        var published: UnsafeLoopHistogram? { kept ? sum : nil }
    }

    private let publisher: HeartbeatPublisher
    private let intervalMicroseconds: UInt64
    /// The pool watch's delays when one of `owners` runs it, else nil.
    private let poolDelays: @Sendable (_ owners: [ObjectIdentifier]) -> HangMonitor.PoolProbeDelays?
    private let stop: StopFlag
    /// The watchdog's clock (`CLOCK_MONOTONIC`), the end of the recorders' windows.
    private let clock: any MonotonicClock
    private let members = Mutex(Members())
    let finished = DispatchSemaphore(value: 0)

    init(
        publisher: HeartbeatPublisher, intervalMicroseconds: UInt64, stop: StopFlag, clock: any MonotonicClock = SystemMonotonicClock(),
        poolDelays: @escaping @Sendable (_ owners: [ObjectIdentifier]) -> HangMonitor.PoolProbeDelays?
    ) {
        self.clock = clock
        self.publisher = publisher
        self.intervalMicroseconds = intervalMicroseconds
        self.stop = stop
        self.poolDelays = poolDelays
    }

    /// A monitor began writing to the directory.
    func add(_ member: Member) {
        members.withLock { members in
            members.current.append(member)
            members.loop.joined(member.latch.loopHistogram)
            members.lag.joined(member.pagedLeadUp?.lag)
        }
        member.seen.publish(to: self)
    }

    /// A monitor stopped: what it counted stays in the page.
    func remove(_ owner: ObjectIdentifier) {
        members.withLock { members in
            guard let index = members.current.firstIndex(where: { $0.owner == owner }) else { return }
            let member = members.current.remove(at: index)
            member.seen.publish(to: nil)
            members.departedHangs += UInt64(member.statistics.hangsDetected.load(ordering: .relaxed))
            members.departedSuppressed += UInt64(member.statistics.hangsSuppressed.load(ordering: .relaxed))
            members.loop.left(member.latch.loopHistogram)
            members.lag.left(member.pagedLeadUp?.lag)
        }
    }

    func advance(_ turn: WatchdogTurn) -> WatchdogWait {
        guard !stop.isRaised else { return .finished }
        publish()
        return .rest(until: turn.environment.now() + intervalMicroseconds)
    }

    /// Publishes the page for the members as they are now.
    func publish() {
        let now = clock.microseconds()
        let (state, word, hangs, suppressed, threshold, histogram, lag, owners, busiest) = members.withLock {
            members -> (
                HeartbeatPublisher.State, UInt64, UInt64, UInt64, UInt64?, UnsafeLoopHistogram?, UnsafeLoopHistogram?, [ObjectIdentifier],
                RecorderBusyWindow?
            ) in
            var best: (state: HeartbeatPublisher.State, word: UInt64)?
            var hangs = members.departedHangs
            var suppressed = members.departedSuppressed
            var threshold = UInt64.max
            var busiest: RecorderBusyWindow?
            members.loop.begin()
            members.lag.begin()
            for member in members.current {
                let seen = member.seen.current
                if best.map({ Self.rank(seen.state) > Self.rank($0.state) }) ?? true { best = seen }
                hangs += UInt64(member.statistics.hangsDetected.load(ordering: .relaxed))
                suppressed += UInt64(member.statistics.hangsSuppressed.load(ordering: .relaxed))
                threshold = min(threshold, member.control.thresholdMicroseconds.load(ordering: .relaxed))
                members.loop.add(member.latch.loopHistogram)
                if let recorder = member.pagedLeadUp {
                    members.lag.add(recorder.lag)
                    let window = RecorderBusyWindow.read(recorder, latch: member.latch, nowMicroseconds: now)
                    if busiest.map({ window.ratio > $0.ratio }) ?? true { busiest = window }
                }
            }
            return (
                best?.state ?? .idle, best?.word ?? 0, hangs, suppressed, threshold == .max ? nil : threshold, members.loop.published,
                members.lag.published, members.current.map(\.owner), busiest
            )
        }
        publisher.tick(
            state, activityWord: word, hangsDetected: hangs, hangsSuppressed: suppressed, thresholdMicroseconds: threshold,
            loopHistogram: histogram, pool: poolDelays(owners), busyWindow: busiest, lag: lag)
    }

    /// The directory closed and the lane finished: the page says so, and the file is removed.
    func retire() {
        publisher.retire()
    }

    /// The most engaged state speaks for the directory: a hang being recorded, then a loop being
    /// watched busy, then idle, then paused.
    private static func rank(_ state: HeartbeatPublisher.State) -> Int {
        switch state {
        case .recording: 4
        case .watching: 3
        case .idle: 2
        case .paused: 1
        case .stopped: 0
        }
    }
}
