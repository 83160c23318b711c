import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Logging
import Testing

/// The path after detection, on scripted time: the watchdog's hangs go to the monitor's own
/// `ReportBuilder` and `ReportWriter`, made by `MonitorAssembly` as a running monitor's are (reading
/// the same scripted clock), and land in a real store. Times in the reports are then exact
/// functions of the script.
@Suite struct ScriptedReportPathTests {
    /// A monitor on scripted time whose writer has these limits (and `log`'s logger).
    static func harness(repeatWindowSeconds: Int64 = 60, burst: Int = 10, perMinute: Int = 10, log: LogRecorder? = nil) -> WatchdogHarness {
        WatchdogHarness(
            configure: { configuration in
                configuration.repeatWindow = .seconds(repeatWindowSeconds)
                configuration.reportBurst = burst
                configuration.reportsPerMinute = perMinute
            }, logger: log?.logger ?? Logger(label: "hangwatch.tests", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    @Test func aRepeatFoldsIntoTheFirstReportAndAnotherPathGetsItsOwnWithScriptedTimes() throws {
        let h = Self.harness()
        let (directory, writer) = (h.directory, h.writer)
        // Two hangs on one path (computing), then one blocked in a system call elsewhere.
        h.busy(from: 100, for: 700)
        h.busy(from: 1_200, for: 500)
        h.busy(from: 2_000, for: 600)
        let blockedFrom = h.t(2_000)
        h.sampler.next = { now, _ in now >= blockedFrom ? ScriptedSampler.blocked() : ScriptedSampler.computing() }
        h.run()
        writer.flush()

        let reports = ReportDirectory(path: directory.path).reports().sorted { $0.startedAt < $1.startedAt }
        try #require(reports.count == 2, "\(reports.map(\.id))")
        let (first, blocked) = (reports[0], reports[1])
        // Exact to the clock's resolution: the script, not the machine, set these.
        // (Reports keep milliseconds.)
        #expect(abs(first.startedAt.timeIntervalSince(h.environment.date(ofMicroseconds: h.t(100)))) < 0.001)
        #expect(abs(first.durationMs - 700) <= 1, "\(first.durationMs)")
        #expect(first.outcome == .recovered && blocked.outcome == .recovered)
        let repeats = try #require(first.repeats)
        #expect(repeats.count == 1)
        #expect(abs(repeats.maxDurationMs - 500) <= 1, "\(repeats)")
        #expect(abs(blocked.startedAt.timeIntervalSince(h.environment.date(ofMicroseconds: h.t(2_000)))) < 0.001)
        #expect(blocked.signature != first.signature)
        // One sample at detection (threshold plus the clock's resolution in), then one per 50 ms.
        #expect(first.samples.count == 9, "\(first.samples.count)")
        #expect(blocked.samples.count == 7, "\(blocked.samples.count)")
        #expect(blocked.context.verdict == .blocked, "\(String(describing: blocked.context.verdict))")
        #expect(h.statistics.reportsWritten.load(ordering: .relaxed) == 2)
        #expect(h.statistics.hangsFolded.load(ordering: .relaxed) == 1)
    }

    /// Idle, then one piece of 800 ms: the lead-up reads idle, every bucket of the window there,
    /// and one piece proves nothing about its jobs.
    @Test func aHangAfterIdleCarriesAnIdleLeadUp() throws {
        let h = Self.harness()
        h.busy(from: 100, for: 10)
        h.busy(from: 3_000, for: 800)
        h.run()
        h.writer.flush()
        let report = try #require(ReportDirectory(path: h.directory.path).reports().first)
        let before = try #require(report.before)
        #expect(before.windowMs == 5000 && before.bucketMs == 100 && before.buckets.count == 50)
        #expect(before.busyRatio < 0.05, "\(before.busyRatio)")
        #expect(before.reading.hasPrefix("idle before onset"), "\(before.reading)")
        // The 10 ms piece, 2.9 s before the onset, in its bucket; the hang's own piece in none.
        #expect(abs(before.buckets.reduce(0) { $0 + $1.busyMs } - 10) <= 4.1, "\(before.buckets)")
        #expect(before.buckets.reduce(0) { $0 + $1.stretches } == 1)
        #expect(report.kind?.name == "unknown")
        #expect(report.kind?.iterationsBefore == 0)
    }

    /// Two seconds of 15 ms iterations without sleeping, then a piece of 400 ms: the lead-up reads
    /// busy, and the iterations before it prove a backlog ran into it.
    @Test func aHangAfterABacklogOfShortIterationsCarriesABusyLeadUpAndIsMixed() throws {
        let h = WatchdogHarness(configure: { $0.leadUpWindow = .seconds(2) })
        h.loop(.afterWaiting, at: 500)
        var time = 515.0
        while time <= 2_500 {
            h.loop(.beforeSources, at: time)
            time += 15
        }
        // The last, at 2,495 ms, begins the piece that hangs: 132 iterations in 1,995 ms before it.
        h.loop(.beforeWaiting, at: time - 15 + 400)
        h.run()
        h.writer.flush()
        let report = try #require(ReportDirectory(path: h.directory.path).reports().first)
        let before = try #require(report.before)
        #expect(before.buckets.count == 20)
        #expect(before.busyRatio > 0.95, "\(before.busyRatio)")
        #expect(before.reading.hasPrefix("busy 100 % for "), "\(before.reading)")
        #expect(before.buckets.reduce(0) { $0 + $1.iterations } >= 120, "\(before.buckets)")
        #expect(before.buckets.allSatisfy { $0.longestMs <= 20 })
        let kind = try #require(report.kind)
        #expect(kind.name == "mixed", "\(kind)")
        #expect(kind.iterationsBefore == 132, "\(kind)")
        #expect(abs((kind.busyBeforeMs ?? 0) - 1995) <= 1, "\(kind)")
    }

    /// Pieces of 150 ms under a 250 ms threshold, 20 ms apart, then one of 400 ms: each piece is a
    /// near miss, sampled half-way; the report keeps those that began in its 2 s window (not the
    /// earlier ones, not its own piece's), with their stacks, and names the function most ran in.
    @Test func nearMissesInTheWindowAreKeptWithTheirStacksAndTheirFunctionNamed() throws {
        let h = WatchdogHarness(configure: { $0.leadUpWindow = .seconds(2) })
        let first = h.t(500)
        h.sampler.next = { now, _ in
            // Pieces 0 ... 13 in one function, 14 on (and the hang) in another.
            now < first || (now - first) / 170_000 <= 13 ? ScriptedSampler.computing([0x1110, 0x1020]) : ScriptedSampler.computing([0x1210, 0x1020])
        }
        for piece in 0..<20 {
            h.busy(from: 500 + Double(piece) * 170, for: 150)
        }
        h.busy(from: 4_000, for: 400)
        h.run()
        h.writer.flush()
        let report = try #require(ReportDirectory(path: h.directory.path).reports().first)
        let before = try #require(report.before)
        // Pieces 9 ... 19 began in the 2 s before the onset at 4,000 ms.
        let misses = try #require(before.nearMisses)
        #expect(misses.count == 11, "\(misses)")
        #expect(h.statistics.nearMisses.load(ordering: .relaxed) == 21, "every piece, and the hang's own")
        for (offset, miss) in misses.enumerated() {
            let began = 500 + Double(offset + 9) * 170 - 4_000
            #expect(abs(miss.offsetMs - began) <= 1, "\(miss)")
            #expect(miss.atLeastMs >= 125 && miss.atLeastMs <= 135, "\(miss)")
            let stack = try #require(miss.stack.map { report.stacks[$0] })
            let innermost = report.frames[stack.frames[0]].address
            #expect(innermost == (offset + 9 <= 13 ? "0x1110" : "0x1210"), "\(offset): \(innermost)")
        }
        // Six of the eleven ran in 0x1210 (all twenty: fourteen in 0x1110).
        let named = try #require(before.nearMissesIn)
        #expect(named.contains("1210"), "\(named)")
        #expect(before.reading.hasSuffix(", 11 near misses in `\(named)`"), "\(before.reading)")
        // Naming again (as after an enricher) changes nothing.
        var again = report
        again.nameNearMisses()
        #expect(again.before == report.before)
    }

    /// A piece sampled half-way that went on to be a hang is that hang, not a near miss of the
    /// next one.
    @Test func anEarlierHangIsNoNearMissOfTheNext() throws {
        let h = Self.harness()
        h.busy(from: 100, for: 150)
        h.busy(from: 400, for: 400)
        h.busy(from: 1_000, for: 150)
        h.busy(from: 1_300, for: 400)
        h.run()
        h.writer.flush()
        let reports = ReportDirectory(path: h.directory.path).reports().sorted { $0.startedAt < $1.startedAt }
        try #require(reports.count == 2 || (reports.count == 1 && reports[0].repeats != nil), "\(reports.map(\.id))")
        let first = try #require(reports.first?.before?.nearMisses)
        #expect(first.map { $0.offsetMs.rounded() } == [-300], "\(first)")
        #expect(h.statistics.nearMisses.load(ordering: .relaxed) == 4, "every piece was sampled half-way")
        // The second hang (folded into the first as a repeat, or a report of its own) had its own
        // recording: its lead-up is the one the watchdog built for it.
        let second = try #require(h.hangs.last?.recording.leadUp)
        let starts = second.nearMisses.map { h.ms($0.startMicroseconds).rounded() }
        #expect(starts == [100, 1_000], "\(starts)")
    }

    @Test func aWindowOfZeroWritesNoLeadUp() throws {
        let h = WatchdogHarness(configure: { $0.leadUpWindow = .zero })
        h.busy(from: 3_000, for: 800)
        h.run()
        h.writer.flush()
        let report = try #require(ReportDirectory(path: h.directory.path).reports().first)
        #expect(report.before == nil && report.kind == nil)
    }

    @Test func outsideTheRepeatWindowTheSamePathIsANewReport() throws {
        let h = Self.harness(repeatWindowSeconds: 2)
        let (directory, writer) = (h.directory, h.writer)
        h.busy(from: 100, for: 400)
        // Three seconds later on the scripted clock: no real time passes.
        h.busy(from: 3_500, for: 400)
        h.run()
        writer.flush()
        let reports = ReportDirectory(path: directory.path).reports()
        #expect(reports.count == 2, "\(reports.map(\.id))")
        #expect(reports.allSatisfy { $0.repeats == nil })
        #expect(Set(reports.map(\.signature)).count == 1)
    }

    /// A report directory deleted while the service runs is made again (same mode) for the next
    /// hang: told once, counted each time.
    @Test func aDeletedReportDirectoryIsMadeAgainForTheNextHang() throws {
        let log = LogRecorder()
        let h = Self.harness(log: log)
        let (directory, writer) = (h.directory, h.writer)
        let origin = h.t(0)
        h.sampler.next = { now, _ in
            let hang = UInt((now - origin) / 1_000_000)
            return ScriptedSampler.computing([0x10_0000 + hang * 0x100, 0x1030])
        }
        for (index, start) in [100.0, 1_100, 2_100].enumerated() {
            h.busy(from: start, for: 400)
            // Between hangs, once what was queued is on disk: the directory goes.
            if index < 2 {
                h.clock.at(h.t(start + 800)) {
                    writer.flush()
                    try? FileManager.default.removeItem(atPath: directory.path)
                }
            }
        }
        h.run()
        writer.flush()
        let reports = ReportDirectory(path: directory.path).reports()
        #expect(reports.count == 1, "the last hang's report, in the directory made again: \(reports.map(\.id))")
        #expect(h.statistics.directoriesRecreated.load(ordering: .relaxed) == 2)
        #expect(h.statistics.writeFailures.load(ordering: .relaxed) == 0)
        var info = stat()
        #expect(lstat(directory.path, &info) == 0 && info.st_mode & 0o777 == 0o700)
        #expect(log.count("the report directory was deleted; made it again") == 1)
    }

    /// Over the rate limit (one token, 32 reports held), later hangs are dropped: told at notice
    /// level at most once a minute of the writer's clock, each notice with the count since the last.
    @Test func hangsOverTheRateLimitAreToldAtMostOnceAMinute() throws {
        let log = LogRecorder()
        let h = Self.harness(burst: 1, perMinute: 1, log: log)
        let (directory, writer) = (h.directory, h.writer)
        // 40 hangs on 40 different paths within 20 s, then three more from 80 s.
        var starts = (0..<40).map { 500.0 * Double($0) + 100 }
        starts += [80_000, 80_500, 81_000]
        for start in starts { h.busy(from: start, for: 300) }
        let origin = h.t(0)
        h.sampler.next = { now, _ in
            let hang = UInt((now - origin) / 500_000)
            return ScriptedSampler.computing([0x10_0000 + hang * 0x100, 0x20_0000 + hang * 0x100, 0x1030])
        }
        let notices = { log.entries("hangs not written: over the report rate limit").filter { $0.level == .notice } }
        // First minute: one written, 32 held, 7 dropped, one notice (at the first drop). A minute
        // later a token has come (the first of the three takes it); the next drop is told with the
        // six dropped since the first notice; the last drop waits for the next minute. (Seen at
        // 90 s, before the script ends and the monitor stops.)
        var (suppressedBefore, noticesBefore) = (0, [String?]())
        h.clock.at(h.t(90_000)) {
            suppressedBefore = h.statistics.hangsSuppressed.load(ordering: .relaxed)
            noticesBefore = notices().map { $0["hangwatch.suppressed"] }
        }
        h.run()
        #expect(suppressedBefore == 9)
        #expect(noticesBefore == ["1", "7"], "\(log.all.map(\.message))")
        // Stopping (the script's end): held reports are written, and the drop not told yet is told.
        writer.flush()
        #expect(notices().map { $0["hangwatch.suppressed"] } == ["1", "7", "1"])
        #expect(ReportDirectory(path: directory.path).reports().count == 34)
    }
}

extension ScriptedReportPathTests {
    /// A report the rate limit holds is written when its token comes, on the script's time (the
    /// writer's hold-back lane of the watchdog waits for it), not only at the stop: with one token a
    /// minute, the second of two hangs on different paths is on disk before a stop 70 s in; with a
    /// stop 30 s in, the stop writes it. Nothing is dropped either way.
    @Test(arguments: [false, true]) func aHeldReportIsWrittenWhenItsTokenComesOnTheScriptsTime(stopsSooner: Bool) throws {
        let h = ScriptedReportPathTests.harness(burst: 1, perMinute: 1)
        h.busy(from: 100, for: 300)
        h.busy(from: 1_000, for: 300)
        let second = h.t(1_000)
        h.sampler.next = { now, _ in now >= second ? ScriptedSampler.computing([0x30_0000, 0x30_0100, 0x1030]) : ScriptedSampler.computing() }
        let stop = stopsSooner ? 30_000.0 : 70_000.0
        var beforeStop: [HangReport] = []
        h.clock.at(h.t(stop - 1)) { beforeStop = ReportDirectory(path: h.directory.path).reports() }
        h.stop(at: stop)
        h.run()
        #expect(beforeStop.count == (stopsSooner ? 1 : 2), "\(beforeStop.map(\.id))")
        // The stop writes what is still held.
        #expect(ReportDirectory(path: h.directory.path).reports().count == 2)
        #expect(h.statistics.hangsSuppressed.load(ordering: .relaxed) == 0)
    }
}

/// A Swift runtime whose task layout the monitor does not read: said once in the log, in the
/// heartbeat and in every report, never left silently out.
@Suite struct UnrecognisedTaskLayoutTests {
    static let layout = SwiftTaskLayout.unrecognised(layoutVersion: 2, taskSize: 240)

    @Test func theLogAndEveryReportSayWhatIsUnavailable() throws {
        let log = LogRecorder()
        let h = WatchdogHarness(configure: { $0.repeatWindow = .zero }, logger: log.logger, taskLayout: Self.layout)
        h.busy(from: 100, for: 600)
        h.busy(from: 1_000, for: 400)
        h.run()
        h.writer.flush()
        let expected = try #require(Self.layout.description)
        #expect(expected.hasPrefix("async callers' labels and pool jobs that compute unavailable: Swift runtime layout not recognised"))
        #expect(expected.contains("concurrency layout version 2, task size 240 bytes"), "\(expected)")
        let warnings = log.entries("part of the diagnosis is unavailable")
        #expect(warnings.count == 1 && warnings.first?.metadata["hangwatch.reason"] == .string(expected), "\(log.all)")
        let reports = ReportDirectory(path: h.directory.path).reports()
        #expect(reports.count == 2)
        #expect(reports.allSatisfy { $0.capture.unavailable == [expected] }, "\(reports.map(\.capture.unavailable))")
    }

    @Test func aRecognisedLayoutSaysNothing() throws {
        let log = LogRecorder()
        let h = WatchdogHarness(logger: log.logger)
        h.busy(from: 100, for: 600)
        h.run()
        h.writer.flush()
        let reports = ReportDirectory(path: h.directory.path).reports()
        #expect(reports.count == 1 && reports.allSatisfy { $0.capture.unavailable == nil })
        #expect(log.count("part of the diagnosis is unavailable") == 0)
    }

    /// The heartbeat's flag, as the agent reads it.
    @Test func theHeartbeatSaysItForTheAgent() throws {
        let directory = ReportDirectory()
        try ReportStore(directory: directory.path).prepare()
        for unrecognised in [true, false] {
            let publisher = try HeartbeatPublisher(
                directory: directory.path, access: .private, interval: .seconds(10), thresholdMicroseconds: 250_000,
                taskLayoutUnrecognised: unrecognised)
            publisher.tick(.watching, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000)
            let heartbeat = try MonitorHeartbeat.read(path: directory.path + "/" + MonitorHeartbeat.fileName(pid: getpid()))
            #expect(heartbeat.taskLayoutUnrecognised == unrecognised)
            publisher.retire()
        }
    }

    /// The runtime's two words decide; this machine's runtime is one the offsets were verified with.
    @Test func theRuntimesWordsDecideAndThisRuntimeIsVerified() {
        #expect(SwiftTaskLayout.recognise(layoutVersion: 1, taskSize: 208) == .recognised)
        #expect(SwiftTaskLayout.recognise(layoutVersion: 2, taskSize: 208) == .unrecognised(layoutVersion: 2, taskSize: 208))
        #expect(SwiftTaskLayout.recognise(layoutVersion: 1, taskSize: 216) == .unrecognised(layoutVersion: 1, taskSize: 216))
        #expect(SwiftTaskLayout.recognise(layoutVersion: nil, taskSize: nil) == .noRuntime)
        #expect(SwiftTaskLayout.recognise(layoutVersion: nil, taskSize: nil).description == nil)
        #expect(SwiftTaskLayout.current == .recognised, "this runtime: \(SwiftTaskLayout.current)")
    }
}

/// Every report says which release of the service wrote it, found where the configuration, the
/// process's environment or OpenTelemetry's variable says.
@Suite struct ServiceVersionReportTests {
    @Test(arguments: [
        ("4.2.0", [:], ServiceVersion(version: "4.2.0", source: .configuration)),
        (nil, ["HANGWATCH_SERVICE_VERSION": "4.1.0", "OTEL_RESOURCE_ATTRIBUTES": "service.version=1.0"],
            ServiceVersion(version: "4.1.0", source: .environment)),
        (nil, ["OTEL_RESOURCE_ATTRIBUTES": "service.name=shop,service.version=1.1.0"], ServiceVersion(version: "1.1.0", source: .openTelemetry)),
        (nil, [:], nil),
    ] as [(String?, [String: String], ServiceVersion?)])
    func everyReportNamesItsRelease(configured: String?, environment: [String: String], expected: ServiceVersion?) throws {
        let h = WatchdogHarness(configure: { $0.serviceVersion = configured; $0.repeatWindow = .zero }, processEnvironment: environment)
        h.busy(from: 100, for: 600)
        h.busy(from: 1_000, for: 400)
        h.run()
        h.writer.flush()
        let reports = ReportDirectory(path: h.directory.path).reports()
        #expect(reports.count == 2)
        #expect(reports.allSatisfy { $0.serviceVersion == expected }, "\(reports.map(\.serviceVersion))")
    }

    @Test func theSettingNamesItToo() throws {
        let configuration = try HangMonitor.Configuration.load(
            serviceName: "shop", environment: ["HANGWATCH_SERVICE_VERSION": "5.0.0-beta.2"])
        #expect(configuration.serviceVersion == "5.0.0-beta.2")
        #expect(try HangMonitor.Configuration.load(serviceName: "shop", environment: [:]).serviceVersion == nil)
    }
}

/// Every report says where its process runs (`resource`), as the monitor found it when it started;
/// a process that runs nowhere known writes no `resource` at all.
@Suite struct WorkloadIdentityReportTests {
    @Test(arguments: [
        WorkloadIdentity(
            containerID: String(repeating: "3f2a1b4c", count: 8), podName: "billing-7d9f8-x2x", namespaceName: "shop",
            podUID: "0c6a5d3e-2b7e-4a36-a9a4-0d2d1c7f3b11", containerName: "app", nodeName: "node-3"),
        nil,
    ] as [WorkloadIdentity?])
    func everyReportNamesItsContainerAndPod(resource: WorkloadIdentity?) throws {
        let h = WatchdogHarness(configure: { $0.repeatWindow = .zero }, resource: resource)
        h.busy(from: 100, for: 600)
        h.busy(from: 1_000, for: 400)
        h.run()
        h.writer.flush()
        let reports = ReportDirectory(path: h.directory.path).reports()
        #expect(reports.count == 2)
        #expect(reports.allSatisfy { $0.resource == resource }, "\(reports.map(\.resource))")
        let files = try FileManager.default.contentsOfDirectory(atPath: h.directory.path).filter { $0.hasSuffix(".json") }
        for file in files {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: h.directory.path + "/" + file))) as? [String: Any])
            #expect((object["resource"] != nil) == (resource != nil), "\(file)")
        }
    }
}
