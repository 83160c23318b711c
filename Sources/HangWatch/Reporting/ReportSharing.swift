import Synchronization

/// One report writer for several monitors (HangWatchNIO gives one to every loop of a group): their
/// reports share one rate limit and one fold of repeats, so a culprit that blocks two loops is one
/// report counting both, not one report per loop. The writer is made by the first monitor that
/// starts and kept for the others (and for restarts).
package final class ReportSharing: Sendable {
    private let shared = Mutex<ReportWriter?>(nil)

    package init() {}

    func writer(orMake make: () -> ReportWriter) -> ReportWriter {
        shared.withLock { shared in
            if let shared { return shared }
            let made = make()
            shared = made
            return made
        }
    }
}
