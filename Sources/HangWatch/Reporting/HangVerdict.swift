@_spi(Internal) import HangWatchReport

/// The one-word verdict of a hang, from its evidence: pure, the rules docs/report-format.md states
/// (`context.verdict`), tested as a table (`ReportBuilderTests.theVerdictTable`). A verdict that
/// blames something other than the code is written only when the evidence proves it.
struct HangVerdict: Sendable, Equatable {
    /// What the verdict is decided from.
    struct Evidence: Sendable, Equatable {
        var debuggerAttached = false
        var deadlocked = false
        /// The process was stopped during the hang (the watchdog's own lateness without a wait
        /// for a CPU, a sample of the thread stopped, a freezer's counter or state).
        var stopped = false
        /// The thread's CPU and run-queue time over the sampled span, per wall time (nil: not
        /// measured).
        var onCPU: Double?
        var runQueue: Double?
        /// Samples that found the thread running (`R`), and that found it in any state.
        var running = 0
        var seen = 0
        /// No sample saw the thread at all.
        var noState = false
        /// The share of the thread's off-CPU time its cgroup was throttled (`ContextFindings.throttling`).
        var throttledShare: Double?
        /// The share of the thread's off-CPU time its own cgroup's tasks were stalled on memory,
        /// with major faults of the thread's own (`ContextFindings.paging`); nil: not both.
        var pagingShare: Double?
    }

    /// A cgroup throttled at least this share of the thread's off-CPU time: the limit held it back
    /// (measured: 0.97-0.99 under a quota, 0.00 beside other processes' load, nothing between).
    static let throttledShare = 0.5
    /// The thread's own cgroup was stalled on memory at least this share of the thread's off-CPU time.
    static let pagingShare = 0.5

    static func decide(_ evidence: Evidence) -> HangReport.Verdict {
        if evidence.debuggerAttached { return .debugger }
        if evidence.deadlocked { return .deadlocked }
        if evidence.stopped { return .stopped }
        // Off its CPU at least half the hang, and its own cgroup stalled on memory most of that
        // time, with faults of its own: waiting for pages to be read in (a faulting thread looks
        // runnable more than it looks blocked: the fault's work and the wait for a CPU after each
        // read are the stall's too).
        if let share = evidence.pagingShare, share >= pagingShare, (evidence.onCPU ?? 0) < 0.5 { return .paging }
        guard let onCPU = evidence.onCPU, let runQueue = evidence.runQueue else {
            // No sample saw the thread (none taken, or none that could read its state); else a
            // single sample: judge by its scheduler state.
            if evidence.noState { return .unknown }
            return evidence.running * 2 >= evidence.seen ? .computing : .blocked
        }
        if onCPU + runQueue >= 0.5 {
            // Runnable (on a CPU or waiting for one) most of the time: computing, unless it waited
            // at least as long as it ran, which is not the code's doing.
            if runQueue < onCPU { return .computing }
        } else if !(onCPU < 0.1 && evidence.running * 2 >= evidence.seen && evidence.running > 0) {
            // (Found runnable at most looks, yet hardly ever on a CPU: it waited for one all along.
            // The kernel adds a wait to the run-queue time only once it ends, when the thread gets
            // a CPU, so a thread still waiting shows none of it.)
            return .blocked
        }
        // It waited for a CPU: held back by its own cgroup's limit (the throttled time covers most
        // of its off-CPU time), else by the machine (other processes' load).
        if let share = evidence.throttledShare, share >= throttledShare { return .throttled }
        return .starved
    }
}
