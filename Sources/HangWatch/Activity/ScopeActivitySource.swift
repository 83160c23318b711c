/// A thread that runs its own loop and declares its work: `enterWork()` is the loop becoming
/// busy, `leaveWork()` it going idle. The same latch and watchdog as a run loop's; there is no
/// loop to ask whether it sleeps, so between scopes it is idle by definition.
final class ScopeActivitySource: LoopActivitySource, @unchecked Sendable {
    let latch: ActivityLatch
    /// The thread that started watching scopes; only its calls count.
    let thread: pthread_t

    /// The activity bits the latch records: busy on entry, idle on exit (the run-loop observers'
    /// `afterWaiting` / `beforeWaiting`, so the detector needs no second vocabulary).
    static let enter = HangMonitor.Activity.afterWaiting.rawValue
    static let leave = HangMonitor.Activity.beforeWaiting.rawValue

    init(latch: ActivityLatch, thread: pthread_t) {
        self.latch = latch
        self.thread = thread
    }

    var isWaiting: Bool { false }
    /// Never nil: a scope that is entered is work in progress.
    var currentMode: String? { "scope" }
    func observeCurrentMode() -> Bool { false }
    func invalidate() {}

    /// Whether the caller is the watched thread.
    var isOwnThread: Bool { pthread_equal(pthread_self(), thread) != 0 }

    /// Scopes entered and not left (the watched thread only): nested scopes are one stretch of work.
    private var depth = 0
    /// Inside a scope (the watched thread only).
    var isBusy: Bool { depth > 0 }

    /// On the watched thread: work begins (the outermost scope marks the loop busy).
    func enter() {
        depth += 1
        if depth == 1 { latch.record(Self.enter) }
    }

    /// On the watched thread: work ends (the outermost scope marks the loop idle). An unmatched
    /// leave is ignored.
    func leave() {
        guard depth > 0 else { return }
        depth -= 1
        if depth == 0 { latch.record(Self.leave) }
    }
}

#if canImport(Glibc)
import Glibc
#endif
