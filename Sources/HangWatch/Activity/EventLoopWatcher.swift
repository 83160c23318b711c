import Dispatch
import Synchronization

/// The thread that watches event loops' epoll instances (`EventLoopActivitySource`): one for a whole
/// SwiftNIO group (`MonitorSharing`), however many loops. It waits on one epoll instance of its own
/// holding every idle loop's (`UnsafeLoopEpollWatch`), until the earliest time a loop must be looked
/// at, and steps each loop for what it saw: its wake, its deadline, a ping's answer it waited for.
/// It runs while it has loops (the last one removed ends it; the next added starts another).
final class EventLoopWatcher: @unchecked Sendable {
    /// Nil when this process could not make one (out of descriptors): the loops are then pinged
    /// (`EventLoopActivitySource`'s fallback), and waits are on `interrupts`.
    private let epollWatch: UnsafeLoopEpollWatch?
    private let interrupts = DispatchSemaphore(value: 0)
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

    /// Watches `loop` from now on, starting the thread if none runs.
    func add(_ loop: EventLoopActivitySource) {
        if !thread.add(loop, body: { [self] in run() }) { interrupt() }
    }

    /// Lets go of `loop` (it was stopped): the thread drops it at its next turn, which this brings
    /// on at once.
    func remove(_ loop: EventLoopActivitySource) {
        interrupt()
    }

    /// A loop answered a ping the watcher waits for (the loop flagged itself first).
    func nudge() {
        if let epollWatch { epollWatch.nudge() } else { interrupts.signal() }
    }

    private func interrupt() {
        if let epollWatch { epollWatch.interrupt() } else { interrupts.signal() }
    }

    private func run() {
        var started: [ObjectIdentifier] = []
        var wakes = UnsafeLoopEpollWatch.Wakes()
        while true {
            // Loops stopped since the last turn let go of their epoll instances (on this thread,
            // the only one that nests and unnests them); new ones start.
            let (current, removed) = thread.turn(dropping: \.isStopped)
            for loop in removed { loop.watcherRemoved() }
            guard !current.isEmpty else { return }
            started.removeAll { id in removed.contains { ObjectIdentifier($0) == id } }
            for loop in current where !started.contains(ObjectIdentifier(loop)) {
                started.append(ObjectIdentifier(loop))
                loop.watcherStep(.started, epollWatch)
            }

            let now = coarseNow()
            let deadline = current.compactMap(\.watcherDeadline).min()
            let milliseconds = deadline.map { $0 > now ? Int32(min(($0 - now + 999_999) / 1_000_000, 60_000)) : 0 } ?? -1
            if let epollWatch {
                epollWatch.wait(milliseconds: milliseconds, into: &wakes)
            } else {
                wakes = UnsafeLoopEpollWatch.Wakes()
                let result = milliseconds < 0 ? interrupts.wait(timeout: .distantFuture)
                    : interrupts.wait(timeout: .now() + .milliseconds(Int(milliseconds)))
                wakes.interrupted = result == .success
            }

            for key in wakes.loops {
                current.first { $0.registrationKey == key }?.watcherStep(.loopWoke, epollWatch)
            }
            for loop in current where loop.takeNudge() {
                loop.watcherStep(.nudged, epollWatch)
            }
            // A wait that timed out was for the earliest deadline: that one is due even when the
            // coarse clock has not reached it yet (it ticks every 4 ms), or the watcher would wake
            // again for the rest. (Not a wait cut to a minute: its deadline is still ahead.)
            let after = coarseNow()
            let reached = deadline.map { $0 <= now &+ 60_000_000_000 } ?? false
            let dueBy = wakes.timedOut && reached ? max(after, deadline ?? after) : after
            for loop in current {
                if let due = loop.watcherDeadline, due <= dueBy { loop.watcherStep(.due, epollWatch) }
            }
        }
    }
}
