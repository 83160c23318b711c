import Foundation
import HangWatchReport
import Synchronization
import Testing

@testable import HangWatchAgent

@Suite struct ExportConfigurationTests {
    @Test func listenAddressesParseAndBadOnesAreRefused() throws {
        #expect(AgentConfiguration.ListenAddress.parse("127.0.0.1:9466") == .init(host: "127.0.0.1", port: 9466))
        #expect(AgentConfiguration.ListenAddress.parse("[::1]:9000") == .init(host: "::1", port: 9000))
        #expect(AgentConfiguration.ListenAddress.parse("0.0.0.0:9466")?.isLoopback == false)
        for bad in ["9466", "host:", "host:70000", "::1:9466", "a b:1", "[::1]9466"] {
            #expect(AgentConfiguration.ListenAddress.parse(bad) == nil, "\(bad)")
        }
        let off = try AgentConfiguration.load(file: nil, overrides: ["HANGWATCHD_METRICS_LISTEN=off"], defaultFile: "/nonexistent/hangwatchd.env")
        #expect(off.metricsListen == nil)
        #expect(throws: AgentConfiguration.Invalid.self) {
            try AgentConfiguration.load(file: nil, overrides: ["HANGWATCHD_METRICS_LISTEN=localhost"], defaultFile: "/nonexistent/hangwatchd.env")
        }
    }

    @Test func otlpSettingsAreChecked() throws {
        let configuration = try AgentConfiguration.load(
            file: nil,
            overrides: [
                "HANGWATCHD_OTLP_ENDPOINT=http://collector:4318/", "HANGWATCHD_OTLP_PROTOCOL=http/json",
                "HANGWATCHD_OTLP_HEADERS=authorization=Bearer abc, x-tenant=7", "HANGWATCHD_OTLP_QUEUE_SIZE=50",
            ], defaultFile: "/nonexistent/hangwatchd.env")
        #expect(configuration.otlpEndpoint == "http://collector:4318")
        #expect(configuration.otlpProtocol == .json)
        #expect(configuration.otlpHeaders == [.init(name: "authorization", value: "Bearer abc"), .init(name: "x-tenant", value: "7")])
        #expect(configuration.otlpQueueSize == 50)
        for bad in [
            "HANGWATCHD_OTLP_ENDPOINT=collector:4318", "HANGWATCHD_OTLP_ENDPOINT=ftp://x", "HANGWATCHD_OTLP_PROTOCOL=grpc",
            "HANGWATCHD_OTLP_HEADERS=novalue", "HANGWATCHD_OTLP_QUEUE_SIZE=0", "HANGWATCHD_SEVERE_AFTER=0",
        ] {
            #expect(throws: AgentConfiguration.Invalid.self, "\(bad)") { try AgentConfiguration.load(file: nil, overrides: [bad], defaultFile: "/nonexistent/hangwatchd.env") }
        }
    }
}

@Suite struct FinishedHangTests {
    static func report(durationMs: Double, outcome: HangReport.Outcome = .recovered, repeats: HangReport.Repeats? = nil) throws -> HangReport {
        let directory = try #require(ExportFixture.demoReports)
        var report = try ReportReader().read(path: try #require(try ReportStore(directory: directory).list().first).path)
        report.durationMs = durationMs
        report.outcome = outcome
        report.repeats = repeats
        return report
    }

    @Test func severityFollowsDurationAndFate() throws {
        func severity(_ report: HangReport) -> FinishedHang.Severity? {
            FinishedHang.newHangs(in: report, service: "s", alreadyCounted: 0, path: "/p", severeAfter: .seconds(2))?.severity
        }
        #expect(severity(try Self.report(durationMs: 300)) == .moderate)
        #expect(severity(try Self.report(durationMs: 2000)) == .severe)
        #expect(severity(try Self.report(durationMs: 300, outcome: .processExited)) == .fatal)
        #expect(severity(try Self.report(durationMs: 300, outcome: .ongoing)) == nil)
    }

    @Test func foldedRepeatsCountOnceEach() throws {
        let repeats = HangReport.Repeats(count: 3, lastAt: Date(), totalDurationMs: 1500, maxDurationMs: 600)
        let report = try Self.report(durationMs: 500, repeats: repeats)
        let first = try #require(FinishedHang.newHangs(in: report, service: "s", alreadyCounted: 0, path: "/p", severeAfter: .seconds(2)))
        #expect(first.count == 4)
        #expect(abs(first.durationSeconds - 0.5) < 1e-9)
        let later = try #require(FinishedHang.newHangs(in: report, service: "s", alreadyCounted: 2, path: "/p", severeAfter: .seconds(2)))
        #expect(later.count == 2)
        #expect(FinishedHang.newHangs(in: report, service: "s", alreadyCounted: 4, path: "/p", severeAfter: .seconds(2)) == nil)
    }

    /// A report file may say anything JSON allows: Int.max repeats, a duration of 1.7e308, a
    /// negative count. None of it may trap the agent (its counts are summed over the spool).
    @Test func absurdCountsAndDurationsFromAFileDoNotTrapTheAgent() throws {
        let huge = try Self.report(durationMs: 1.7e308, repeats: HangReport.Repeats(count: Int.max, lastAt: Date(), totalDurationMs: 0, maxDurationMs: 0))
        #expect(FinishedHang.hangCount(huge) == 1 + FinishedHang.maxRepeats)
        #expect(Int.max / FinishedHang.hangCount(huge) > 1_000_000, "a million such reports still add up")
        let hang = try #require(FinishedHang.newHangs(in: huge, service: "s", alreadyCounted: 0, path: "/p", severeAfter: .seconds(2)))
        #expect(hang.count == FinishedHang.hangCount(huge))
        #expect(hang.headline.contains(" hung 1.55e+296 ms"), "\(hang.headline)")
        let negative = try Self.report(durationMs: 300, repeats: HangReport.Repeats(count: -5, lastAt: Date(), totalDurationMs: 0, maxDurationMs: 0))
        #expect(FinishedHang.hangCount(negative) == 1)
        #expect(FinishedHang.whole(-1e300) == "-1e+300" && FinishedHang.whole(712.5) == "713")
    }
}

@Suite struct HangLogOutboxTests {
    final class Sink: Sendable {
        let emitted = Mutex<[String]>([])
        let dropped = Mutex(0)
    }

    static func hang(_ id: String) throws -> FinishedHang {
        var hang = try #require(
            FinishedHang.newHangs(in: try FinishedHangTests.report(durationMs: 300), service: "s", alreadyCounted: 0, path: "/p", severeAfter: .seconds(2)))
        hang.reportID = id
        return hang
    }

    static func outbox(capacity: Int, sink: Sink) -> HangLogOutbox {
        var settings = HangLogOutbox.Settings(capacity: capacity, maxInFlight: capacity)
        settings.firstBackoff = .milliseconds(50)
        return HangLogOutbox(
            settings: settings, emit: { hang in sink.emitted.withLock { $0.append(hang.reportID) } },
            onDrop: { count in sink.dropped.withLock { $0 += count } })
    }

    static func waitFor(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if condition() { return true }
            usleep(5_000)
        }
        return condition()
    }

    @Test func aFullQueueDropsTheOldestWaitingAndCountsIt() throws {
        let sink = Sink()
        // Capacity 2 and nothing delivered: the first two go in flight, later ones have no room.
        let outbox = Self.outbox(capacity: 2, sink: sink)
        for id in ["a", "b"] { outbox.enqueue(try Self.hang(id)) }
        #expect(Self.waitFor { sink.emitted.withLock { $0 } == ["a", "b"] })
        outbox.enqueue(try Self.hang("c"))
        #expect(sink.dropped.withLock { $0 } == 1)
        #expect(outbox.counts.inFlight == 2)
    }

    @Test func aFailedBatchIsRetriedInOrderAfterABackoff() throws {
        let sink = Sink()
        let outbox = Self.outbox(capacity: 10, sink: sink)
        for id in ["a", "b", "c"] { outbox.enqueue(try Self.hang(id)) }
        #expect(Self.waitFor { sink.emitted.withLock { $0.count } == 3 })
        outbox.failed(2, permanent: false)
        #expect(Self.waitFor { sink.emitted.withLock { $0 } == ["a", "b", "c", "a", "b"] })
        outbox.delivered(1)  // c
        outbox.delivered(2)  // a, b
        #expect(outbox.counts == .init(waiting: 0, inFlight: 0, delivered: 3, dropped: 0, retries: 2))
        #expect(sink.dropped.withLock { $0 } == 0)
    }

    @Test func aRefusedBatchIsDroppedNotRetried() throws {
        let sink = Sink()
        let outbox = Self.outbox(capacity: 10, sink: sink)
        outbox.enqueue(try Self.hang("a"))
        #expect(Self.waitFor { sink.emitted.withLock { $0.count } == 1 })
        outbox.failed(1, permanent: true)
        #expect(outbox.counts.dropped == 1)
        usleep(200_000)
        #expect(sink.emitted.withLock { $0 } == ["a"])
    }

    @Test func permanentMeansAFourHundredOtherThanThrottling() {
        struct Failure: Error, CustomStringConvertible {
            var description: String
        }
        #expect(OTelDiagnostics.isPermanent(Failure(description: "requestFailed(400 Bad Request)")))
        #expect(!OTelDiagnostics.isPermanent(Failure(description: "requestFailed(429 Too Many Requests)")))
        #expect(!OTelDiagnostics.isPermanent(Failure(description: "requestFailed(503 Service Unavailable)")))
        #expect(!OTelDiagnostics.isPermanent(Failure(description: "connectTimeout")))
        #expect(!OTelDiagnostics.isPermanent(nil))
    }
}

@Suite struct AgentMetricsTests {
    @Test func theExpositionHasHelpTypeAndBoundedLabels() throws {
        let metrics = AgentMetrics(version: "test")
        let hang = try HangLogOutboxTests.hang("a")
        metrics.record(hang)
        for index in 0..<(AgentMetrics.maxServices + 5) { metrics.serviceSeen("service-\(index)") }
        metrics.loopBusy(service: "s", added: .init(buckets: [3, 1] + Array(repeating: 0, count: LoopBusyHistogram.bucketCount - 2), totalNanoseconds: 500_000))
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        for name in [AgentMetrics.hangsTotal, AgentMetrics.hangDuration, AgentMetrics.reportsDropped, AgentMetrics.monitors, AgentMetrics.loopBusy] {
            #expect(text.contains("# HELP \(name) "), "\(name)")
            #expect(text.contains("# TYPE \(name) "), "\(name)")
        }
        #expect(text.contains(#"hangwatch_hangs_total{service="s",severity="moderate"} 1"#))
        #expect(text.contains(#"service="_other""#))
        #expect(text.contains(#"hangwatch_loop_busy_seconds_bucket{service="s",le="0.0001"} 3"#))
        #expect(text.contains(#"hangwatch_loop_busy_seconds_bucket{service="s",le="0.00025"} 4"#))
        #expect(text.contains(#"hangwatch_loop_busy_seconds_count{service="s"} 4"#))
    }
}

enum ExportFixture {
    /// The demo's reports, made once per test run.
    static let demoReports: String? = {
        let path = FileManager.default.temporaryDirectory.path + "/hangwatch-agent-unit-demo-\(getpid())"
        let bundle = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        let demo = Process()
        demo.executableURL = URL(fileURLWithPath: (bundle as NSString).deletingLastPathComponent + "/hangwatch-demo")
        demo.arguments = ["--reports", path]
        demo.standardOutput = FileHandle.nullDevice
        demo.standardError = FileHandle.nullDevice
        guard (try? demo.run()) != nil else { return nil }
        demo.waitUntilExit()
        return demo.terminationStatus == 0 ? path : nil
    }()
}
