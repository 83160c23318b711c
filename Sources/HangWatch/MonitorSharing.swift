import Synchronization

/// What several monitors share (HangWatchNIO gives one to every loop of a group), each made by the
/// first monitor that starts and kept for the others (and for restarts):
/// - one **report writer**: their reports share one rate limit and one fold of repeats, so a
///   culprit that blocks two loops is one report counting both, not one report per loop;
/// - one **watchdog thread**: each monitor is a lane of it (`WatchdogLane`), so a group of any size
///   costs one watchdog, not one per loop;
/// - one **event-loop watcher thread** (`EventLoopWatcher`): every loop's epoll instance in one of
///   its own.
package final class MonitorSharing: Sendable {
    private let writer = Mutex<ReportWriter?>(nil)
    private let watchdog = Mutex<Watchdog?>(nil)
    private let loopWatcher = Mutex<EventLoopWatcher?>(nil)

    package init() {}

    func writer(orMake make: () -> ReportWriter) -> ReportWriter {
        writer.withLock { shared in
            if let shared { return shared }
            let made = make()
            shared = made
            return made
        }
    }

    func watchdog(orMake make: () -> Watchdog) -> Watchdog {
        watchdog.withLock { shared in
            if let shared { return shared }
            let made = make()
            shared = made
            return made
        }
    }

    func loopWatcher(orMake make: () -> EventLoopWatcher) -> EventLoopWatcher {
        loopWatcher.withLock { shared in
            if let shared { return shared }
            let made = make()
            shared = made
            return made
        }
    }

    /// How the shared event-loop watcher watches idle loops' wakes (nil before one was made).
    package var loopWakeMethod: String? { loopWatcher.withLock { $0?.wakeMethod } }
}
