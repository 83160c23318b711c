import Dispatch

/// Dump serving as a lane of the watchdog: it rests until asked. A `hangwatch dump` request
/// arrives as the capture signal, whose handler posts the answering monitor's watchdog wake
/// (`DumpRegistry`); the wake steps every lane, and this one, while its monitor answers, takes the
/// pending requests, serves or refuses each as the registry admits it, and rests again until the
/// next request, or until an answer nobody took is due for removal (`DumpServer.sweep`).
final class DumpLane: WatchdogLane {
    private let owner: ObjectIdentifier
    private let registry: DumpRegistry
    private let server: DumpServer
    /// Takes the pending requests' nonces (the signal handler's slots, freed).
    private let requests: @Sendable () -> [UInt64]
    private let stop: StopFlag
    let finished = DispatchSemaphore(value: 0)

    init(
        owner: ObjectIdentifier, registry: DumpRegistry, server: DumpServer, requests: @escaping @Sendable () -> [UInt64], stop: StopFlag
    ) {
        self.owner = owner
        self.registry = registry
        self.server = server
        self.requests = requests
        self.stop = stop
    }

    func advance(_ turn: WatchdogTurn) -> WatchdogWait {
        guard !stop.isRaised else { return .finished }
        if registry.answers(owner) {
            let nonces = requests()
            if !nonces.isEmpty {
                for (nonce, decision) in zip(nonces, registry.admit(nonces.count, at: turn.environment.now())) {
                    switch decision {
                    case .serve: server.serve(nonce)
                    case .refuse(let reason): server.refuse(nonce, reason: reason)
                    }
                }
            }
        }
        return .rest(until: server.sweep())
    }
}
