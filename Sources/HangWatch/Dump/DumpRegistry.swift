import Synchronization

/// Who answers `hangwatch dump PID`: one running monitor of the process at a time (the latest to
/// start; when it stops, the one before it). Its watchdog's wake is what the capture signal's dump
/// request posts, and its report directory is where the dump is written. Any watchdog of the
/// process that finds requests pending serves them with the registered monitor's server, as
/// `DumpAdmission` decides (one at a time, a few a minute: the process's bound, whichever monitor
/// answers).
enum DumpRegistry {
    struct Entry: Sendable {
        var owner: ObjectIdentifier
        var wake: WatchdogWake
        var server: DumpServer
    }

    private struct State {
        var entries: [Entry] = []
        var admission = DumpAdmission()
    }

    private static let state = Mutex(State())

    /// `owner` started: it answers from now on.
    static func enroll(_ entry: Entry) {
        state.withLock { state in
            state.entries.removeAll { $0.owner == entry.owner }
            state.entries.append(entry)
            UnsafeCaptureBridge.DumpRequests.register(entry.wake.semaphore)
        }
    }

    /// `owner` stopped: the monitor that started before it answers again (none: requests wake no one).
    static func withdraw(_ owner: ObjectIdentifier) {
        state.withLock { state in
            guard let index = state.entries.firstIndex(where: { $0.owner == owner }) else { return }
            let leaving = state.entries.remove(at: index)
            if let next = state.entries.last {
                UnsafeCaptureBridge.DumpRequests.register(next.wake.semaphore)
            } else {
                UnsafeCaptureBridge.DumpRequests.unregister(leaving.wake.semaphore)
            }
        }
    }

    /// Serves or refuses the pending requests, if there are any, and removes answers nobody took
    /// (called by a watchdog after each wait: allocates nothing when there is nothing to do).
    static func servePending(now: @autoclosure () -> UInt64) {
        let nonces = UnsafeCaptureBridge.DumpRequests.takeAll()
        guard !nonces.isEmpty else {
            state.withLock { $0.entries.last?.server }?.sweep()
            return
        }
        let (server, decisions) = state.withLock { state -> (DumpServer?, [DumpAdmission.Decision]) in
            guard let server = state.entries.last?.server else { return (nil, []) }
            return (server, state.admission.admit(nonces.count, at: now()))
        }
        guard let server else { return }
        for (nonce, decision) in zip(nonces, decisions) {
            switch decision {
            case .serve: server.serve(nonce)
            case .refuse(let reason): server.refuse(nonce, reason: reason)
            }
        }
        server.sweep()
    }
}
