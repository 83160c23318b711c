import Foundation
@testable import HangWatch
@_spi(Internal) import HangWatchReport
import HangWatchTestSupport
import Testing

/// What holds a service back in a container, with real cgroups of this machine (root; cgroup v1
/// for the cpu and freezer controllers, a controller-less v2 hierarchy beside them): a CPU quota
/// (`throttled`), other processes' load (`starved`), a v1 and a v2 freezer mid-hang (`stopped`, by
/// the freezer, busy time apart), an idle service frozen (no hang), a thread faulting evicted pages
/// in (`paging`). Each child (`hangwatch-faults limits|pageout|idle`) starts inside its cgroups, and
/// each test removes them, whatever happened (docs/report-format.md, `context`).
@Suite(.serialized) struct ContainerFaultTests {
    static let cpuHierarchy = "/sys/fs/cgroup/cpu"
    static let freezerHierarchy = "/sys/fs/cgroup/freezer"
    static let unifiedHierarchy = "/sys/fs/cgroup/unified"

    /// What the child measured around its computing (`ContainerScenario.swift`).
    struct Measured {
        var fields: [String: Double]
        subscript(_ key: String) -> Double? { fields[key] }

        init(_ output: String) throws {
            let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") }, "the child printed no figures: \(output.suffix(500))")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            fields = object.compactMapValues { ($0 as? NSNumber)?.doubleValue }
        }
    }

    /// Runs `limits` in `cgroups`; the report and what the child measured.
    func runLimits(
        _ cgroups: [TestCgroup], mode: String, milliseconds: Int, counter: String? = nil, prefix: [String] = [],
        during: ((FaultHost, ReportDirectory) throws -> Void)? = nil
    ) throws -> (HangReport, Measured) {
        let directory = ReportDirectory()
        let host = try FaultHost(
            ["limits", "--reports", directory.path, "--mode", mode, "--ms", String(milliseconds)] + (counter.map { ["--counter", $0] } ?? []),
            launcher: TestCgroup.launcher(cgroups, after: prefix))
        try during?(host, directory)
        let outcome = host.finish(within: 60)
        #expect(outcome.status == 0, "\(outcome.standardError.suffix(2000))")
        let measured = try Measured(outcome.standardOutput)
        let report = try #require(directory.waitForFinished(1).first, "no report: \(directory.listing())")
        return (report, measured)
    }

    /// 800 ms computing under a 0.2-CPU quota, ten runs. To the kernel's counters of the thread it
    /// looks the same as a thread starved by other processes (on a CPU a fifth of the time,
    /// runnable all the time); only the cgroup's counter tells, and the report says so: `throttled`,
    /// the limit and where it is, and `throttledMs` within 10 % of the time the cgroup's limit held
    /// the thread back, as the thread measured it over its busy stretch (wall less run: under a
    /// quota all of its off-CPU time is throttling), and `cgroupThrottledMs` within 10 % of the
    /// cgroup's own counter over the stretch, as the child read it at its start and as the loop went
    /// to sleep. The two differ: the counter sums every CPU's throttled run queue, and the
    /// monitor's own watchdog waking in the throttled cgroup adds 0-43 % here, which the cap at the
    /// thread's off-CPU time leaves out of `throttledMs`. (The child runs at nice -20 and its cgroup
    /// has a nice -20 task's weight, so the load of a busy machine hardly adds a wait of its own.)
    @Test(arguments: 1...10) func aLoopUnderACPUQuotaIsThrottledByItsOwnCgroupsCount(run: Int) throws {
        let cpu = try TestCgroup.make(in: Self.cpuHierarchy, needing: ["cpu.cfs_quota_us", "cpu.stat"])
        defer { cpu.remove() }
        try cpu.write("cpu.cfs_period_us", "100000")
        try cpu.write("cpu.cfs_quota_us", "20000")
        try cpu.write("cpu.shares", "88761")
        let (report, measured) = try runLimits([cpu], mode: "wall", milliseconds: 800, counter: cpu.path + "/cpu.stat", prefix: ["nice", "-n", "-20"])
        let counter = try #require(measured["throttledMs"])
        guard counter > 300 else { try ControlCheck.cannotRun("the quota throttled the cgroup only \(counter) ms in 800 (CFS bandwidth control off?)") }
        let context = report.context
        let offCPU = try #require(measured["wallMs"]) - (try #require(measured["runMs"]))
        #expect(context.verdict == .throttled, "run \(run): \(context.verdict), on-CPU \(context.onCpuRatio ?? -1), throttled \(context.throttledMs ?? -1)")
        #expect(context.cpuLimit == HangReport.CPULimit(cores: 0.2, source: "cgroup v1 cpu.cfs_quota_us", path: cpu.path))
        #expect(context.cpuCount == 1 && context.hostCpuCount == ProcessInfo.processInfo.activeProcessorCount)
        let throttled = try #require(context.throttledMs)
        #expect(abs(throttled - offCPU) <= 0.1 * offCPU, "run \(run): throttledMs \(throttled), the thread off its CPU \(offCPU) ms (counter \(counter))")
        let raw = try #require(context.cgroupThrottledMs)
        #expect(abs(raw - counter) <= 0.1 * counter, "run \(run): cgroupThrottledMs \(raw), the cgroup's counter over the stretch \(counter)")
        #expect(throttled <= raw)
        #expect((context.throttledPeriods ?? 0) >= 6, "\(context.throttledPeriods ?? -1) periods throttled")
        #expect(HangReportSummary.verdictLine(report).hasPrefix("throttled: its cgroup's CPU limit (0.2 CPU, cgroup v1 \(cpu.path)) held it back"))
    }

    /// The same loop in a cgroup with no limit, beside three busy processes on its one CPU (in the
    /// same cgroup): the same schedstat picture, no throttling: `starved`, never `throttled`, with
    /// the throttled time written as the 0 it was.
    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset"), "taskset (util-linux) is not installed"),
        arguments: 1...10)
    func theSameLoopBesideBusyProcessesIsStarvedNeverThrottled(run: Int) throws {
        let cpu = try TestCgroup.make(in: Self.cpuHierarchy, needing: ["cpu.cfs_quota_us", "cpu.stat"])
        defer { cpu.remove() }
        // In the child's own cgroup: beside it on its CPU whatever else runs on the machine, and
        // one entity to the scheduler with it (a cgroup of its own against three busy processes
        // in the test runner's autogroup got half the CPU, where the verdict is a coin toss).
        let hogs = try (0..<3).map { _ in
            let hog = Process()
            hog.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            hog.arguments = TestCgroup.launcher([cpu], after: ["taskset", "-c", "0"]) + ["/bin/sh", "-c", "while :; do :; done"]
            try hog.run()
            return hog
        }
        defer { hogs.forEach { kill($0.processIdentifier, SIGKILL); $0.waitUntilExit() } }
        let (report, measured) = try runLimits([cpu], mode: "wall", milliseconds: 800, counter: cpu.path + "/cpu.stat", prefix: ["taskset", "-c", "0"])
        let waited = try #require(measured["waitMs"]) / (try #require(measured["wallMs"]))
        guard waited > 0.4 else { try ControlCheck.cannotRun("the busy processes held the child back only \(Int(waited * 100)) % of the time") }
        #expect(measured["throttledMs"] == 0)
        #expect(report.context.verdict == .starved, "run \(run): \(report.context.verdict), on-CPU \(report.context.onCpuRatio ?? -1), waiting \(report.context.runQueueRatio ?? -1), the child waited \(waited) of its wall time")
        #expect(report.context.throttledMs == 0 && report.context.cpuLimit == nil)
    }

    /// 800 ms of the thread's own CPU time, its v1 freezer cgroup frozen for 2 s once the hang is
    /// detected: `stopped`, by the freezer (inferred: v1 leaves no trace after the thaw, and neither
    /// a SIGCONT nor a tracer came), the busy time within 5 % of the thread's own runnable time.
    @Test func aV1FreezeMidHangIsStoppedByTheFreezerWithItsBusyTimeApart() throws {
        let freezer = try TestCgroup.make(in: Self.freezerHierarchy, needing: ["freezer.state"])
        defer { freezer.remove() }
        var froze = 0.0
        let (report, measured) = try runLimits([freezer], mode: "cpu", milliseconds: 800) { _, directory in
            try #require(!directory.waitFor(timeout: 20) { $0.contains { $0.outcome == .ongoing } }.isEmpty, "the hang was not detected")
            let start = Date()
            try freezer.write("freezer.state", "FROZEN")
            usleep(2_000_000)  // the fault: two seconds frozen
            try freezer.write("freezer.state", "THAWED")
            froze = Date().timeIntervalSince(start) * 1000
        }
        let context = report.context
        #expect(context.verdict == .stopped && context.processStopped, "\(context.verdict)")
        #expect(context.stoppedBy == "cgroup freezer", "\(context.stoppedBy ?? "nil"): \(context.stopEvidence ?? "")")
        #expect(context.stopEvidence?.hasPrefix("inferred: the process is in the v1 freezer cgroup \(freezer.path)") == true, "\(context.stopEvidence ?? "")")
        let busy = try #require(context.busyMs)
        let runnable = try #require(measured["runMs"]) + (try #require(measured["waitMs"]))
        #expect(abs(busy - runnable) <= 0.05 * runnable, "busy \(busy) ms, the thread runnable \(runnable) ms, frozen \(froze) ms")
        #expect(abs((context.stoppedMs ?? 0) - froze) <= 0.05 * froze, "stopped \(context.stoppedMs ?? -1) ms, frozen \(froze) ms")
    }

    /// The same with a v2 freezer (`cgroup.freeze`), on kernel 6.18's `frozen_usec`: the proof, and
    /// the stopped time to the freezer's own count.
    @Test func aV2FreezeMidHangIsProvenByTheFreezersOwnCount() throws {
        let unified = try TestCgroup.make(in: Self.unifiedHierarchy, needing: ["cgroup.freeze", "cgroup.stat.local"])
        defer { unified.remove() }
        guard unified.value("frozen_usec", in: "cgroup.stat.local") != nil else {
            try ControlCheck.cannotRun("cgroup.stat.local has no frozen_usec (a kernel before 6.18)")
        }
        var frozen: UInt64 = 0
        let (report, measured) = try runLimits([unified], mode: "cpu", milliseconds: 800) { _, directory in
            try #require(!directory.waitFor(timeout: 20) { $0.contains { $0.outcome == .ongoing } }.isEmpty, "the hang was not detected")
            let before = unified.value("frozen_usec", in: "cgroup.stat.local") ?? 0
            try unified.write("cgroup.freeze", "1")
            usleep(2_000_000)
            try unified.write("cgroup.freeze", "0")
            frozen = (unified.value("frozen_usec", in: "cgroup.stat.local") ?? 0) - before
        }
        let context = report.context
        #expect(context.verdict == .stopped && context.stoppedBy == "cgroup freezer", "\(context.verdict) \(context.stoppedBy ?? "nil")")
        #expect(context.stopEvidence?.hasPrefix("proof: cgroup.stat.local frozen_usec grew by") == true, "\(context.stopEvidence ?? "")")
        #expect(abs((context.stoppedMs ?? 0) - Double(frozen) / 1000) <= 1, "stopped \(context.stoppedMs ?? -1) ms, frozen_usec grew \(frozen) µs")
        let busy = try #require(context.busyMs)
        let runnable = try #require(measured["runMs"]) + (try #require(measured["waitMs"]))
        #expect(abs(busy - runnable) <= 0.05 * runnable, "busy \(busy) ms, the thread runnable \(runnable) ms")
    }

    /// How the agent tells a frozen process from a silent watchdog: its cgroup, read from outside
    /// (`CgroupFreezer.isFrozen`), says frozen while a v1 or a v2 freezer holds it, and not after.
    @Test(arguments: [false, true]) func aFrozenProcessIsToldFromOutside(unified: Bool) throws {
        let cgroup = try TestCgroup.make(
            in: unified ? Self.unifiedHierarchy : Self.freezerHierarchy, needing: [unified ? "cgroup.freeze" : "freezer.state"])
        defer { cgroup.remove() }
        let child = try RunningExecutable("/usr/bin/env", TestCgroup.launcher([cgroup]) + ["sleep", "30"])
        defer { child.signal(SIGKILL) }
        try #require(Eventually.holds(timeout: 10) { cgroup.read("cgroup.procs")?.contains(String(child.pid)) == true }, "the child did not join")
        #expect(CgroupFreezer.isFrozen(pid: child.pid) == false)
        try cgroup.write(unified ? "cgroup.freeze" : "freezer.state", unified ? "1" : "FROZEN")
        #expect(Eventually.holds(timeout: 10) { CgroupFreezer.isFrozen(pid: child.pid) == true })
        try cgroup.write(unified ? "cgroup.freeze" : "freezer.state", unified ? "0" : "THAWED")
        #expect(Eventually.holds(timeout: 10) { CgroupFreezer.isFrozen(pid: child.pid) == false })
        #expect(CgroupFreezer.isFrozen(pid: getpid()) == false, "the test runner is in no frozen cgroup")
    }

    /// An idle service frozen for 10 s (a `docker pause`): no hang, no report.
    @Test func anIdleServiceFrozenTenSecondsCountsNoHang() throws {
        let freezer = try TestCgroup.make(in: Self.freezerHierarchy, needing: ["freezer.state"])
        defer { freezer.remove() }
        let directory = ReportDirectory()
        let host = try FaultHost(["idle", "--reports", directory.path, "--seconds", "13"], launcher: TestCgroup.launcher([freezer]))
        try #require(Eventually.holds(timeout: 20) { host.output.contains("started") }, "the service did not start")
        usleep(500_000)
        try freezer.write("freezer.state", "FROZEN")
        usleep(10_000_000)  // the fault: ten seconds frozen
        try freezer.write("freezer.state", "THAWED")
        let outcome = host.finish(within: 60)
        #expect(outcome.status == 0, "\(outcome.standardError.suffix(2000))")
        let statistics = try Measured(outcome.standardOutput)
        #expect(statistics["hangsDetected"] == 0 && statistics["reportsWritten"] == 0, "\(statistics.fields)")
        #expect(directory.reports().isEmpty, "\(directory.listing())")
    }

    /// A thread that reads a file's pages, evicted (MADV_PAGEOUT, with MADV_RANDOM so that each is
    /// one major fault): its major faults are in the report; in a v2 cgroup of its own, whose
    /// memory pressure shows the stall, it is `paging`; with only the system's pressure to go by,
    /// the faults and the stall are reported and the verdict is not `paging`.
    @Test(arguments: [true, false]) func aThreadFaultingEvictedPagesInSaysSo(ownCgroup: Bool) throws {
        let file = FileManager.default.temporaryDirectory.path + "/hangwatch-pages-\(getpid()).bin"
        defer { unlink(file) }
        var bytes = [UInt8](repeating: 0, count: 32 << 20)
        for index in stride(from: 0, to: bytes.count, by: 4096) { bytes[index] = UInt8(truncatingIfNeeded: index >> 12) }
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let fd = open(file, O_RDONLY)
        fsync(fd)
        close(fd)
        let unified = ownCgroup ? try TestCgroup.make(in: Self.unifiedHierarchy, needing: ["memory.pressure"]) : nil
        defer { unified?.remove() }
        let directory = ReportDirectory()
        let host = try FaultHost(
            ["pageout", "--reports", directory.path, "--file", file], launcher: TestCgroup.launcher(unified.map { [$0] } ?? [], after: ["nice", "-n", "-20"]))
        let outcome = host.finish(within: 60)
        if outcome.status == 4 { try ControlCheck.cannotRun("MADV_PAGEOUT is refused here: \(outcome.standardError.suffix(300))") }
        #expect(outcome.status == 0, "\(outcome.standardError.suffix(2000))")
        let measured = try Measured(outcome.standardOutput)
        let faults = try #require(measured["majorFaults"])
        guard faults >= 0.5 * (try #require(measured["pages"])) else { try ControlCheck.cannotRun("only \(faults) of the pages were read in by a fault: readahead") }
        let report = try #require(directory.waitForFinished(1).first, "no report: \(directory.listing())")
        let context = report.context
        let reported = Double(try #require(context.majorFaults))
        #expect(abs(reported - faults) <= 0.1 * faults, "the report says \(reported) major faults, the thread counted \(faults)")
        #expect(context.countersFromMs.map { $0 < 20 } == true, "the counters began \(context.countersFromMs ?? -1) ms into the hang")
        if ownCgroup {
            #expect(context.memoryPressureSource == "cgroup v2 \(unified!.path)")
            // `paging` is a thread that waited for its pages most of the hang (off its CPU, the
            // stall its cgroup's): on a disk that reads a page about as fast as the kernel maps it,
            // the same faults keep the thread on its CPU half the time (0.501 in one run of
            // four), which the rule leaves to `computing`; then there is no paging to tell.
            let onCPU = try #require(context.onCpuRatio)
            guard onCPU < 0.5 else {
                try ControlCheck.cannotRun("the faults kept the thread on its CPU \(Int(onCPU * 100)) % of the hang (stall \(context.memoryStallMs ?? -1) ms): no wait for pages to tell")
            }
            #expect(context.verdict == .paging, "\(context.verdict): on-CPU \(context.onCpuRatio ?? -1), waiting \(context.runQueueRatio ?? -1), stall \(context.memoryStallMs ?? -1) ms")
            #expect(HangReportSummary.verdictLine(report).hasPrefix("paging: waited for pages to be read in (\(Int(reported)) major page faults"))
        } else {
            #expect(context.memoryPressureSource == nil || context.memoryPressureSource == "system")
            #expect(context.verdict != .paging, "the system's pressure is no proof: \(context.verdict)")
        }
    }
}
