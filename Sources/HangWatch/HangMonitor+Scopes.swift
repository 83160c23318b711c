import Foundation
import HangWatchReport
import Synchronization

extension HangMonitor {
    /// Starts watching work the calling thread declares: ``enterWork()`` / ``leaveWork()`` or
    /// ``watch(deadline:_:)``, for a thread that runs a loop of its own (no CFRunLoop). Work that
    /// stays inside a scope past the threshold (or the scope's deadline) is a hang, captured and
    /// reported like a run loop's, with `source` `scope`. Calls from other threads do nothing
    /// (told once in the log).
    ///
    /// - Returns: Those calls as a value, ``HangScopes``, which only a scope-watching start gives.
    /// - Throws: What ``start()`` throws, for the same reasons.
    @discardableResult
    public func startWatchingScopes() throws -> HangScopes {
        let source = ScopeActivitySource(thread: pthread_self())
        try start(source: source, handles: SourceHandles(scopes: source))
        return HangScopes(monitor: self)
    }

    /// Marks the start of work on the thread that called ``startWatchingScopes()``. Scopes nest:
    /// only the outermost counts. Costs a lock and one atomic store. Does nothing, told once in
    /// the log, when the monitor watches another source or the caller is another thread.
    public func enterWork() {
        scopeSource()?.enter()
    }

    /// Marks the end of the work ``enterWork()`` began; leaving the outermost scope ends busy time.
    public func leaveWork() {
        scopeSource()?.leave()
    }

    /// Runs `body` as one scope of work, between ``enterWork()`` and ``leaveWork()`` (left even
    /// when it throws). Where those do nothing (another source, another thread), `body` just runs.
    ///
    /// - Parameters:
    ///   - deadline: This scope's threshold instead of the configured one, held to 10 ms ... 1 h
    ///     and restored afterwards; in nested scopes the outermost one's deadline wins. Nil: the
    ///     monitor's ``threshold``.
    ///   - body: The work.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func watch<T>(deadline: Duration? = nil, _ body: () throws -> T) rethrows -> T {
        guard let source = scopeSource() else { return try body() }
        var restore: UInt64?
        if let deadline, !source.isBusy {
            let limited = min(max(DurationText.microseconds(deadline), 10_000), 3_600_000_000)
            restore = control.thresholdMicroseconds.exchange(limited, ordering: .relaxed)
        }
        source.enter()
        defer {
            source.leave()
            if let restore { control.thresholdMicroseconds.store(restore, ordering: .relaxed) }
        }
        return try body()
    }

    /// The scope source, when scopes are watched and the caller is their thread; else nil, and
    /// the first such call of each kind is told in the log (a scope that does nothing is a bug of
    /// the caller's, not a hang to find).
    private func scopeSource() -> ScopeActivitySource? {
        let (scopes, watching) = running.withLock { ($0?.assembly?.handles.scopes, $0?.assembly?.source.kind) }
        if let scopes, scopes.isOwnThread { return scopes }
        guard let watching else { return nil }  // stopped: nothing to tell
        let misuse: ScopeMisuse = scopes == nil ? .anotherSource(watching) : .anotherThread
        if scopeMisuseLogged.first(misuse) {
            logger.warning("\(misuse.message)", metadata: ["hangwatch.service": "\(configuration.serviceName)"])
        }
        return nil
    }
}

/// A scope call that could do nothing.
enum ScopeMisuse: Equatable {
    /// The monitor watches another kind of source (scopes need `startWatchingScopes()`).
    case anotherSource(ActivitySourceKind)
    /// The caller is not the thread that called `startWatchingScopes()`.
    case anotherThread

    var message: String {
        switch self {
        case .anotherSource(let kind):
            "scope calls do nothing: this monitor watches a \(kind.rawValue) source; call startWatchingScopes() on the thread whose work it marks"
        case .anotherThread:
            "scope calls from another thread than the one that called startWatchingScopes() do nothing"
        }
    }

    /// Which kinds of misuse were logged (once each per monitor).
    final class Logged: Sendable {
        private let logged = Atomic<UInt8>(0)

        /// True the first time for its kind.
        func first(_ misuse: ScopeMisuse) -> Bool {
            let bit: UInt8 = misuse == .anotherThread ? 2 : 1
            return logged.bitwiseOr(bit, ordering: .relaxed).oldValue & bit == 0
        }
    }
}

/// The scopes of work one thread declares to a monitor, as ``HangMonitor/startWatchingScopes()``
/// returns them: ``enter()`` / ``leave()`` or ``watch(deadline:_:)``. The same calls as the
/// monitor's ``HangMonitor/enterWork()``, ``HangMonitor/leaveWork()`` and
/// ``HangMonitor/watch(deadline:_:)``, which a monitor started on another source cannot give.
///
/// ```swift
/// let scopes = try monitor.startWatchingScopes()   // on the thread whose work it marks
/// while let job = jobs.next() {
///     scopes.watch(deadline: .milliseconds(100)) { job.run() }
/// }
/// ```
public struct HangScopes: Sendable {
    let monitor: HangMonitor

    /// Marks the start of work (scopes nest: only the outermost counts), as
    /// ``HangMonitor/enterWork()`` does.
    public func enter() { monitor.enterWork() }

    /// Marks the end of the work ``enter()`` began.
    public func leave() { monitor.leaveWork() }

    /// Runs `body` as one scope of work, as ``HangMonitor/watch(deadline:_:)`` does.
    ///
    /// - Parameters:
    ///   - deadline: This scope's threshold (10 ms ... 1 h) instead of the monitor's; nil keeps
    ///     the monitor's.
    ///   - body: The work.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func watch<T>(deadline: Duration? = nil, _ body: () throws -> T) rethrows -> T {
        try monitor.watch(deadline: deadline, body)
    }
}
