import Foundation
@_spi(Internal) import HangWatchReport
import HangWatchTestSupport
import Logging
import Testing

@testable import HangWatchAgent

/// Passes over a real spool with scripted processes, time and exporters: indexing, retention,
/// hostile entries, an unsafe root, the status line and the gauges.
@Suite struct SpoolKeeperTests {
    @Test func hangsAlreadyInTheSpoolAtStartAreNotCountedNewOnesAreOnce() throws {
        let harness = try KeeperHarness { $0.enrich = false }
        for sequence in 1...3 { try harness.fixture.write(SpoolFixture.report(service: "old", sequence: sequence), service: "old") }
        harness.run(.full)
        #expect(harness.counter.hangs.isEmpty)
        #expect(harness.counter.lastGauges?.reports == 3)
        for sequence in 1...2 { try harness.fixture.write(SpoolFixture.report(service: "billing", sequence: sequence), service: "billing") }
        harness.run(.services(["billing"]))
        #expect(harness.counter.hangs.map(\.service) == ["billing", "billing"])
        #expect(harness.records.hangs.count == 2, "nothing to wait for: naming is off")
        // Seen once: later passes count nothing again.
        harness.run(.full)
        harness.run(.liveness)
        #expect(harness.counter.hangs.count == 2)
        let gauges = try #require(harness.counter.lastGauges)
        #expect(gauges.reports == 5)
        #expect(gauges.services == ["billing", "old"])
        #expect(gauges.bytes == harness.state.totalBytes && gauges.bytes > 0)
        #expect(harness.notifier.statuses.last?.hasPrefix("2 services, 5 reports (0.0 MiB), last hang ") == true, "\(harness.notifier.statuses)")
    }

    @Test func aMonitorThatFoldsRepeatsIntoItsReportCountsOnlyTheNewOnes() throws {
        let harness = try KeeperHarness { $0.enrich = false }
        harness.run(.full)
        var report = SpoolFixture.report(service: "billing", sequence: 1)
        try harness.fixture.write(report, service: "billing")
        harness.run(.full)
        report.repeats = HangReport.Repeats(count: 2, lastAt: Date(), totalDurationMs: 1200, maxDurationMs: 700)
        try harness.fixture.write(report, service: "billing")
        harness.run(.full)
        #expect(harness.counter.hangs.map(\.count) == [1, 2])
    }

    @Test func eachServiceKeepsItsNewestAndForeignFilesStay() throws {
        let harness = try KeeperHarness { $0.maxReportsPerService = 4 }
        let now = harness.clock.now
        for service in ["billing", "cart", "search"] {
            for sequence in 1...6 {
                try harness.fixture.write(
                    SpoolFixture.report(service: service, sequence: sequence, start: now.addingTimeInterval(-Double(sequence) * 60)), service: service)
            }
        }
        try harness.fixture.write("keep me", to: "billing/README.txt")
        try harness.fixture.write("secret", to: "outside.txt")
        try FileManager.default.createSymbolicLink(
            atPath: harness.fixture.path("cart/hang-20000101T000000000Z-cart-1-1.json"), withDestinationPath: harness.fixture.path("outside.txt"))
        harness.run(.full)
        for service in ["billing", "cart", "search"] {
            let names = try ReportStore(directory: harness.fixture.path(service)).list().map { ($0.path as NSString).lastPathComponent }
            // The newest four: sequences 1 to 4.
            #expect(names.sorted() == (1...4).map { ReportStore.fileName(forID: SpoolFixture.report(service: service, sequence: $0, start: now.addingTimeInterval(-Double($0) * 60)).id) }.sorted(), "\(service)")
        }
        #expect(harness.fixture.exists("billing/README.txt"))
        #expect(harness.fixture.exists("cart/hang-20000101T000000000Z-cart-1-1.json"))
        #expect(try String(contentsOfFile: harness.fixture.path("outside.txt"), encoding: .utf8) == "secret")
        let deleted = harness.log.entries("report deleted")
        #expect(deleted.count == 6)
        #expect(deleted.allSatisfy { $0["hangwatch.reason"] == "over the per-service count" && $0.level == .info })
        #expect(harness.counter.drops == [.retention: 6])
        #expect(harness.state.deletedReports == 6)
    }

    @Test func theSpoolIsKeptWithinItsSizeAcrossServicesOldestFirst() throws {
        let harness = try KeeperHarness { $0.maxUse = 1 << 20 }
        let now = harness.clock.now
        var files: [Spool.File] = []
        for (index, service) in ["a", "b", "a", "b"].enumerated() {
            var report = SpoolFixture.report(service: service, sequence: index, start: now.addingTimeInterval(-Double(4 - index) * 60))
            report.mode = String(repeating: "x", count: 400_000)
            files.append(try harness.fixture.write(report, service: service))
        }
        harness.run(.full)
        // 4 × ~400 kB in 1 MiB: the two oldest go, whichever service they are in.
        #expect(harness.log.entries("report deleted").compactMap { $0["hangwatch.path"] } == files.prefix(2).map { harness.spool.path(of: $0) })
        #expect(harness.log.entries("report deleted").allSatisfy { $0["hangwatch.reason"] == "over the spool's maximum use" })
    }

    @Test func entriesThatAreNotPlainReportsAreLeftAloneAndLoggedOncePerEntry() throws {
        let harness = try KeeperHarness { $0.maxAge = .seconds(86_400) }
        let longAgo = Date(timeIntervalSince1970: 946_684_800)
        let old = try SpoolFixture.report(service: "billing", sequence: 0, start: longAgo).encoded()
        func name(_ sequence: Int) -> String { "hang-20000101T000000000Z-billing-1-\(sequence).json" }
        try harness.fixture.write("", to: "billing/.keep")
        let billing = harness.fixture.path("billing/")
        try Data(old).write(to: URL(fileURLWithPath: harness.fixture.path("outside.json")))
        var hostile: [String: String] = [:]
        try FileManager.default.createSymbolicLink(atPath: billing + name(1), withDestinationPath: harness.fixture.path("outside.json"))
        hostile[name(1)] = "a symlink"
        #expect(link(harness.fixture.path("outside.json"), billing + name(2)) == 0)
        hostile[name(2)] = "a hard link (2 names for one file)"
        #expect(mkfifo(billing + name(3), 0o640) == 0)
        hostile[name(3)] = "a FIFO"
        #expect(mknod(billing + name(4), S_IFSOCK | 0o640, 0) == 0)
        hostile[name(4)] = "a socket"
        #expect(FileManager.default.createFile(atPath: billing + name(6), contents: old))
        #expect(chown(billing + name(6), 12345, 12345) == 0)
        hostile[name(6)] = "owned by uid 12345, not by its directory's owner (uid \(geteuid()))"
        #expect(FileManager.default.createFile(atPath: billing + name(7), contents: old))
        #expect(chmod(billing + name(7), 0o666) == 0)
        hostile[name(7)] = "writable by everyone"
        // Not a name a monitor writes: ignored without a word.
        let dotted = "hang-20000101T000000000Z-..-1-8.json"
        #expect(FileManager.default.createFile(atPath: billing + dotted, contents: old))
        // A world-writable service directory with an old report in it.
        try harness.fixture.write(String(decoding: old, as: UTF8.self), to: "open/" + name(10))
        #expect(chmod(harness.fixture.path("open"), 0o777) == 0)
        // And one plain old report, which retention does delete.
        let plain = try harness.fixture.write(try SpoolFixture.report(service: "billing", sequence: 11, start: longAgo), service: "billing")
        let before = Dictionary(uniqueKeysWithValues: (Array(hostile.keys) + [dotted]).map { ($0, harness.identity("billing/" + $0)) })

        harness.run(.full)
        let leftAlone = harness.log.entries("spool entry left alone")
        for (entry, reason) in hostile {
            let lines = leftAlone.filter { $0["hangwatch.path"] == billing + entry }
            #expect(lines.count == 1, "\(entry)")
            #expect(lines.first?["hangwatch.reason"] == reason, "\(entry)")
            #expect(lines.first?.level == .warning)
        }
        #expect(leftAlone.contains { $0["hangwatch.path"] == harness.fixture.path("open") && $0["hangwatch.reason"] == "a service directory writable by everyone" })
        #expect(!harness.log.all.contains { $0.metadata.values.contains { "\($0)".contains(dotted) } })
        #expect(harness.log.entries("report deleted").map { $0["hangwatch.path"] } == [harness.spool.path(of: plain)])
        for (entry, identity) in before {
            let now = harness.identity("billing/" + entry)
            #expect(now?.inode == identity?.inode && now?.size == identity?.size && now?.modified == identity?.modified, "\(entry)")
        }
        #expect(harness.fixture.exists("open/" + name(10)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: harness.fixture.path("outside.json"))) == old)
        // The world-writable directory is no service; the plain report is gone.
        #expect(harness.notifier.statuses.last == "1 service, 0 reports (0.0 MiB), last hang billing 2000-01-01T00:00:00.000Z", "\(harness.notifier.statuses)")

        // Further passes log nothing new: one line per entry, not one per pass.
        let logged = leftAlone.count
        harness.run(.full)
        harness.run(.services(["billing"]))
        #expect(harness.log.count("spool entry left alone") == logged)
    }

    @Test func anUnreadableReportIsLoggedAndCountedOncePerEpisode() throws {
        let harness = try KeeperHarness { $0.enrich = false }
        let name = "billing/hang-20260101T000000000Z-billing-1-1.json"
        try harness.fixture.write("{ not a report", to: name)
        harness.run(.full)
        harness.run(.full)
        let lines = harness.log.entries("unreadable report left alone")
        #expect(lines.count == 1)
        #expect(lines.first?["hangwatch.path"] == harness.fixture.path(name))
        #expect(lines.first?["hangwatch.error"]?.isEmpty == false)
        #expect(harness.counter.drops == [.unreadable: 1])
        // Changed but still unreadable: the same episode.
        try harness.fixture.write("{ still not a report }", to: name)
        harness.run(.full)
        #expect(harness.log.count("unreadable report left alone") == 1)
        // Readable, then broken again: a new episode.
        var report = SpoolFixture.report(service: "billing", sequence: 1)
        report.id = "20260101T000000000Z-billing-1-1"
        try harness.fixture.write(report, service: "billing")
        harness.run(.full)
        #expect(harness.state.reports.count == 1)
        try harness.fixture.write("{ broken again", to: name)
        harness.run(.full)
        #expect(harness.state.reports.isEmpty)
        #expect(harness.log.count("unreadable report left alone") == 2)
        #expect(harness.counter.drops == [.unreadable: 2])
    }

    @Test func aRootSwappedForASymlinkIsNotWorkedThroughUntilItIsBack() throws {
        let harness = try KeeperHarness { $0.maxAge = .seconds(86_400) }
        let root = harness.fixture.root
        let longAgo = Date(timeIntervalSince1970: 946_684_800)
        try harness.fixture.write(SpoolFixture.report(service: "billing", sequence: 1), service: "billing")
        harness.run(.full)
        // Elsewhere: an old report retention would delete, and a provisional one of a dead process.
        let elsewhere = try SpoolFixture()
        let oldFile = try elsewhere.write(SpoolFixture.report(service: "billing", sequence: 2, start: longAgo), service: "billing")
        let provisional = try elsewhere.write(SpoolFixture.report(service: "billing", sequence: 3, pid: 999_999, outcome: .ongoing), service: "billing")
        let before = try [oldFile, provisional].map { try Data(contentsOf: URL(fileURLWithPath: elsewhere.spool.path(of: $0))) }
        #expect(rename(root, root + ".moved") == 0)
        try FileManager.default.createSymbolicLink(atPath: root, withDestinationPath: elsewhere.root)
        defer {
            unlink(root)
            rename(root + ".moved", root)
        }
        for pass in [SpoolPass.full, .liveness, .services(["billing"]), .full] { harness.run(pass) }
        #expect(harness.log.count("the spool root is unsafe; leaving it alone until it is restored") == 1)
        #expect(harness.log.entries("the spool root is unsafe; leaving it alone until it is restored").first?["hangwatch.error"]?.contains("it is a symlink") == true)
        let unsafe = harness.notifier.statuses.filter { $0.hasPrefix("spool unsafe, nothing done: ") }
        #expect(unsafe.count == 1 && unsafe.first?.contains("it is a symlink") == true, "\(harness.notifier.statuses)")
        #expect(harness.notifier.statuses.last == unsafe.first)
        #expect(try [oldFile, provisional].map { try Data(contentsOf: URL(fileURLWithPath: elsewhere.spool.path(of: $0))) } == before)
        #expect(harness.log.count("report deleted") == 0 && harness.log.count("fatal hang: the process exited during a hang") == 0)
        #expect(harness.processes.looked.isEmpty, "no process was looked up through it")

        // Put back: the agent carries on with its own spool.
        #expect(unlink(root) == 0)
        #expect(rename(root + ".moved", root) == 0)
        harness.run(.full)
        #expect(harness.log.count("the spool root is safe again") == 1)
        #expect(harness.notifier.statuses.last?.hasPrefix("1 service, 1 report ") == true, "\(harness.notifier.statuses)")
        #expect(try [oldFile, provisional].map { try Data(contentsOf: URL(fileURLWithPath: elsewhere.spool.path(of: $0))) } == before)
    }

    @Test func theStatusLineIsSentWhenItChangesOnly() throws {
        let harness = try KeeperHarness { $0.enrich = false }
        harness.run(.full)
        harness.run(.liveness)
        harness.run(.full)
        #expect(harness.notifier.statuses == ["0 services, 0 reports (0.0 MiB)"])
        try harness.fixture.write(SpoolFixture.report(service: "", sequence: 1), service: "")
        harness.run(.full)
        #expect(harness.notifier.statuses.count == 2)
        #expect(harness.notifier.statuses.last?.hasPrefix("0 services, 1 report (0.0 MiB), last hang root ") == true, "\(harness.notifier.statuses)")
        #expect(harness.counter.publishCount == 4, "the exporters hear after every pass")
    }

    @Test func leftoversOfCrashedWritersGoAfterAnHour() throws {
        let harness = try KeeperHarness()
        let name = "billing/.hang-20260101T000000000Z-billing-1-1.json.5.0.tmp"
        try harness.fixture.write("half a report", to: name)
        let written = Date()
        harness.run(.full)
        // From the write's time, not the harness's: on a busy machine seconds can pass in between.
        harness.clock.advance(past: written, by: .seconds(3599))
        harness.run(.full)
        #expect(harness.fixture.exists(name))
        harness.clock.advance(by: .seconds(2))
        harness.run(.full)
        #expect(!harness.fixture.exists(name))
    }

    @Test func aStoppingAgentStartsNoPass() throws {
        let fixture = try SpoolFixture()
        try fixture.write(SpoolFixture.report(service: "billing", sequence: 1), service: "billing")
        let notifier = RecordingNotifier()
        let counter = RecordingExporter()
        let keeper = SpoolKeeper(
            spool: fixture.spool, symbolicator: .init(), exports: ExportHub([counter]), notifier: notifier, clock: ManualClock(),
            processes: ScriptedProcesses(), logger: LogRecorder().logger, isStopping: { true })
        var configuration = AgentConfiguration()
        configuration.reportRoot = fixture.root
        keeper.run(.full, configuration: configuration)
        #expect(notifier.messages.isEmpty && counter.publishCount == 0 && keeper.state.reports.isEmpty)
    }
}

/// Naming in a pass: frames get names from the files they point into, a report whose image is not
/// the file on disk says so instead, and a named report is never rewritten by later passes.
@Suite struct SpoolKeeperNamingTests {
    @Test func reportsAreNamedOnceAndAMismatchedBuildIsRecordedNotNamed() throws {
        let harness = try KeeperHarness { $0.enrichDelay = .zero }
        // A first pass over the empty spool: what comes after is new.
        harness.run(.full)
        let good = try LibcFrames.rewrite(SpoolFixture.report(service: "billing", sequence: 1))
        let other = try LibcFrames.rewrite(SpoolFixture.report(service: "billing", sequence: 2), buildID: String(repeating: "ab", count: 20))
        let goodFile = try harness.fixture.write(good, service: "billing")
        let otherFile = try harness.fixture.write(other, service: "billing")
        // The pass comes after the writes. The harness's clock began before them, and on a busy
        // machine the first pass can take more than a second of real time: moved on by a fixed
        // second, the clock then read earlier than the files' times, and the pass found nothing
        // due (no names, no error: the flake that once kept this suite out of the parallel run).
        harness.clock.advance(past: Date())
        harness.run(.full)

        let named = try harness.read(goodFile)
        let record = try #require(named.symbolication, "not named in the pass")
        #expect(record.by == "hangwatchd")
        #expect(named.frames.first?.symbol?.contains("getppid") == true, "\(named.frames.map(\.symbol)) \(record)")
        #expect(named.frames.last?.symbol?.contains("getpid") == true)
        let refused = try #require(try harness.read(otherFile).symbolication)
        #expect(refused.problems.contains { $0.contains("does not match the report's \(String(repeating: "ab", count: 20))") }, "\(refused.problems)")
        #expect(try harness.read(otherFile).frames.allSatisfy { $0.symbol == nil })
        #expect(harness.records.hangs.count == 2, "both handed on once their naming is settled")

        // Later passes, later in time: neither file is touched again.
        let before = [goodFile, otherFile].map { harness.identity("billing/" + $0.name) }
        for _ in 0..<3 {
            harness.clock.advance(by: .seconds(30))
            harness.run(.full)
        }
        let after = [goodFile, otherFile].map { harness.identity("billing/" + $0.name) }
        #expect(zip(before, after).allSatisfy { $0?.inode == $1?.inode && $0?.modified == $1?.modified && $0?.size == $1?.size })
        #expect(harness.records.hangs.count == 2)
    }
}

/// Hangs a monitor's rate limit dropped reach the metrics through its heartbeat.
@Suite struct SpoolKeeperRateLimitTests {
    @Test func droppedHangsAreCountedOnceFromTheHeartbeat() throws {
        let harness = try KeeperHarness()
        let pid: Int32 = 4343
        harness.processes[pid] = ProcStat(state: "S", startTimeTicks: 9)
        func beat(suppressed: UInt64) throws {
            let heartbeat = MonitorHeartbeat(
                pid: pid, startTimeTicks: 9, startedUnixMilliseconds: 0, tickMonotonicNanoseconds: harness.clock.monotonicNanoseconds,
                tickUnixMilliseconds: 0, intervalMilliseconds: 10_000, state: .idle, activityWord: 0, hangsDetected: 50,
                thresholdMicroseconds: 250_000, hangsSuppressed: suppressed)
            try Data(heartbeat.encoded()).write(to: URL(fileURLWithPath: harness.fixture.path("billing/" + MonitorHeartbeat.fileName(pid: pid))))
        }
        try FileManager.default.createDirectory(atPath: harness.fixture.path("billing"), withIntermediateDirectories: true)
        try beat(suppressed: 3)
        harness.run(.full)
        #expect(harness.counter.drops[.rateLimit] == 3)
        harness.run(.liveness)
        #expect(harness.counter.drops[.rateLimit] == 3, "nothing new: nothing counted")
        try beat(suppressed: 7)
        harness.run(.liveness)
        #expect(harness.counter.drops[.rateLimit] == 7)
        // A new monitor under the same name starts from zero again.
        try beat(suppressed: 2)
        harness.run(.liveness)
        #expect(harness.counter.drops[.rateLimit] == 9)
    }
}

/// What a whole process publishes (its pool watch's probes, the calls its captures cut short)
/// reaches the metrics once, however many of its monitors publish it and whichever runs the pool
/// watch.
@Suite struct SpoolKeeperProcessTotalsTests {
    let harness: KeeperHarness
    let pid: Int32 = 5151

    init() throws {
        harness = try KeeperHarness()
        harness.processes[pid] = ProcStat(state: "S", startTimeTicks: 9)
        for service in ["api", "jobs"] {
            try FileManager.default.createDirectory(atPath: harness.fixture.path(service), withIntermediateDirectories: true)
        }
    }

    /// Writes the heartbeat of this process's monitor in `service`.
    func beat(_ service: String, cutShort: UInt64, pool: (probes: UInt64, starvations: UInt64)? = nil, startTimeTicks: UInt64 = 9) throws {
        let delays = pool.map { LoopBusyHistogram.Counts(buckets: [$0.probes] + Array(repeating: 0, count: LoopBusyHistogram.bucketCount - 1), totalNanoseconds: 10 * $0.probes) }
        let heartbeat = MonitorHeartbeat(
            pid: pid, startTimeTicks: startTimeTicks, startedUnixMilliseconds: 0, tickMonotonicNanoseconds: harness.clock.monotonicNanoseconds,
            tickUnixMilliseconds: 0, intervalMilliseconds: 10_000, state: .idle, activityWord: 0, hangsDetected: 0,
            thresholdMicroseconds: 250_000, poolStartDelay: delays, poolStarvations: pool?.starvations ?? 0, callsCutShort: cutShort)
        try Data(heartbeat.encoded()).write(to: URL(fileURLWithPath: path(service)))
    }

    func path(_ service: String) -> String { harness.fixture.path(service + "/" + MonitorHeartbeat.fileName(pid: pid)) }

    var gauges: SpoolGauges { harness.counter.lastGauges ?? SpoolGauges() }

    @Test func twoMonitorsOfOneProcessCountItsCutShortCallsOnce() throws {
        try beat("api", cutShort: 5)
        try beat("jobs", cutShort: 5)
        harness.run(.full)
        #expect(gauges.callsCutShort.values.reduce(0, +) == 5, "\(gauges.callsCutShort)")
        #expect(Set(gauges.callsCutShort.keys) == ["api", "jobs"], "both services' series exist")
        // One page ticked after three more, the other not yet; then both show them.
        try beat("jobs", cutShort: 8)
        harness.run(.liveness)
        try beat("api", cutShort: 8)
        harness.run(.liveness)
        #expect(gauges.callsCutShort.values.reduce(0, +) == 8, "\(gauges.callsCutShort)")
        // A new process under the same pid counts from its own zero.
        try beat("api", cutShort: 2, startTimeTicks: 77)
        harness.processes[pid] = ProcStat(state: "S", startTimeTicks: 77)
        harness.run(.liveness)
        #expect(gauges.callsCutShort.values.reduce(0, +) == 10, "\(gauges.callsCutShort)")
    }

    @Test func aPoolWatchThatMovesToAnotherMonitorIsNotCountedAgain() throws {
        try beat("api", cutShort: 0, pool: (probes: 40, starvations: 2))
        try beat("jobs", cutShort: 0)
        harness.run(.full)
        #expect(gauges.poolStarvations == ["api": 2])
        #expect(gauges.poolStartDelay["api"]?.iterations == 40)
        // The monitor in api stopped; the one in jobs runs the pool watch now, with the process's totals.
        try FileManager.default.removeItem(atPath: path("api"))
        try beat("jobs", cutShort: 0, pool: (probes: 44, starvations: 3))
        harness.run(.full)
        #expect(gauges.poolStarvations["api"] == 2 && gauges.poolStarvations["jobs"] == 1, "\(gauges.poolStarvations)")
        #expect(gauges.poolStartDelay["jobs"]?.iterations == 4, "\(gauges.poolStartDelay)")
    }

    @Test func aHeartbeatUnreadableForAPassIsNotCountedAgainAfterwards() throws {
        try beat("api", cutShort: 4, pool: (probes: 10, starvations: 1))
        harness.run(.full)
        try Data("not a heartbeat".utf8).write(to: URL(fileURLWithPath: path("api")))
        harness.run(.liveness)
        try beat("api", cutShort: 4, pool: (probes: 10, starvations: 1))
        harness.run(.liveness)
        #expect(gauges.callsCutShort == ["api": 4] && gauges.poolStarvations == ["api": 1], "\(gauges)")
        #expect(gauges.poolStartDelay["api"]?.iterations == 10)
    }
}

/// The lag histogram a run loop's flight recorder publishes in its heartbeat reaches the gauges
/// by service, each piece once: a monitor's running totals are differenced per heartbeat file,
/// and a new monitor under the same name counts from its own zero.
@Suite struct SpoolKeeperLoopLagTests {
    @Test func eachPieceIsCountedOnceFromTheHeartbeat() throws {
        let harness = try KeeperHarness()
        let pid: Int32 = 4545
        harness.processes[pid] = ProcStat(state: "S", startTimeTicks: 9)
        try FileManager.default.createDirectory(atPath: harness.fixture.path("billing"), withIntermediateDirectories: true)
        func beat(zero: UInt64, twentyMilliseconds: UInt64) throws {
            var buckets = [UInt64](repeating: 0, count: LoopBusyHistogram.bucketCount)
            buckets[0] = zero
            buckets[7] = twentyMilliseconds
            let heartbeat = MonitorHeartbeat(
                pid: pid, startTimeTicks: 9, startedUnixMilliseconds: 0, tickMonotonicNanoseconds: harness.clock.monotonicNanoseconds,
                tickUnixMilliseconds: 0, intervalMilliseconds: 10_000, state: .watching, activityWord: 0, hangsDetected: 0,
                thresholdMicroseconds: 250_000,
                loopLag: LoopBusyHistogram.Counts(buckets: buckets, totalNanoseconds: twentyMilliseconds * 20_000_000))
            try Data(heartbeat.encoded()).write(to: URL(fileURLWithPath: harness.fixture.path("billing/" + MonitorHeartbeat.fileName(pid: pid))))
        }
        var lag: LoopBusyHistogram.Counts? { harness.counter.lastGauges?.loopLag["billing"] }
        try beat(zero: 10, twentyMilliseconds: 4)
        harness.run(.full)
        #expect(lag?.buckets[0] == 10 && lag?.buckets[7] == 4, "\(String(describing: lag))")
        harness.run(.liveness)
        #expect(lag?.iterations == 14, "nothing new: nothing counted")
        try beat(zero: 15, twentyMilliseconds: 9)
        harness.run(.liveness)
        #expect(lag?.buckets[0] == 15 && lag?.buckets[7] == 9 && lag?.totalNanoseconds == 180_000_000, "\(String(describing: lag))")
        // A new monitor under the same name starts from zero again.
        try beat(zero: 1, twentyMilliseconds: 2)
        harness.run(.liveness)
        #expect(lag?.iterations == 27, "\(String(describing: lag))")
        #expect(harness.counter.lastGauges?.loopBusy["billing"] == nil, "a section of its own")
    }
}

/// The busy ratio a run loop's flight recorder publishes in its heartbeat reaches the gauges by
/// service: the busiest healthy monitor's, none from a page without it or a silent watchdog.
@Suite struct SpoolKeeperLoopBusyRatioTests {
    let harness: KeeperHarness

    init() throws {
        harness = try KeeperHarness()
        for service in ["api", "jobs", "quiet"] {
            try FileManager.default.createDirectory(atPath: harness.fixture.path(service), withIntermediateDirectories: true)
        }
    }

    func beat(_ service: String, pid: Int32, busyMilliseconds: UInt64?, tickedAt tick: UInt64? = nil) throws {
        harness.processes[pid] = ProcStat(state: "S", startTimeTicks: 9)
        let heartbeat = MonitorHeartbeat(
            pid: pid, startTimeTicks: 9, startedUnixMilliseconds: 0, tickMonotonicNanoseconds: tick ?? harness.clock.monotonicNanoseconds,
            tickUnixMilliseconds: 0, intervalMilliseconds: 10_000, state: .watching, activityWord: 0, hangsDetected: 0,
            thresholdMicroseconds: 250_000,
            loopBusyWindow: busyMilliseconds.map {
                MonitorHeartbeat.BusyWindow(windowNanoseconds: 5_000_000_000, busyNanoseconds: $0 * 1_000_000, longestNanoseconds: 150_000_000)
            })
        try Data(heartbeat.encoded()).write(to: URL(fileURLWithPath: harness.fixture.path(service + "/" + MonitorHeartbeat.fileName(pid: pid))))
    }

    var ratios: [String: Double] { harness.counter.lastGauges?.loopBusyRatio ?? [:] }

    @Test func theBusiestHealthyLoopOfEachServiceIsItsRatio() throws {
        try beat("api", pid: 7001, busyMilliseconds: 4_750)
        try beat("api", pid: 7002, busyMilliseconds: 1_000)
        try beat("jobs", pid: 7003, busyMilliseconds: 500)
        try beat("quiet", pid: 7004, busyMilliseconds: nil)
        harness.run(.full)
        #expect(ratios.count == 2, "\(ratios)")
        #expect(abs((ratios["api"] ?? 0) - 0.95) < 1e-9 && abs((ratios["jobs"] ?? 0) - 0.1) < 1e-9, "\(ratios)")
        // A page that stops being ticked is old news: its ratio goes.
        try beat("api", pid: 7001, busyMilliseconds: 4_750, tickedAt: 1)
        try beat("api", pid: 7002, busyMilliseconds: 1_000, tickedAt: 1)
        harness.clock.advance(by: .seconds(3_600))
        try beat("jobs", pid: 7003, busyMilliseconds: 500)
        harness.run(.liveness)
        #expect(ratios["api"] == nil && ratios["jobs"] != nil, "\(ratios)")
    }
}

/// The denominator of a hang rate: the time live monitors watched, per service and version, from
/// the heartbeats; kept across agent restarts in each service's `.monitored-time.json`.
@Suite struct SpoolKeeperMonitoredTimeTests {
    let harness: KeeperHarness
    let pid: Int32 = 6262

    init() throws {
        harness = try KeeperHarness()
        harness.processes[pid] = ProcStat(state: "S", startTimeTicks: 9)
        try FileManager.default.createDirectory(atPath: harness.fixture.path("billing"), withIntermediateDirectories: true)
    }

    /// The monitor's page as its watchdog just ticked (by `clock`: the harness's, or a restarted
    /// agent's).
    func beat(
        _ state: MonitorHeartbeat.State = .watching, version: String? = "1.1.0", startTimeTicks: UInt64 = 9, clock: ManualClock? = nil
    ) throws {
        let heartbeat = MonitorHeartbeat(
            pid: pid, startTimeTicks: startTimeTicks, startedUnixMilliseconds: 0,
            tickMonotonicNanoseconds: (clock ?? harness.clock).monotonicNanoseconds,
            tickUnixMilliseconds: 0, intervalMilliseconds: 10_000, state: state, activityWord: 0, hangsDetected: 0,
            thresholdMicroseconds: 250_000, serviceVersion: version)
        try Data(heartbeat.encoded()).write(to: URL(fileURLWithPath: harness.fixture.path("billing/" + MonitorHeartbeat.fileName(pid: pid))))
    }

    func seconds(_ version: String) -> Double {
        harness.counter.lastGauges?.monitoredSeconds[ServiceRelease(service: "billing", version: version)] ?? 0
    }

    var file: MonitoredTime? {
        FileManager.default.contents(atPath: harness.fixture.path("billing/" + MonitoredTime.fileName)).flatMap(MonitoredTime.decode)
    }

    /// Between two looks that find it watching, the time counts; a paused or stopped monitor, a
    /// silent watchdog and a stopped process count nothing, and the next look starts over.
    @Test func onlyTimeBetweenTwoLooksAtAWatchingMonitorCounts() throws {
        try beat()
        harness.run(.full)
        #expect(seconds("1.1.0") == 0, "one look is no interval")
        harness.clock.advance(by: .seconds(5))
        try beat(.idle)
        harness.run(.liveness)
        #expect(seconds("1.1.0") == 5)
        harness.clock.advance(by: .seconds(5))
        try beat(.paused)  // a debugger's pause
        harness.run(.liveness)
        harness.clock.advance(by: .seconds(5))
        try beat(.watching)
        harness.run(.liveness)
        #expect(seconds("1.1.0") == 5, "the pause and the look after it count nothing")
        harness.clock.advance(by: .seconds(7))
        try beat(.recording)
        harness.run(.liveness)
        #expect(seconds("1.1.0") == 12)
        // The watchdog stops ticking: once the grace has passed, nothing more counts.
        harness.clock.advance(by: .seconds(120))
        harness.run(.liveness)
        #expect(seconds("1.1.0") == 12)
        // The process stopped (SIGSTOP), then running again with a live watchdog.
        try beat()
        harness.processes[pid] = ProcStat(state: "T", startTimeTicks: 9)
        harness.run(.liveness)
        harness.processes[pid] = ProcStat(state: "S", startTimeTicks: 9)
        harness.clock.advance(by: .seconds(3))
        try beat()
        harness.run(.liveness)
        harness.clock.advance(by: .seconds(4))
        try beat()
        harness.run(.liveness)
        #expect(seconds("1.1.0") == 16)
    }

    /// Each version counts apart; a monitor without one counts as `unversioned`; a new process
    /// under the same pid starts over.
    @Test func eachVersionCountsApart() throws {
        try beat(version: "1.0.0")
        harness.run(.full)
        harness.clock.advance(by: .seconds(10))
        try beat(version: "1.0.0")
        harness.run(.liveness)
        // A deploy: the same pid, another process, another version.
        harness.processes[pid] = ProcStat(state: "S", startTimeTicks: 50)
        harness.clock.advance(by: .seconds(10))
        try beat(version: "1.1.0", startTimeTicks: 50)
        harness.run(.liveness)
        harness.clock.advance(by: .seconds(4))
        try beat(version: nil, startTimeTicks: 50)
        harness.run(.liveness)
        #expect(seconds("1.0.0") == 10 && seconds("1.1.0") == 0 && seconds(MonitoredTime.unversioned) == 4)
    }

    /// The file gets the time at once the first time, then at most once a minute, and what is
    /// left when the agent stops; a restarted agent adds to it; a damaged file is replaced.
    @Test func theFileKeepsTheTimeAcrossRestarts() throws {
        try beat()
        harness.run(.full)
        harness.clock.advance(by: .seconds(5))
        try beat()
        harness.run(.liveness)
        #expect(file?.seconds(of: "1.1.0") == 5)
        harness.clock.advance(by: .seconds(5))
        try beat()
        harness.run(.liveness)
        #expect(file?.seconds(of: "1.1.0") == 5, "within the minute: not written yet")
        harness.keeper.flushMonitoredTime()
        #expect(file?.seconds(of: "1.1.0") == 10)
        harness.keeper.flushMonitoredTime()
        #expect(file?.seconds(of: "1.1.0") == 10, "nothing written twice")

        // Another agent (a restart) on the same spool adds its own time to the file's.
        let restarted = try KeeperHarness(fixture: harness.fixture, processes: harness.processes)
        try beat()
        restarted.run(.full)
        restarted.clock.advance(by: .seconds(20))
        try beat(clock: restarted.clock)
        restarted.run(.liveness)
        #expect(file?.seconds(of: "1.1.0") == 30)

        try Data("{\"schema\": 7}".utf8).write(to: URL(fileURLWithPath: harness.fixture.path("billing/" + MonitoredTime.fileName)))
        restarted.clock.advance(by: .seconds(2))
        try beat(clock: restarted.clock)
        restarted.run(.liveness)
        restarted.keeper.flushMonitoredTime()
        #expect(file?.seconds(of: "1.1.0") == 2)
        #expect(restarted.log.count("a monitored-time file is replaced: the time it held is lost") == 1)
    }

    /// A service's user may plant a symlink in its own directory: the agent neither reads nor
    /// writes through it (it replaces the link itself).
    @Test func aPlantedSymlinkIsNeitherReadNorWrittenThrough() throws {
        let target = harness.fixture.path("outside.json")
        let original = #"{"schema":"hangwatch.monitored-time/1","versions":{"1.1.0":{"seconds":1000,"lastSeen":"2027-01-15T08:00:00.000Z"}}}"#
        try Data(original.utf8).write(to: URL(fileURLWithPath: target))
        let link = harness.fixture.path("billing/" + MonitoredTime.fileName)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        try beat()
        harness.run(.full)
        harness.clock.advance(by: .seconds(3))
        try beat()
        harness.run(.liveness)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == original)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == nil, "the link is replaced by a file")
        #expect(file?.seconds(of: "1.1.0") == 3, "the target's 1000 s were not read")
    }
}
