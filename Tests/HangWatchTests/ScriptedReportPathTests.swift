import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Logging
import Testing

/// The path after detection, on scripted time: the watchdog's hangs go to a real `ReportBuilder`
/// and `ReportWriter` (reading the same scripted clock) and land in a real store. Times in the
/// reports are then exact functions of the script.
@Suite struct ScriptedReportPathTests {
    /// A writer on `h`'s clock into a new directory, fed by the harness as the watchdog hands on.
    static func writer(for h: WatchdogHarness, directory: ReportDirectory, repeatWindowSeconds: UInt64 = 60) -> ReportWriter {
        let environment = h.environment
        let builder = ReportBuilder(
            service: "scripted", host: "test-host", pid: 4242,
            process: HangReport.Process(executable: "/usr/bin/scripted", startTimeTicks: 1),
            signal: 0, maxFrames: 64, wallClock: { environment.date(ofMicroseconds: $0) }, source: .runLoop)
        let logger = Logger(label: "hangwatch.tests", factory: { _ in SwiftLogNoOpLogHandler() })
        let writer = ReportWriter(
            store: ReportStore(directory: directory.path), retention: RetentionPolicy(maxReports: 100, maxBytes: 1 << 30),
            policy: ReportPolicy(
                limiter: ReportRateLimiter(burst: 10, perMinute: 10),
                repeats: RepeatTracker(windowMicroseconds: repeatWindowSeconds * 1_000_000)),
            enricher: nil, statistics: h.statistics, logger: logger, builder: builder, images: ImageRegistry(logger: logger),
            clock: h.clock)
        h.sink.forward = writer
        return writer
    }

    @Test func aRepeatFoldsIntoTheFirstReportAndAnotherPathGetsItsOwnWithScriptedTimes() throws {
        let h = WatchdogHarness()
        let directory = ReportDirectory()
        try ReportStore(directory: directory.path).prepare()
        let writer = Self.writer(for: h, directory: directory)
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

    @Test func outsideTheRepeatWindowTheSamePathIsANewReport() throws {
        let h = WatchdogHarness()
        let directory = ReportDirectory()
        try ReportStore(directory: directory.path).prepare()
        let writer = Self.writer(for: h, directory: directory, repeatWindowSeconds: 2)
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
}
