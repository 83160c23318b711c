@testable import HangWatch
import Testing

/// What a hang's context counters come to (docs/report-format.md, `context`): the throttled time
/// and its share, the stop's length and cause, paging. Tables of numbers from the facts measured on
/// the project's VM (a 0.2-CPU quota, three hogs on one CPU, a 2 s freeze, SIGSTOP, a debugger).
@Suite struct ContextFindingsTests {
    /// 800 ms under a 0.2-CPU quota: 170 ms on a CPU, the cgroup throttled 615 ms (share 0.98);
    /// beside three hogs: 90 ms on a CPU, throttled 0.
    @Test func theThrottledTimeIsCappedAtTheThreadsOffCPUTime() throws {
        let quota = ContextFindings.throttling(wallMicroseconds: 800_000, onCPUNanoseconds: 170_000_000, throttledNanoseconds: 615_000_000, periods: 8)
        #expect(quota.throttledMs == 615 && quota.counterMs == 615 && quota.periods == 8)
        #expect(try #require(quota.share) > 0.97)
        let hogs = ContextFindings.throttling(wallMicroseconds: 800_000, onCPUNanoseconds: 90_000_000, throttledNanoseconds: 0, periods: 0)
        #expect(hogs.throttledMs == 0 && hogs.share == 0)
        // The counter sums over CPUs: two busy threads in the cgroup count 1780 ms in 1057 ms.
        let summed = ContextFindings.throttling(wallMicroseconds: 1_057_000, onCPUNanoseconds: 100_000_000, throttledNanoseconds: 1_780_000_000, periods: nil)
        #expect(summed.throttledMs == 957 && summed.counterMs == 1780 && summed.share == 1 && summed.periods == nil)
        // On a CPU all along: no off-CPU time to share out.
        let computing = ContextFindings.throttling(wallMicroseconds: 800_000, onCPUNanoseconds: 799_900_000, throttledNanoseconds: 5_000_000, periods: 1)
        #expect(computing.share == nil && computing.throttledMs == 0.1)
    }

    static func stopped(_ change: (inout ContextFindings.StopEvidence) -> Void) -> ContextFindings.StopEvidence {
        // A 2.8 s hang, 800 ms of it computing, the rest stopped; the watchdog was 1.9 s late.
        var evidence = ContextFindings.StopEvidence(
            judged: true, durationMicroseconds: 2_800_000, continueStampInstalled: true, windowMicroseconds: 2_790_000,
            runnableMicroseconds: 790_000, running: 12, seen: 12, gapMicroseconds: 1_900_000)
        change(&evidence)
        return evidence
    }

    static let causes: [(String, ContextFindings.StopEvidence, String?, String)] = [
        ("v2 frozen_usec grew: proof, and the exact time",
         stopped { $0.frozenMicroseconds = 2_004_000; $0.v2Cgroup = "/sys/fs/cgroup/app"; $0.v1FreezerCgroup = "/sys/fs/cgroup/freezer/app" },
         "cgroup freezer", "proof: cgroup.stat.local frozen_usec grew by 2004 ms (cgroup v2 /sys/fs/cgroup/app)"),
        ("the watchdog read the v1 freezer FREEZING", stopped { $0.freezerSeen = true; $0.v1FreezerCgroup = "/f/app" },
         "cgroup freezer", "proof: the watchdog read the freezer freezing or frozen (/f/app)"),
        ("a SIGCONT arrived", stopped { $0.continues = 1; $0.lastContinueOffsetMicroseconds = 2_369_000; $0.v1FreezerCgroup = "/f/app" },
         "SIGSTOP", "proof: SIGCONT arrived during the hang at +2369 ms (only a stop by a signal ends with one)"),
        ("a tracer after the stop", stopped { $0.tracer = 4242 }, "ptrace", "proof: a tracer (pid 4242) was attached after the stop"),
        ("in a v1 freezer cgroup, no SIGCONT, no tracer", stopped { $0.v1FreezerCgroup = "/sys/fs/cgroup/freezer/docker/x" },
         "cgroup freezer", "inferred: the process is in the v1 freezer cgroup /sys/fs/cgroup/freezer/docker/x, and neither a SIGCONT nor a tracer was seen (a debugger that detached would look the same)"),
        ("in a v1 freezer cgroup, but the host handles SIGCONT: no inference", stopped { $0.v1FreezerCgroup = "/f/x"; $0.continueStampInstalled = false },
         nil, "the watchdog was late without waiting for a CPU; no SIGCONT stamp (the host handles SIGCONT), no tracer seen"),
        ("in the root freezer cgroup, nothing seen", stopped { _ in }, nil, "the watchdog was late without waiting for a CPU; no SIGCONT, no tracer seen"),
    ]

    @Test(arguments: 0..<causes.count) func whatStoppedItIsAProofOrTheOneInference(_ row: Int) throws {
        let (why, evidence, by, text) = Self.causes[row]
        let stop = try #require(ContextFindings.stop(evidence), "\(why)")
        #expect(stop.by == by, "\(why)")
        #expect(stop.evidence.hasPrefix(text + "; "), "\(why): \(stop.evidence)")
    }

    @Test func howLongItWasStopped() throws {
        // The freezer's own counter, when there is one.
        #expect(try #require(ContextFindings.stop(Self.stopped { $0.frozenMicroseconds = 2_004_000 })).stoppedMs == 2004)
        // A thread that computed: the span less its runnable time (2790 - 790).
        let computed = try #require(ContextFindings.stop(Self.stopped { _ in }))
        #expect(computed.stoppedMs == 2000 && computed.evidence.hasSuffix("the span less the thread's own runnable time (it computed)"))
        // ... plus a stop before the span, when the span began only at detection.
        #expect(try #require(ContextFindings.stop(Self.stopped { $0.gapBeforeWindowMicroseconds = 300_000 })).stoppedMs == 2300)
        // A thread asleep in a call: at least the watchdog's lateness.
        let asleep = try #require(ContextFindings.stop(Self.stopped { $0.running = 0; $0.runnableMicroseconds = 1_000 }))
        #expect(asleep.stoppedMs == 1900 && asleep.evidence.hasSuffix("at least the watchdog's lateness (the thread was not runnable throughout)"))
        // Runnable too little of the span less the watchdog's stops: not trusted.
        #expect(try #require(ContextFindings.stop(Self.stopped { $0.runnableMicroseconds = 500_000 })).stoppedMs == 1900)
        // Never longer than the hang.
        #expect(try #require(ContextFindings.stop(Self.stopped { $0.frozenMicroseconds = 9_000_000 })).stoppedMs == 2800)
    }

    @Test func noEvidenceNoStop() {
        #expect(ContextFindings.stop(Self.stopped { $0.judged = false }) == nil)
        // A freezer's proof is evidence of its own.
        #expect(ContextFindings.stop(Self.stopped { $0.judged = false; $0.frozenMicroseconds = 400_000 })?.by == "cgroup freezer")
        #expect(ContextFindings.stop(Self.stopped { $0.judged = false; $0.frozenMicroseconds = 0 }) == nil)
        // A SIGCONT alone (someone continued a running process) is not a stop.
        #expect(ContextFindings.stop(Self.stopped { $0.judged = false; $0.continues = 1 }) == nil)
    }

    @Test func pagingIsTheVerdictsEvidenceOnlyFromTheThreadsOwnCgroupAndItsOwnFaults() throws {
        // 8191 major faults in 550 ms, 217 ms of it on a CPU; its own v2 cgroup stalled 300 ms
        // (measured on the VM).
        func paging(faults: UInt64 = 8191, stall: UInt64? = 300_336, own: Bool = true, onCPU: UInt64 = 217_000_000, inCalls: Int = 0) -> ContextFindings.Paging {
            ContextFindings.paging(
                majorFaults: faults, stallMicroseconds: stall, wallMicroseconds: 550_000, onCPUNanoseconds: onCPU, own: own, inCalls: inCalls, seen: 7)
        }
        let own = paging()
        #expect(own.majorFaults == 8191 && own.stallMs == 300.336)
        #expect(try #require(own.share) > 0.89 && own.share! < 0.91)
        // The whole system's pressure: reported, not evidence.
        #expect(paging(own: false).share == nil && paging(own: false).stallMs == 300.336)
        // No fault of its own: its cgroup's other tasks stalled.
        #expect(paging(faults: 0).share == nil)
        // Asleep in a call at most looks: waiting on that call.
        #expect(paging(inCalls: 4).share == nil)
        // On a CPU all along: no off-CPU time to explain.
        #expect(paging(onCPU: 549_900_000).share == nil)
        // A stall longer than the off-CPU time (other tasks' too): capped at it.
        #expect(paging(stall: 500_000).share == 1)
        #expect(paging(stall: nil).stallMs == nil && paging(stall: nil).share == nil)
    }
}
