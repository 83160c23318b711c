/// A thread that runs its own loop and declares its work: `enterWork()` is the loop becoming
/// busy, `leaveWork()` it going idle. The same latch and watchdog as a run loop's; there is no
/// loop to ask whether it sleeps, so between scopes it is idle by definition.
final class ScopeActivitySource: ActivitySource, @unchecked Sendable {
    let kind = ActivitySourceKind.scope
    /// Set by `start` (on the watched thread, before any scope).
    private var latch: ActivityLatch?
    /// The thread that started watching scopes; only its calls count.
    let thread: pthread_t

    /// The activity bits the latch records: busy on entry, idle on exit (the run-loop observers'
    /// `afterWaiting` / `beforeWaiting`, so the detector needs no second vocabulary).
    static let enter = HangMonitor.Activity.afterWaiting.rawValue
    static let leave = HangMonitor.Activity.beforeWaiting.rawValue

    init(thread: pthread_t) {
        self.thread = thread
    }

    /// On the watched thread (`startWatchingScopes()` is called there): it is the one captured.
    func start(edges latch: ActivityLatch, attach: @escaping @Sendable () -> Void) {
        self.latch = latch
        attach()
    }

    /// A scope that is entered is work in progress.
    func confirmBusy() -> BusyConfirmation { .busy(context: nil) }

    var edges: ActivityEdges { .exact }

    func stop() {}

    /// Whether the caller is the watched thread.
    var isOwnThread: Bool { pthread_equal(pthread_self(), thread) != 0 }

    /// Scopes entered and not left (the watched thread only): nested scopes are one stretch of work.
    private var depth = 0
    /// Inside a scope (the watched thread only).
    var isBusy: Bool { depth > 0 }

    /// On the watched thread: work begins (the outermost scope marks the loop busy).
    func enter() {
        depth += 1
        if depth == 1 { latch?.record(Self.enter) }
    }

    /// On the watched thread: work ends (the outermost scope marks the loop idle). An unmatched
    /// leave is ignored.
    func leave() {
        guard depth > 0 else { return }
        depth -= 1
        if depth == 0 { latch?.record(Self.leave) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
