extension HangMonitor {
    /// Runs `body` with `labels` in effect on the calling thread: a hang of this thread while
    /// `body` runs carries them in its report (`labels`), whichever monitor reports it; a hang
    /// before or after carries none of them.
    ///
    /// ```swift
    /// try HangMonitor.withLabels(["route": "GET /checkout", "tenant": "acme"]) { try handle(request) }
    /// ```
    ///
    /// Nested calls add to the labels in effect: an inner key replaces an outer one, the outer
    /// keys stay. A report keeps at most 8 labels, keys of up to 40 bytes and values of up to 128
    /// (longer ones are cut and end with `…`). A `traceparent` label in W3C form links the hang's
    /// OpenTelemetry record to its trace (`hangwatchd`).
    ///
    /// Costs about 14 ns per call entered and left (`make bench`, figure 19): no lock, no
    /// allocation, no reference counting (the caller's dictionary is kept, not copied, while
    /// `body` runs).
    ///
    /// - Parameters:
    ///   - labels: Keys and values to put in effect, added to those already in effect.
    ///   - body: The work the labels describe, run on the calling thread.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; the labels are out of effect either way.
    @inlinable
    public static func withLabels<Value, Failure: Error>(
        _ labels: [String: String], _ body: () throws(Failure) -> Value
    ) throws(Failure) -> Value {
        let thread = enterThreadLabels(labels)
        defer {
            leaveThreadLabels(thread)
            // The slot holds `labels` unretained until the leave: they live until here.
            _fixLifetime(labels)
        }
        return try body()
    }

    /// Runs `body` with `labels` in effect for the current task, across its suspensions and on
    /// whichever thread runs it: a hang of a thread while it runs this task inside `body` (a pool
    /// thread held by one job, the main actor's thread) carries them.
    ///
    /// ```swift
    /// try await HangMonitor.withLabels(["route": "GET /export"]) { try await export() }
    /// ```
    ///
    /// Nesting works as for the synchronous form, with it too: labels a thread puts in effect
    /// synchronously inside `body` are inner to the task's. Child tasks (`async let`, task groups,
    /// `Task {}`) do not inherit them: wrap their bodies too. The watchdog finds the task a hung
    /// thread runs through that thread's current-task word, known for the pool's threads (once
    /// the pool watch attached them) and for threads that entered or left a labelled task (and
    /// the main actor's thread); a hang on another thread carries the thread's own labels only.
    ///
    /// Costs about 75 ns per call entered and left (figure 19; an empty async function of the same
    /// shape costs 25 of them, `TaskLocal.withValue` 120): no lock, no allocation.
    ///
    /// - Parameters:
    ///   - labels: Keys and values to put in effect for the task, added to those already in effect.
    ///   - isolation: The actor `body` runs on: the caller's, by default, so that the call adds no
    ///     hop.
    ///   - body: The work the labels describe.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; the labels are out of effect either way.
    @inlinable
    public static func withLabels<Value, Failure: Error>(
        _ labels: [String: String], isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let slot = enterTaskLabels(labels)
        defer {
            leaveTaskLabels(slot)
            _fixLifetime(labels)
        }
        return try await body()
    }

    /// `withLabels`'s entry on a thread: the thread's slot, for `leaveThreadLabels`. The slot holds
    /// `labels` unretained: the caller keeps them alive until `leaveThreadLabels` returned.
    @usableFromInline
    static func enterThreadLabels(_ labels: [String: String]) -> UnsafeMutableRawPointer {
        let thread = UnsafeLabelThreads.current
        thread._withUnsafeGuaranteedRef { $0.stack.push(labels) }
        return thread.toOpaque()
    }

    @usableFromInline
    static func leaveThreadLabels(_ thread: UnsafeMutableRawPointer) {
        Unmanaged<LabelThread>.fromOpaque(thread)._withUnsafeGuaranteedRef { $0.stack.pop() }
    }

    /// `withLabels`'s entry in a task: the task's slot in `UnsafeTaskLabelTable`, or -1 (outside a
    /// task, a runtime without the entry points, no free slot).
    @usableFromInline
    static func enterTaskLabels(_ labels: [String: String]) -> Int {
        guard let task = UnsafeLabelThreads.currentTaskID() else { return -1 }
        return UnsafeTaskLabelTable.shared.enter(task, labels)
    }

    @usableFromInline
    static func leaveTaskLabels(_ slot: Int) {
        guard slot >= 0 else { return }
        UnsafeTaskLabelTable.shared.leave(slot)
        UnsafeLabelThreads.noteTaskThread()
    }
}
