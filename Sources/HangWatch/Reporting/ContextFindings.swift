/// What the counters of a hang's context (`HangContextRecord`) come to: the throttled time and its
/// share of the thread's off-CPU time, how long the process was stopped and by what, the major
/// faults and memory stall. Pure, each a function of numbers (`ReportBuilderTests`); the rules are
/// docs/report-format.md's (`context`).
enum ContextFindings {
    struct Throttling: Sendable, Equatable {
        /// The cgroup's throttled time, capped at the thread's off-CPU time (ms).
        var throttledMs: Double
        /// The counter's own difference (ms): it sums over CPUs, so may exceed the wall time.
        var counterMs: Double
        /// `throttledMs` over the thread's off-CPU time (nil: it was hardly off its CPU).
        var share: Double?
        var periods: Int?
    }

    /// Over a span of `wallMicroseconds` in which the thread ran `onCPUNanoseconds` and its cgroup
    /// was throttled `throttledNanoseconds` (in `periods` periods).
    static func throttling(wallMicroseconds: UInt64, onCPUNanoseconds: UInt64, throttledNanoseconds: UInt64, periods: UInt64?) -> Throttling {
        let wall = Double(wallMicroseconds) * 1000
        let offCPU = max(0, wall - Double(onCPUNanoseconds))
        let throttled = min(Double(throttledNanoseconds), offCPU)
        // Off its CPU for less than a millisecond (or 1 % of the span): nothing to share out.
        let share = offCPU >= max(1e6, wall / 100) ? throttled / offCPU : nil
        return Throttling(
            throttledMs: ReportBuilder.round(throttled / 1e6), counterMs: ReportBuilder.round(Double(throttledNanoseconds) / 1e6),
            share: share, periods: periods.map { Int(clamping: $0) })
    }

    /// What a stop's finding is made from.
    struct StopEvidence: Sendable, Equatable {
        /// The watchdog judged itself stopped (late without waiting for a CPU), or a sample found
        /// the thread stopped (`T`, `t`).
        var judged = false
        /// The hang's length (µs).
        var durationMicroseconds: UInt64 = 0
        /// v2 `frozen_usec` grew by this much over the hang, and the cgroup's path.
        var frozenMicroseconds: UInt64?
        var v2Cgroup: String?
        /// A look read the freezer freezing or frozen.
        var freezerSeen = false
        /// SIGCONTs that arrived during the hang, the latest one's time after the hang's start (µs).
        var continues: UInt64 = 0
        var lastContinueOffsetMicroseconds: UInt64?
        /// A tracer seen after the stop or at the end.
        var tracer: Int32?
        /// The stamp was installed and ours all along: no SIGCONT means none came.
        var continueStampInstalled = false
        /// The thread's v1 freezer cgroup, when not the root.
        var v1FreezerCgroup: String?
        /// The span the thread's counters cover, and how long it was runnable in it (on a CPU or
        /// waiting for one): a thread that is runnable whenever it is not stopped was stopped for
        /// the rest. Nil: not read.
        var windowMicroseconds: UInt64?
        var runnableMicroseconds: UInt64?
        /// Samples that found the thread running, and in any state.
        var running = 0
        var seen = 0
        /// The watchdog's stops, their lateness in all (a lower bound), and the part of it before
        /// the span the counters cover.
        var gapMicroseconds: UInt64 = 0
        var gapBeforeWindowMicroseconds: UInt64 = 0
    }

    struct Stop: Sendable, Equatable {
        var stoppedMs: Double
        var by: String?
        var evidence: String
    }

    /// Nil: no evidence the process was stopped.
    static func stop(_ evidence: StopEvidence) -> Stop? {
        let frozen = evidence.frozenMicroseconds.flatMap { $0 > 0 ? $0 : nil }
        guard evidence.judged || evidence.freezerSeen || frozen != nil else { return nil }
        let (microseconds, how) = stoppedTime(evidence, frozen: frozen)
        let stoppedMs = ReportBuilder.milliseconds(Int64(min(microseconds, evidence.durationMicroseconds)))
        let (by, why) = cause(evidence, frozen: frozen)
        return Stop(stoppedMs: stoppedMs, by: by, evidence: why + "; " + how)
    }

    /// How long, and how that was measured.
    static func stoppedTime(_ evidence: StopEvidence, frozen: UInt64?) -> (UInt64, String) {
        if let frozen { return (frozen, "stopped time: the frozen_usec difference") }
        if let window = evidence.windowMicroseconds, let runnable = evidence.runnableMicroseconds,
            evidence.running > 0, evidence.running * 2 >= evidence.seen,
            Double(runnable) >= 0.8 * Double(window &- min(window, evidence.gapMicroseconds))
        {
            // Runnable whenever it was not stopped (the share against the span less the watchdog's
            // stops, which are no longer than the stop): the rest of the span is the stop.
            return (window &- min(window, runnable) + evidence.gapBeforeWindowMicroseconds,
                    "stopped time: the span less the thread's own runnable time (it computed)")
        }
        return (evidence.gapMicroseconds, "stopped time: at least the watchdog's lateness (the thread was not runnable throughout)")
    }

    /// What stopped it, and the evidence: a proof, else the one inference a v1 freezer allows.
    static func cause(_ evidence: StopEvidence, frozen: UInt64?) -> (String?, String) {
        if let frozen {
            return ("cgroup freezer", "proof: cgroup.stat.local frozen_usec grew by \(frozen / 1000) ms" + (evidence.v2Cgroup.map { " (cgroup v2 \($0))" } ?? ""))
        }
        if evidence.freezerSeen {
            return ("cgroup freezer", "proof: the watchdog read the freezer freezing or frozen" + (evidence.v1FreezerCgroup.map { " (\($0))" } ?? ""))
        }
        if evidence.continues > 0 {
            let at = evidence.lastContinueOffsetMicroseconds.map { " at +\($0 / 1000) ms" } ?? ""
            return ("SIGSTOP", "proof: SIGCONT arrived during the hang\(at) (only a stop by a signal ends with one)")
        }
        if let tracer = evidence.tracer {
            return ("ptrace", "proof: a tracer (pid \(tracer)) was attached after the stop")
        }
        if let cgroup = evidence.v1FreezerCgroup, evidence.continueStampInstalled {
            return ("cgroup freezer", "inferred: the process is in the v1 freezer cgroup \(cgroup), and neither a SIGCONT nor a tracer was seen (a debugger that detached would look the same)")
        }
        let no = evidence.continueStampInstalled ? "no SIGCONT, no tracer seen" : "no SIGCONT stamp (the host handles SIGCONT), no tracer seen"
        return (nil, "the watchdog was late without waiting for a CPU; \(no)")
    }

    struct Paging: Sendable, Equatable {
        var majorFaults: Int
        var stallMs: Double?
        /// The stall's share of the thread's off-CPU time, when it is the thread's own cgroup's and
        /// the thread itself faulted (nil otherwise: not the verdict's evidence).
        var share: Double?
    }

    /// `majorFaults` the thread took and `stallMicroseconds` of memory stall over a span of
    /// `wallMicroseconds` in which it ran `onCPUNanoseconds`; `own`: the stall is the thread's own
    /// cgroup's. A thread found asleep in a system call at most looks is waiting on that call, not
    /// paging, whatever its cgroup's other tasks do.
    static func paging(
        majorFaults: UInt64, stallMicroseconds: UInt64?, wallMicroseconds: UInt64, onCPUNanoseconds: UInt64, own: Bool, inCalls: Int,
        seen: Int
    ) -> Paging {
        let offCPU = max(0, Double(wallMicroseconds) - Double(onCPUNanoseconds) / 1000)
        let share: Double? =
            if let stall = stallMicroseconds, own, majorFaults > 0, offCPU >= max(1000, Double(wallMicroseconds) / 100), inCalls * 2 < max(1, seen) {
                min(Double(stall), offCPU) / offCPU
            } else {
                nil
            }
        return Paging(
            majorFaults: Int(clamping: majorFaults), stallMs: stallMicroseconds.map { ReportBuilder.milliseconds(Int64(clamping: $0)) },
            share: share)
    }
}
