@testable import HangWatch
import HangWatchReport
import Testing

/// The verdict's rules (docs/report-format.md, `context.verdict`), as a table: each row is the
/// evidence of one kind of hang and the verdict it proves.
@Suite struct HangVerdictTests {
    typealias Evidence = HangVerdict.Evidence

    /// A thread runnable the whole time, on a CPU `onCPU` of it and waiting for one the rest.
    static func runnable(onCPU: Double, throttledShare: Double? = nil) -> Evidence {
        Evidence(onCPU: onCPU, runQueue: 1 - onCPU, running: 10, seen: 10, throttledShare: throttledShare)
    }

    static let table: [(String, Evidence, HangReport.Verdict)] = [
        ("on a CPU all along", runnable(onCPU: 0.99), .computing),
        ("on a CPU more than it waited, a little throttled", runnable(onCPU: 0.6, throttledShare: 0.9), .computing),
        ("waited for a CPU, no throttling (three hogs on its CPU: 0.00 measured)", runnable(onCPU: 0.2, throttledShare: 0), .starved),
        ("waited for a CPU, no cgroup counter readable", runnable(onCPU: 0.2), .starved),
        ("waited for a CPU, its cgroup throttled for it (a 0.2 CPU quota: 0.97-0.99 measured)", runnable(onCPU: 0.2, throttledShare: 0.98), .throttled),
        ("throttled for half its off-CPU time", runnable(onCPU: 0.3, throttledShare: 0.5), .throttled),
        ("throttled for less than half", runnable(onCPU: 0.3, throttledShare: 0.49), .starved),
        ("a quota and hogs: the limit still wins (0.97 measured)", runnable(onCPU: 0.45, throttledShare: 0.97), .throttled),
        ("found runnable, never run, throttled", Evidence(onCPU: 0, runQueue: 0, running: 4, seen: 4, throttledShare: 0.9), .throttled),
        ("found runnable, never run, not throttled", Evidence(onCPU: 0, runQueue: 0, running: 4, seen: 4), .starved),
        ("asleep in a call, its cgroup throttled (others' work)", Evidence(onCPU: 0.01, runQueue: 0, running: 0, seen: 8, throttledShare: 1), .blocked),
        ("stopped beats throttled", Evidence(stopped: true, onCPU: 0.2, runQueue: 0.8, running: 8, seen: 8, throttledShare: 1), .stopped),
        ("a debugger beats everything", Evidence(debuggerAttached: true, deadlocked: true, stopped: true), .debugger),
        ("a deadlock beats a stop", Evidence(deadlocked: true, stopped: true), .deadlocked),
        ("off its CPU, its own cgroup stalled on memory most of that time (0.9 measured)",
         Evidence(onCPU: 0.39, runQueue: 0.09, running: 5, seen: 7, pagingShare: 0.9), .paging),
        ("off its CPU, waiting for one, its cgroup stalled", Evidence(onCPU: 0.2, runQueue: 0.5, running: 6, seen: 8, pagingShare: 0.7), .paging),
        ("paging beats throttling", Evidence(onCPU: 0.2, runQueue: 0.8, running: 8, seen: 8, throttledShare: 1, pagingShare: 0.6), .paging),
        ("on a CPU most of the time, faulting a little", Evidence(onCPU: 0.7, runQueue: 0.1, running: 8, seen: 8, pagingShare: 1), .computing),
        ("faulting, runnable just over half the time (measured: 0.375 on a CPU, 0.151 waiting, stall 516 of 640 ms)",
         Evidence(onCPU: 0.375, runQueue: 0.151, running: 5, seen: 9, pagingShare: 1), .paging),
        ("a little memory stall", Evidence(onCPU: 0.2, runQueue: 0.8, running: 8, seen: 8, pagingShare: 0.3), .starved),
        ("a little memory stall, off its CPU", Evidence(onCPU: 0.2, runQueue: 0.1, running: 1, seen: 8, pagingShare: 0.3), .blocked),
        ("one sample, asleep, its cgroup stalled", Evidence(running: 0, seen: 1, pagingShare: 0.8), .paging),
        ("stopped beats paging", Evidence(stopped: true, pagingShare: 1), .stopped),
        ("no sample saw it", Evidence(noState: true), .unknown),
        ("one sample, running", Evidence(running: 1, seen: 1), .computing),
        ("one sample, asleep", Evidence(running: 0, seen: 1), .blocked),
    ]

    @Test(arguments: 0..<table.count) func theVerdictTable(_ row: Int) {
        let (why, evidence, verdict) = Self.table[row]
        #expect(HangVerdict.decide(evidence) == verdict, "\(why)")
    }
}
