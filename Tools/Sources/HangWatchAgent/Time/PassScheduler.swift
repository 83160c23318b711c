/// When the agent works: a liveness pass every `checkInterval`, a full scan every `scanInterval`,
/// and, when inotify says service directories changed, one pass over those `coalescing` later (so
/// the changes of one write, or of a burst, are scanned together). It only keeps time: passes go
/// to `enqueue` (the worker).
///
/// Confined to the time keeper (the main run loop): call it there, and give it a clock whose
/// timers fire there.
final class PassScheduler: @unchecked Sendable {
    static let coalescing: Duration = .milliseconds(200)

    private let clock: any AgentClock
    private let enqueue: @Sendable (SpoolPass) -> Void
    private var timers: [any AgentTimer] = []
    /// Services changed since the last flush; nil: everything (inotify overflowed).
    private var pending: Set<String>? = []
    private var flush: (any AgentTimer)?

    init(clock: any AgentClock, enqueue: @escaping @Sendable (SpoolPass) -> Void) {
        self.clock = clock
        self.enqueue = enqueue
    }

    /// Starts the interval timers, replacing running ones (a reload may change the intervals).
    func start(checkInterval: Duration, scanInterval: Duration) {
        stopTimers()
        let enqueue = self.enqueue
        timers = [
            clock.every(checkInterval) { enqueue(.liveness) },
            clock.every(scanInterval) { enqueue(.full) },
        ]
    }

    /// Stops every timer, a pending flush included.
    func stop() {
        stopTimers()
        flush?.cancel()
        flush = nil
        pending = []
    }

    /// inotify: `changed` services (nil: anything) changed; scan them `coalescing` from now.
    func servicesChanged(_ changed: Set<String>?) {
        if let changed, let known = pending {
            pending = known.union(changed)
        } else {
            pending = nil
        }
        guard flush == nil else { return }
        flush = clock.after(Self.coalescing) { [weak self] in self?.flushChanges() }
    }

    private func flushChanges() {
        flush = nil
        let services = pending
        pending = []
        enqueue(services.map { .services($0) } ?? .full)
    }

    private func stopTimers() {
        for timer in timers { timer.cancel() }
        timers = []
    }
}
