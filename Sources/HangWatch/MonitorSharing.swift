import Synchronization

/// What several monitors share (HangWatchNIO gives one to every loop of a group), each made by the
/// first monitor that starts and kept for the others (and for restarts):
/// - one **report writer**: their reports share one rate limit and one fold of repeats, so a
///   culprit that blocks two loops is one report counting both, not one report per loop;
/// - one **watchdog thread**: each monitor is a lane of it (`HangLane`), so a group of any size
///   costs one watchdog, not one per loop;
/// - one **event-loop watcher thread** (`EventLoopWatcher`): every loop's epoll instance in one of
///   its own.
package final class MonitorSharing: Sendable {
    private let writer = MadeOnce<ReportWriter>()
    private let watchdog = MadeOnce<Watchdog>()
    private let loopWatcher = MadeOnce<EventLoopWatcher>()

    package init() {}

    func writer(orMake make: () -> ReportWriter) -> ReportWriter { writer.value(orMake: make) }

    func watchdog(orMake make: () -> Watchdog) -> Watchdog { watchdog.value(orMake: make) }

    func loopWatcher(orMake make: () -> EventLoopWatcher) -> EventLoopWatcher { loopWatcher.value(orMake: make) }

    /// How the shared event-loop watcher watches idle loops' wakes (nil before one was made).
    package var loopWakeMethod: String? { loopWatcher.made?.wakeMethod }
}

/// One value, made by the first that asks for it and kept for the others.
private final class MadeOnce<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)

    func value(orMake make: () -> Value) -> Value {
        value.withLock { shared in
            if let shared { return shared }
            let made = make()
            shared = made
            return made
        }
    }

    /// The value, if it was made.
    var made: Value? { value.withLock { $0 } }
}
