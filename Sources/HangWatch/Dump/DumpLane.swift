import Dispatch

/// Dump serving as a lane of the watchdog, one per process (`DumpService`): it rests until asked.
/// Only the watchdog's thread steps it (its `unblocked` is that thread's).
/// A `hangwatch dump` request arrives as the capture signal, whose handler posts the watchdog's
/// wake; the wake steps every lane, and this one takes the pending requests, has the service answer
/// them, and rests again until the next request, or until an answer nobody took is due for removal
/// (`DumpServer.sweep`).
final class DumpLane: WatchdogLane, @unchecked Sendable {
    private let service: DumpService
    /// Takes the pending requests' nonces (the signal handler's slots, freed).
    private let requests: @Sendable () -> [UInt64]
    /// Raised when the last directory that answers closed.
    let stop = StopFlag()
    /// The signals let through on the watchdog's thread so far (the lane lives on one thread).
    private var unblocked: Set<Int32> = []
    let finished = DispatchSemaphore(value: 0)

    init(service: DumpService, requests: @escaping @Sendable () -> [UInt64]) {
        self.service = service
        self.requests = requests
    }

    func advance(_ turn: WatchdogTurn) -> WatchdogWait {
        guard !stop.isRaised else { return .finished }
        let signals = service.signals
        if !signals.isSubset(of: unblocked) {
            for signal in signals.subtracting(unblocked) { service.unblock(signal) }
            unblocked.formUnion(signals)
        }
        let nonces = requests()
        let now = turn.environment.now()
        if !nonces.isEmpty { service.answer(nonces, at: now) }
        let waiting = service.serveWaiting(at: now)
        let sweep = service.sweep()
        return .rest(until: [waiting, sweep].compactMap { $0 }.min())
    }
}
