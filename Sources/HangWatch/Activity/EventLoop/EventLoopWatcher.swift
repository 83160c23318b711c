import Synchronization

/// The thread that waits for idle event loops to wake (`EventLoopActivitySource`): one per process
/// (`ProcessRuntime.loopWatcher`, one per way of polling), however many loops and groups. Its one wait has no time limit: on one
/// epoll instance of its own holding every idle loop's (`UnsafeLoopEpollWatch`, polled through an
/// io_uring or nested), and at each wake it tells the loop when it woke and posts the watchdog's
/// wake (`EventLoopActivitySource.watcherSawWake`). Everything timed (the looks at a busy loop,
/// the looks of an idle loop's first minute, the pings) is the loop's lane of the watchdog
/// (`EventLoopLane`), which also registers, nests and unnests the loops' instances. It runs while
/// it has loops (the last one stopped ends it; the next added starts another), and not at all
/// where no epoll instance could be made (the loops are then pinged, from their lanes).
final class EventLoopWatcher: Sendable {
    /// Nil when this process could not make one (out of descriptors): the loops are then pinged
    /// (`EventLoopActivitySource`'s fallback) and no thread runs.
    let epollWatch: UnsafeLoopEpollWatch?
    /// The thread, while it has loops (it exits when its last loop leaves).
    private let thread = OnDemandThread<EventLoopActivitySource>(name: EventLoopWatcher.threadName, stackSize: 256 << 10)
    private let coarseNow: @Sendable () -> UInt64

    /// `usesIoUring`: idle loops' wakes through an io_uring where one can be made
    /// (`UnsafeLoopWakeRing`), else through nested epoll instances.
    init(usesIoUring: Bool = true, coarseNow: @escaping @Sendable () -> UInt64 = QueueActivitySource.coarseNanoseconds) {
        epollWatch = UnsafeLoopEpollWatch(polling: usesIoUring)
        self.coarseNow = coarseNow
    }

    /// Whether idle loops' wakes come through an io_uring (never lost).
    var pollsThroughRing: Bool { epollWatch?.pollsThroughRing ?? false }

    /// How idle loops' wakes reach the watcher, and why not through io_uring if not: what the
    /// group's start logs.
    var wakeMethod: String {
        guard let epollWatch else { return "loops pinged only: no epoll instance could be made for the watcher" }
        guard let reason = epollWatch.ringUnavailable else { return "idle loops' wakes through io_uring (never lost)" }
        return "idle loops' wakes through nested epoll instances, with looks for a minute after work (a wake can be lost): \(reason)"
    }

    /// The watcher thread's name (15 bytes at most).
    static let threadName = "hangwatch-loop"

    /// Waits for `loop`'s wakes from now on, starting the thread if none runs.
    func add(_ loop: EventLoopActivitySource) {
        guard let epollWatch else { return }
        if !thread.add(loop, body: { [self] in run(epollWatch) }) { epollWatch.interrupt() }
    }

    /// Lets go of `loop` (it was stopped): the thread drops it at its next turn, which this brings
    /// on at once.
    func remove(_ loop: EventLoopActivitySource) {
        epollWatch?.interrupt()
    }

    private func run(_ epollWatch: UnsafeLoopEpollWatch) {
        var wakes = UnsafeLoopEpollWatch.Wakes()
        while true {
            let (current, _) = thread.turn(dropping: \.isStopped)
            guard !current.isEmpty else { return }
            epollWatch.wait(into: &wakes)
            guard !wakes.loops.isEmpty else { continue }
            let now = coarseNow()
            for key in wakes.loops {
                current.first { $0.registeredKey == key }?.watcherSawWake(at: now)
            }
        }
    }
}
