import Synchronization

/// Who answers `hangwatch dump PID`: one running monitor of the process at a time (the latest to
/// start; when it stops, the one before it). Its watchdog's wake is what the capture signal's dump
/// request posts, and its report directory is where the dump is written. Any watchdog of the
/// process that finds a request pending serves it with the registered monitor's server.
enum DumpRegistry {
    struct Entry: Sendable {
        var owner: ObjectIdentifier
        var wake: WatchdogWake
        var serve: @Sendable (UInt64) -> Void
    }

    private static let entries = Mutex<[Entry]>([])

    /// `owner` started: it answers from now on.
    static func enroll(_ entry: Entry) {
        entries.withLock { entries in
            entries.removeAll { $0.owner == entry.owner }
            entries.append(entry)
            UnsafeCaptureBridge.DumpRequests.register(entry.wake.semaphore)
        }
    }

    /// `owner` stopped: the monitor that started before it answers again (none: requests wake no one).
    static func withdraw(_ owner: ObjectIdentifier) {
        entries.withLock { entries in
            guard let index = entries.firstIndex(where: { $0.owner == owner }) else { return }
            let leaving = entries.remove(at: index)
            if let next = entries.last {
                UnsafeCaptureBridge.DumpRequests.register(next.wake.semaphore)
            } else {
                UnsafeCaptureBridge.DumpRequests.unregister(leaving.wake.semaphore)
            }
        }
    }

    /// Serves a pending request, if there is one (called by a watchdog after each wait).
    static func servePending() {
        guard let nonce = UnsafeCaptureBridge.DumpRequests.take(), let serve = entries.withLock({ $0.last?.serve }) else { return }
        serve(nonce)
    }
}
