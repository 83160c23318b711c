import Synchronization

/// Who runs the process's one pool watch (`ProcessRuntime.poolWatch`), whatever the number of
/// monitors: the first running monitor that watches the pool runs it as a lane of the process's
/// watchdog (reports go to its directory, under its service name and threshold); when that monitor
/// stops, the next one still running takes over.
final class PoolWatchSuccession: Sendable {
    private struct State {
        /// Monitors that would watch the pool, in the order they started: (owner, how it starts one).
        var candidates: [(owner: ObjectIdentifier, make: @Sendable () -> Active)] = []
        var active: (owner: ObjectIdentifier, watch: Active)?
    }

    /// A pool watch and the watchdog that steps it.
    struct Active: Sendable {
        let watch: PoolWatch
        let watchdog: Watchdog

        func start() { watchdog.add(watch) }

        /// Stops the watch (a starvation in progress is written `monitor stopped`) and waits for it.
        func stopAndJoin() {
            watch.requestStop()
            watchdog.remove(watch)
        }
    }

    private let state = Mutex(State())

    /// `owner` started and would watch the pool; it does at once if no other monitor does.
    func enroll(_ owner: ObjectIdentifier, make: @escaping @Sendable () -> Active) {
        state.withLock { state in
            state.candidates.append((owner, make))
            if state.active == nil {
                let watch = make()
                watch.start()
                state.active = (owner, watch)
            }
        }
    }

    /// `owner` stopped; if it ran the pool watch, that stops (a starvation in progress is written
    /// `monitor stopped`) and the next monitor's starts.
    func withdraw(_ owner: ObjectIdentifier) {
        let stopping = state.withLock { state -> Active? in
            state.candidates.removeAll { $0.owner == owner }
            guard let active = state.active, active.owner == owner else { return nil }
            state.active = nil
            return active.watch
        }
        guard let stopping else { return }
        stopping.stopAndJoin()
        state.withLock { state in
            guard state.active == nil, let next = state.candidates.first else { return }
            let watch = next.make()
            watch.start()
            state.active = (next.owner, watch)
        }
    }

    /// Whether a pool watch runs in this process, and for which monitor.
    func activeOwner() -> ObjectIdentifier? {
        state.withLock { $0.active?.owner }
    }
}
