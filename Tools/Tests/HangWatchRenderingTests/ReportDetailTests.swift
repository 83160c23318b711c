import Foundation
import HangWatchRendering
import HangWatchReport
import HangWatchTestSupport
import Testing

/// `hangwatch show`'s text of one report, as strings, without running the binary.
@Suite(.serialized) struct ReportDetailTests {
    static func render(_ report: HangReport, width: Int = 100, colors: Bool = false, frames: Int = 16) -> [String] {
        Text.utc = true
        return ReportDetail(terminal: Terminal(colors: colors, width: width), maxFrames: frames)
            .render(report, path: "/var/lib/hangwatch/reports/hang.json").split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
    }

    @Test func theHeaderSaysWhichHangWhoAndWhen() {
        let lines = Self.render(ReportFixtures.report())
        #expect(lines.first == "hang 20261122T010203123Z-billing-42-1")
        #expect(lines.contains("service   billing (pid 42, host host-1), thread billing, tid 42, main"), "\(lines)")
        #expect(lines.contains("started   2026-11-18 11:06:40.123 UTC, lasted 713ms (threshold 250ms)"), "\(lines)")
        #expect(lines.contains("outcome   recovered"), "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("release") }, "a report that names no release shows none")
    }

    @Test func theReleaseSaysWhereItCameFrom() {
        var report = ReportFixtures.report()
        report.serviceVersion = ServiceVersion(version: "1.1.0", source: .openTelemetry)
        #expect(Self.render(report).contains("release   1.1.0 (from OTEL_RESOURCE_ATTRIBUTES)"))
    }

    /// Where the process ran: the pod as kubectl names it, with its uid and node, and the
    /// container by name and short id; only what the report says, and nothing for a report that
    /// says nothing.
    @Test func thePodAndTheContainerWhereTheReportNamesThem() throws {
        var report = ReportFixtures.report()
        report.resource = WorkloadIdentity(
            containerID: String(repeating: "3f2a1b4c", count: 8), podName: "billing-7d9f8-x2x", namespaceName: "shop",
            podUID: "0c6a5d3e-2b7e-4a36-a9a4-0d2d1c7f3b11", containerName: "app", nodeName: "node-3")
        let lines = Self.render(report)
        let pod = try #require(lines.firstIndex(of: "pod       shop/billing-7d9f8-x2x, uid 0c6a5d3e-2b7e-4a36-a9a4-0d2d1c7f3b11"), "\(lines)")
        #expect(Array(lines[(pod + 1)...].prefix(2)) == ["node      node-3", "container app, id 3f2a1b4c3f2a"], "\(lines)")
        // Whole in 80 columns, with a pod's name of 25 characters and its uid.
        #expect(Self.render(report, width: 80)[pod] == lines[pod])
        report.resource = WorkloadIdentity(containerID: String(repeating: "3f2a1b4c", count: 8))
        let docker = Self.render(report)
        #expect(docker.contains("container id 3f2a1b4c3f2a") && !docker.contains { $0.hasPrefix("pod ") || $0.hasPrefix("node ") }, "\(docker)")
        report.resource = WorkloadIdentity(nodeName: "node-3")
        #expect(Self.render(report).contains("node      node-3"))
        let plain = Self.render(ReportFixtures.report())
        #expect(!plain.contains { $0.hasPrefix("pod ") || $0.hasPrefix("container ") || $0.hasPrefix("node ") })
    }

    @Test func theHeaviestStackNamesItsFramesInnermostFirst() throws {
        let lines = Self.render(ReportFixtures.report())
        let start = try #require(lines.firstIndex { $0.hasPrefix("heaviest stack") }, "\(lines)")
        #expect(lines[start] == "heaviest stack (1 of 2 samples, 50ms)")
        // Innermost first; a frame without a symbol is its image and offset; a named one has its
        // file and line after it (the signature's `-> ()` is left out).
        let frames = Array(lines[(start + 1)...].prefix { !$0.isEmpty })
        #expect(frames == ["  #0  libc.so.6+0x1000", "  #1  billing.recompute() Billing.swift:42", "  #2  billing+0x1020"])
    }

    @Test func noCutLineIsWiderThanTheTerminal() {
        var report = ReportFixtures.report(frames: 12)
        report.labels = ["tenant": String(repeating: "a", count: 200)]
        let lines = Self.render(report, width: 60)
        // Only the path (to copy) is kept whole.
        let cut = lines.filter { !$0.hasPrefix("file ") }
        #expect(cut.allSatisfy { $0.count <= 60 }, "\(cut.filter { $0.count > 60 })")
        #expect(lines.contains { $0.hasPrefix("labels    tenant=aaa") && $0.hasSuffix("…") }, "\(lines)")
    }

    @Test(arguments: [
        (source: "dispatch-main", edges: "sampled", expected: "edges     sampled: start from looks 50ms apart (to 25ms), end at a ping's answer"),
        (source: "pool-job", edges: "sampled", expected: "edges     sampled: each edge to 25ms (looks 50ms apart), or by CPU time"),
        (source: "dispatch-queue", edges: "ping", expected: "edges     ping: a lower bound (from when an overdue ping was sent)"),
        (source: "runloop", edges: "exact", expected: "edges     exact: where the work began and ended"),
    ])
    func theEdgesLineSaysHowTheStartAndEndWereFound(_ row: (source: String, edges: String, expected: String)) {
        var report = ReportFixtures.report()
        report.source = row.source
        report.edges = row.edges
        #expect(Self.render(report, width: 200).contains(row.expected))
    }

    @Test func colourIsOnlyOnATerminalThatHasIt() {
        #expect(!Self.render(ReportFixtures.report()).joined().contains("\u{1b}["))
        #expect(Self.render(ReportFixtures.report(), colors: true).first == "\u{1b}[1mhang 20261122T010203123Z-billing-42-1\u{1b}[0m")
    }

    // MARK: I/O waits

    @Test func aSocketWaitNamesBothAddressesAndTheProcessAtTheOtherEnd() {
        var report = ReportFixtures.report()
        var endpoint = HangReport.Endpoint(descriptor: 24, type: "tcp")
        endpoint.local = "10.0.0.2:50010"
        endpoint.remote = "10.0.0.9:5432"
        endpoint.state = "ESTABLISHED"
        endpoint.sendQueue = 0
        endpoint.receiveQueue = 0
        let holder = HangReport.Holder(pid: 812, name: "postgres", state: "S", syscall: "epoll_wait", verdict: "blocked", stackError: "another process: its stack is not read")
        endpoint.peers = [holder]
        report.waitsFor = HangReport.WaitsFor(kind: "socket", syscall: "read", owner: "held", holder: holder, endpoints: [endpoint])
        let lines = Self.render(report, width: 200)
        #expect(
            lines.contains("waits for a tcp socket 10.0.0.2:50010 → 10.0.0.9:5432 (ESTABLISHED) whose other end is held by process 812 \"postgres\" (blocked in epoll_wait)"),
            "\(lines)")
    }

    /// A holder that computes: its stack, and how many of the looks at it could not take it.
    @Test func aComputingHoldersStackSaysTheLooksThatMissedIt() {
        var report = ReportFixtures.report()
        let holder = HangReport.Holder(tid: 4715, name: "eval-ledger", state: "R", verdict: "computing", stack: 0, looks: 25, looksWithoutStack: 2)
        report.waitsFor = HangReport.WaitsFor(kind: "mutex", syscall: "futex", owner: "held", holder: holder)
        let lines = Self.render(report, width: 200)
        #expect(lines.contains { $0.contains("held by thread 4715 \"eval-ledger\" (computing)") }, "\(lines)")
        #expect(lines.contains("  thread 4715's stack (not taken at 2 of 25 looks)"), "\(lines)")
        var missed = holder
        missed.stack = nil
        missed.stackError = "timeout: the monitored thread did not answer the capture signal in time"
        report.waitsFor?.holder = missed
        #expect(
            Self.render(report, width: 200).contains(
                "  thread 4715: no stack (timeout: the monitored thread did not answer the capture signal in time; not taken at 2 of 25 looks)"),
            "\(Self.render(report, width: 200))")
    }

    @Test func aPollListsEachDescriptorAndASleepItsTime() {
        var report = ReportFixtures.report()
        var pipe = HangReport.Endpoint(descriptor: 7, type: "pipe")
        pipe.events = "in"
        pipe.peers = [HangReport.Holder(pid: 90, name: "worker", state: "R", verdict: "computing")]
        var file = HangReport.Endpoint(descriptor: 9, type: "file")
        file.events = "in"
        file.path = "/mnt/share/ledger.db"
        file.filesystem = "nfs4"
        file.device = "0:52"
        file.mountPoint = "/mnt/share"
        file.peerNote = "a file has no other end: the file system must finish the call"
        report.waitsFor = HangReport.WaitsFor(
            kind: "poll", syscall: "ppoll", owner: "unknown", reason: "a wait on 20 descriptors: each is named in endpoints",
            endpoints: [pipe, file], descriptors: 20)
        let lines = Self.render(report, width: 200)
        #expect(lines.contains("waits for 20 descriptors (ppoll) (owner unknown: a wait on 20 descriptors: each is named in endpoints)"), "\(lines)")
        #expect(lines.contains("  fd 7 (in): a pipe (fd 7) held by process 90 \"worker\" (computing)"), "\(lines)")
        #expect(
            lines.contains("  fd 9 (in): a file /mnt/share/ledger.db on nfs4 0:52, mounted at /mnt/share (a file has no other end: the file system must finish the call)"),
            "\(lines)")
        #expect(lines.contains("  … 18 more descriptors"), "\(lines)")

        report.waitsFor = HangReport.WaitsFor(
            kind: "sleep", syscall: "clock_nanosleep", owner: "none", reason: "a sleep has no owner: it ends when its time is up",
            sleep: HangReport.Sleep(clock: "monotonic", absolute: false, requestedMs: 2000, leftMs: 750))
        #expect(
            Self.render(report, width: 200).contains(
                "waits for a sleep of 2.0s (monotonic), at most 750ms left (no owner: a sleep has no owner: it ends when its time is up)"),
            "\(Self.render(report, width: 200))")
    }

    /// What held the thread back from outside its code: the limit and the throttled time under
    /// the verdict, in the words of the issue that asked for it.
    @Test func aThrottledHangNamesTheLimitWhereItIsAndHowLongItHeldTheThreadBack() {
        var report = ReportFixtures.report()
        report.durationMs = 800
        report.context.verdict = .throttled
        report.context.cpuCount = 1
        report.context.hostCpuCount = 8
        report.context.cpuLimit = HangReport.CPULimit(cores: 0.2, source: "cgroup v1 cpu.cfs_quota_us", path: "/sys/fs/cgroup/cpu/billing")
        report.context.throttledMs = 640
        report.context.cgroupThrottledMs = 812
        report.context.throttledPeriods = 8
        report.context.countersFromMs = 3
        let lines = Self.render(report, width: 200)
        #expect(lines.contains("verdict   throttled: its cgroup's CPU limit (0.2 CPU, cgroup v1 /sys/fs/cgroup/cpu/billing) held it back 640 ms of the 800 ms"), "\(lines)")
        #expect(lines.contains("cpu       limit 0.2 CPU (cgroup v1 cpu.cfs_quota_us, /sys/fs/cgroup/cpu/billing); throttled 640ms in 8 periods (the cgroup's counter, over all its CPUs: 812ms) (counted from 3ms into the hang)"), "\(lines)")
        #expect(lines.contains { $0.hasPrefix("context") && $0.contains("(1 CPU of the host's 8)") }, "\(lines)")
        // Starved, with the counter read: the 0 says no limit held it.
        report.context.verdict = .starved
        report.context.cpuLimit = nil
        report.context.throttledMs = 0
        report.context.cgroupThrottledMs = 0
        report.context.throttledPeriods = 0
        report.context.countersFromMs = nil
        #expect(Self.render(report, width: 200).contains("cpu       no limit visible; throttled 0ms in 0 periods"))
        // A report before 1.6 has no such line.
        #expect(!Self.render(ReportFixtures.report()).contains { $0.hasPrefix("cpu ") || $0.hasPrefix("stopped") || $0.hasPrefix("memory") })
    }

    @Test func aStoppedHangSaysByWhatForHowLongAndTheEvidenceWhole() {
        var report = ReportFixtures.report()
        report.context.verdict = .stopped
        report.context.processStopped = true
        report.context.stoppedMs = 2004
        report.context.busyMs = 812
        report.context.stoppedBy = "cgroup freezer"
        report.context.stopEvidence = "inferred: the process is in the v1 freezer cgroup /sys/fs/cgroup/freezer/docker/abc, and neither a SIGCONT nor a tracer was seen (a debugger that detached would look the same); stopped time: the span less the thread's own runnable time (it computed)"
        let lines = Self.render(report, width: 80)
        #expect(lines.contains("verdict   process stopped by the cgroup freezer for 2004 ms, busy 812 ms"), "\(lines)")
        #expect(lines.contains("stopped   2.0s by the cgroup freezer, busy 812ms"), "\(lines)")
        // The evidence is not cut to the terminal's width.
        #expect(lines.contains("evidence  " + report.context.stopEvidence!), "\(lines)")
        report.context.stoppedBy = "SIGSTOP"
        report.context.stopEvidence = nil
        #expect(Self.render(report).contains("stopped   2.0s by SIGSTOP, busy 812ms"))
        report.context.stoppedBy = nil
        #expect(Self.render(report).contains("stopped   2.0s, cause unknown, busy 812ms"))
    }

    @Test func aPagingHangCountsItsFaultsAndTheStall() {
        var report = ReportFixtures.report()
        report.context.verdict = .paging
        report.context.majorFaults = 8192
        report.context.memoryStallMs = 598.9
        report.context.memoryPressureSource = "cgroup v2 /sys/fs/cgroup/billing"
        let lines = Self.render(report, width: 200)
        #expect(lines.contains("verdict   paging: waited for pages to be read in (8192 major page faults, stalled on memory 599 ms (cgroup v2 /sys/fs/cgroup/billing))"), "\(lines)")
        #expect(lines.contains("memory    8192 major page faults (pages read in from disk); stalled on memory 599ms (cgroup v2 /sys/fs/cgroup/billing)"), "\(lines)")
        report.context.verdict = .computing
        report.context.memoryPressureSource = "system"
        #expect(Self.render(report, width: 200).contains("memory    8192 major page faults (pages read in from disk); stalled on memory 599ms (the whole system's pressure)"))
    }
}

/// The `queued` line: a hang report's `queuedTasks` in one line.
@Suite struct QueuedLineTests {
    static func report(source: String, queued: HangReport.QueuedTasks) -> HangReport {
        var report = ReportFixtures.report()
        report.source = source
        for (offset, symbol) in ["waitForRestock()", "queuedOrder(_:)", "closure #1 in spawnQueuedOrders(count:)", "completeTaskWithClosure(_:_:)", "poll()"].enumerated() {
            report.frames.append(HangReport.Frame(address: "0x\(9000 + offset)", image: nil, offset: nil, functionOffset: nil, symbol: symbol))
        }
        report.queuedTasks = queued
        return report
    }

    static func fold(_ count: Int, entry: Int?, chain: [Int] = []) -> HangReport.TaskFold {
        HangReport.TaskFold(count: count, state: "enqueued", awaits: "pool thread", chain: chain, chainEnd: "complete", entry: entry, ids: Array(1...UInt64(count)))
    }

    @Test func aStarvedPoolSaysHowManyTasksWaitedAndWhereTheLargestFoldsStart() throws {
        let first = ReportFixtures.report().frames.count
        // The chain's first three functions; where it starts when it has none.
        let folds = [Self.fold(1300, entry: first + 3, chain: Array(first..<first + 4)), Self.fold(3, entry: first + 4), Self.fold(2, entry: nil, chain: [first + 4])]
        let queued = HangReport.QueuedTasks(count: 1306, folds: folds + [Self.fold(1, entry: first + 4)], tookMs: 33.8)
        let lines = ReportDetailTests.render(Self.report(source: "concurrency-pool", queued: queued), width: 200)
        #expect(
            lines.contains(
                "queued    1,306 tasks waiting for a pool thread: 1,300 in waitForRestock() ← queuedOrder(_:) ← closure #1 in spawnQueuedOrders(count:) ← … 1 more, "
                    + "3 in poll(), 2 in poll(), 1 elsewhere (read in 34ms)"),
            "\(lines)")
    }

    @Test func aMainQueueHangSaysHowManyWereQueuedBehindItOrWhyNone() throws {
        let first = ReportFixtures.report().frames.count
        var queued = HangReport.QueuedTasks(count: 4, folds: [Self.fold(4, entry: nil, chain: [first + 4])], stoppedEarly: "the scan stopped at its bound", tookMs: 2)
        var lines = ReportDetailTests.render(Self.report(source: "dispatch-main", queued: queued), width: 200)
        #expect(lines.contains("queued    4 or more tasks queued behind it on the main actor: 4 in poll() (read in 2ms)"), "\(lines)")
        queued = HangReport.QueuedTasks(unavailable: "task layout not recognised for Swift 6.4: no tasks listed")
        lines = ReportDetailTests.render(Self.report(source: "dispatch-main", queued: queued), width: 200)
        #expect(lines.contains("queued    tasks not counted: task layout not recognised for Swift 6.4: no tasks listed"), "\(lines)")
        #expect(!ReportDetailTests.render(ReportFixtures.report(), width: 200).contains { $0.hasPrefix("queued") })
    }
}

/// The `lead-up` and `kind` lines: a run-loop report's `before`, drawn, and its `kind`.
@Suite struct LeadUpLineTests {
    static func before(_ busy: [Double], ratio: Double, reading: String) -> HangReport.LeadUp {
        HangReport.LeadUp(
            windowMs: Double(busy.count * 100), bucketMs: 100,
            buckets: busy.map { HangReport.LeadUp.Bucket(busyMs: $0, stretches: 1, iterations: 1, longestMs: $0) },
            busyRatio: ratio, reading: reading)
    }

    @Test func eachBucketIsABlockFromIdleToBusy() {
        let before = Self.before([0, 10, 30, 55, 70, 99, 100, 100], ratio: 0.58, reading: "busy 92 % for 0.3 s before onset")
        #expect(ReportDetail.leadUpBlocks(before) == "▁▁▃▅▆███")
        #expect(ReportDetail.leadUpLine(before) == "0.8 s: ▁▁▃▅▆███  busy 58 %")
    }

    /// Under the blocks, block for block, the share of each bucket the thread waited for a CPU,
    /// `·` where nothing was read; no line without CPU figures.
    @Test func theWaitLineDrawsEachBucketsWaitUnderItsBlock() {
        var before = Self.before([0, 50, 100, 100, 100, 100, 100, 90], ratio: 0.8, reading: "busy 80 % for 0.6 s before onset")
        #expect(ReportDetail.leadUpWaitLine(before) == nil)
        let waits: [Double?] = [nil, 0, 10, 40, 70, 70, 99, 50]
        for (index, wait) in waits.enumerated() {
            before.buckets[index].cpu = wait.map { HangReport.LeadUp.CPU(coveredMs: 100, onCpuMs: 100 - $0, runQueueMs: $0, throttledMs: $0) }
        }
        before.cpu = HangReport.LeadUp.CPU(coveredMs: 700, onCpuMs: 361, runQueueMs: 339, throttledMs: 339)
        let line = ReportDetail.leadUpWaitLine(before)
        #expect(line == "cpu  : ·▁▁▄▆▆█▅  on a CPU 361ms, waiting 339ms (throttled 339ms)", "\(line ?? "nil")")
        // Block for block under the lead-up line.
        let lead = ReportDetail.leadUpLine(before)
        #expect(line?.firstIndex(of: ":").map { line!.distance(from: line!.startIndex, to: $0) } == lead.firstIndex(of: ":").map { lead.distance(from: lead.startIndex, to: $0) })
        before.cpu?.throttledMs = nil
        #expect(ReportDetail.leadUpWaitLine(before)?.hasSuffix("on a CPU 361ms, waiting 339ms") == true)
    }

    @Test func aWindowOfMoreThanFiftyBucketsIsGroupedToFit() {
        // 100 buckets: two a block, 50 blocks; the last ten buckets busy.
        let before = Self.before(Array(repeating: 0, count: 90) + Array(repeating: 100, count: 10), ratio: 0.1, reading: "")
        let blocks = ReportDetail.leadUpBlocks(before)
        #expect(blocks.count == 50)
        #expect(blocks == String(repeating: "▁", count: 45) + String(repeating: "█", count: 5))
        #expect(ReportDetail.leadUpLine(before).hasPrefix("10 s: ▁▁▁"))
        #expect(ReportDetail.leadUpLine(before).hasSuffix("█  busy 10 %"))
        #expect(ReportDetail.leadUpGroup(before) == 2)
    }

    @Test func showDrawsTheLeadUpAndNamesTheKind() {
        var report = ReportFixtures.report()
        #expect(!ReportDetailTests.render(report, width: 200).contains { $0.hasPrefix("lead-up") || $0.hasPrefix("kind") })
        report.before = Self.before(Array(repeating: 0.5, count: 50), ratio: 0.005, reading: "idle before onset (busy 1 %)")
        report.kind = HangReport.Kind(name: .unknown, reason: "one piece past the threshold from the loop's wake", iterationsBefore: 0, busyBeforeMs: 0)
        let lines = ReportDetailTests.render(report, width: 200)
        #expect(lines.contains("lead-up   5 s: \(String(repeating: "▁", count: 50))  busy 1 %"), "\(lines)")
        #expect(lines.contains("          idle before onset (busy 1 %) (a block per 100ms)"), "\(lines)")
        // Within 80 columns, as the README's sample is.
        #expect(ReportDetailTests.render(report, width: 80).contains { $0.hasPrefix("lead-up") && !$0.contains("…") })
        #expect(lines.contains("kind      unknown: one piece past the threshold from the loop's wake"), "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("near miss") }, "no near misses, no line")
    }

    @Test func showSaysHowManyNearMissesCameHowLateAndHowLong() {
        var report = ReportFixtures.report()
        var before = Self.before(Array(repeating: 90, count: 50), ratio: 0.9, reading: "busy 90 % for 5 s before onset, 2 near misses in `f`")
        before.nearMisses = [
            HangReport.LeadUp.NearMiss(offsetMs: -1_500, atLeastMs: 131, stack: nil, error: "endedDuringCapture"),
            HangReport.LeadUp.NearMiss(offsetMs: -420, atLeastMs: 104, stack: nil, error: "endedDuringCapture"),
        ]
        report.before = before
        let lines = ReportDetailTests.render(report, width: 200)
        #expect(
            lines.contains("near miss 2, the last 420ms before onset, each ran at least 104ms (flamegraph --near-misses draws their stacks)"),
            "\(lines)")
    }
}
