import Synchronization

/// Who answers `hangwatch dump PID` in a process (`ProcessRuntime.dumps`): one lane of the
/// watchdog (`DumpLane`), there while a report directory with the process's heartbeat is open (the
/// CLI finds a monitor by its heartbeat file). A request arrives as the capture signal, whose
/// handler posts the one wake registered with it, the watchdog's; the lane takes the pending
/// requests, each admitted or refused by `DumpAdmission` (one at a time, a few a minute: the
/// process's bound), and answered in the directory open longest (the CLI looks in every directory
/// that holds the process's heartbeat). It keeps every watch of the process (`WatchedSource`), whose
/// flight recorders a recent-window dump reads.
final class DumpService: Sendable {
    private struct State {
        /// The directories that answer, in the order they opened, and the signal each is asked with.
        var servers: [(owner: ObjectIdentifier, server: DumpServer, signal: Int32)] = []
        var lane: DumpLane?
        var admission = DumpAdmission()
        /// A task dump waiting for HangWatch's probe task to park (the process's first), and until
        /// when it waits (µs).
        var waitingForProbe: (nonce: UInt64, server: DumpServer, until: UInt64)?
        /// Every watch of the process, in the order they began (`hangwatch dump --recent`).
        var watches: [WatchedSource] = []
    }

    /// How long a task dump waits for HangWatch's probe task (it needs a free pool thread).
    static let probeWaitMicroseconds: UInt64 = 250_000

    private let state = Mutex(State())
    private let watchdog: Watchdog
    /// Makes `wake` the one a request posts; nil: none (the lane left, `leaving`'s).
    private let register: @Sendable (_ wake: WatchdogWake?, _ leaving: WatchdogWake?) -> Void
    /// Lets a request's signal through on the calling thread (the watchdog's, where requests are
    /// queued: it inherited its creator's mask).
    let unblock: @Sendable (_ signal: Int32) -> Void
    /// The monitor that runs the process's pool watch now (nil: none runs).
    private let poolWatchOwner: @Sendable () -> ObjectIdentifier?

    init(
        watchdog: Watchdog, register: @escaping @Sendable (_ wake: WatchdogWake?, _ leaving: WatchdogWake?) -> Void,
        unblock: @escaping @Sendable (_ signal: Int32) -> Void, poolWatchOwner: @escaping @Sendable () -> ObjectIdentifier? = { nil }
    ) {
        self.watchdog = watchdog
        self.register = register
        self.unblock = unblock
        self.poolWatchOwner = poolWatchOwner
    }

    /// A watch began: a recent-window dump lists it until it ends.
    func add(_ watch: WatchedSource) {
        state.withLock { $0.watches.append(watch) }
    }

    /// The watch `id` ended.
    func removeWatch(_ id: ObjectIdentifier) {
        state.withLock { $0.watches.removeAll { $0.id == id } }
    }

    /// A directory with a heartbeat opened: `server` answers there, asked with `signal`. The first
    /// starts the lane, which takes `requests` (the signal handler's pending nonces).
    func offer(_ server: DumpServer, signal: Int32, from owner: ObjectIdentifier, requests: @escaping @Sendable () -> [UInt64]) {
        let started = state.withLock { state -> DumpLane? in
            state.servers.append((owner, server, signal))
            guard state.lane == nil else { return nil }
            let lane = DumpLane(service: self, requests: requests)
            state.lane = lane
            return lane
        }
        if let started {
            register(watchdog.wake, nil)
            watchdog.add(started)
        }
    }

    /// The directory `owner` closed; with the last, the lane leaves and requests wake no one.
    func withdraw(_ owner: ObjectIdentifier) {
        let leaving = state.withLock { state -> DumpLane? in
            state.servers.removeAll { $0.owner == owner }
            guard state.servers.isEmpty, let lane = state.lane else { return nil }
            state.lane = nil
            return lane
        }
        guard let leaving else { return }
        register(nil, watchdog.wake)
        leaving.stop.raise()
        watchdog.remove(leaving)
    }

    /// The lane's step with requests `nonces` pending at `now`: each served or refused, in order,
    /// by the directory open longest. A task dump that needs HangWatch's probe task first waits for
    /// it (`probeWaitMicroseconds` at most; the probe posts the watchdog's wake when it parked),
    /// and counts as the dump being taken meanwhile.
    func answer(_ nonces: [UInt64], at now: UInt64) {
        guard let (server, decisions) = state.withLock({ state -> (DumpServer, [DumpAdmission.Decision])? in
            guard let server = state.servers.first?.server else { return nil }
            guard state.waitingForProbe == nil else { return (server, nonces.map { _ in .refuse(DumpAdmission.busy) }) }
            return (server, state.admission.admit(nonces.count, at: now))
        }) else { return }
        for (nonce, decision) in zip(nonces, decisions) {
            switch decision {
            case .serve:
                if DumpKind(nonce: nonce) == .tasks, let tasks = server.tasks, tasks.needsProbe() {
                    state.withLock { $0.waitingForProbe = (nonce, server, now + Self.probeWaitMicroseconds) }
                    tasks.startProbe { [wake = watchdog.wake] in wake.signal() }
                } else if DumpKind(nonce: nonce) == .recent {
                    server.serveRecent(nonce, watches: state.withLock { $0.watches }, poolWatchOwner: poolWatchOwner())
                } else {
                    server.serve(nonce)
                }
            case .refuse(let reason): server.refuse(nonce, reason: reason)
            }
        }
    }

    /// Serves the task dump waiting for the probe once it parked or its wait is over; says until
    /// when it still waits (nil: none waits).
    func serveWaiting(at now: UInt64) -> UInt64? {
        guard let waiting = state.withLock({ $0.waitingForProbe }) else { return nil }
        guard now >= waiting.until || waiting.server.tasks?.probeParked() != false else { return waiting.until }
        state.withLock { $0.waitingForProbe = nil }
        waiting.server.serve(waiting.nonce)
        return nil
    }

    /// The signals requests come with.
    var signals: Set<Int32> { state.withLock { Set($0.servers.map(\.signal)) } }

    /// Removes the answers nobody took in time, in every directory; says when the next is due.
    func sweep() -> UInt64? {
        state.withLock { $0.servers.map(\.server) }.compactMap { $0.sweep() }.min()
    }
}
