import Foundation
import HangWatchReport
import Logging
import Testing

@testable import HangWatchAgent

@Suite struct PrometheusExporterTests {
    static func exporter() throws -> PrometheusExporter {
        try PrometheusExporter(version: "test", address: nil, logger: Logger(label: "test"))
    }

    static func text(_ exporter: PrometheusExporter) -> String { String(decoding: exporter.exposition(), as: UTF8.self) }

    static func loop(_ buckets: [UInt64], nanoseconds: UInt64) -> LoopBusyHistogram.Counts {
        .init(buckets: buckets + Array(repeating: 0, count: LoopBusyHistogram.bucketCount - buckets.count), totalNanoseconds: nanoseconds)
    }

    @Test func everySeriesExistsFromTheStartWithHelpAndType() throws {
        let text = Self.text(try Self.exporter())
        #expect(text.contains(#"hangwatch_build_info{version="test"} 1"#))
        for reason in ["export", "retention", "unreadable"] {
            #expect(text.contains(#"hangwatch_reports_dropped_total{reason="\#(reason)"} 0"#), "\(reason)")
        }
        for state in ["alive", "watchdog_stuck", "process_stopped"] { #expect(text.contains(#"hangwatch_monitors{state="\#(state)"} 0"#)) }
        #expect(text.contains("hangwatch_spool_reports 0"))
        for name in [AgentMetrics.reportsDropped, AgentMetrics.monitors, AgentMetrics.spoolBytes, AgentMetrics.buildInfo] {
            #expect(text.contains("# HELP \(name) "), "\(name)")
            #expect(text.contains("# TYPE \(name) "), "\(name)")
        }
    }

    /// The denominator: monitored seconds per release, brought up to each pass's running totals
    /// (only rises count); a service's versions are bounded like services.
    @Test func monitoredSecondsCountPerReleaseAndVersionsAreBounded() throws {
        let exporter = try Self.exporter()
        let v1 = ServiceRelease(service: "billing", version: "1.0.0")
        let v2 = ServiceRelease(service: "billing", version: "1.1.0")
        exporter.publish(SpoolGauges(monitoredSeconds: [v1: 30]))
        exporter.publish(SpoolGauges(monitoredSeconds: [v1: 45.5, v2: 10]))
        exporter.publish(SpoolGauges(monitoredSeconds: [v1: 45.5, v2: 10]))
        var text = Self.text(exporter)
        #expect(text.contains(#"hangwatch_monitored_seconds_total{service="billing",version="1.0.0"} 45.5"#), "\(text)")
        #expect(text.contains(#"hangwatch_monitored_seconds_total{service="billing",version="1.1.0"} 10.0"#))
        #expect(text.contains("# HELP \(AgentMetrics.monitoredSeconds) "))
        var hang = try #require(FinishedHangTests.hang(FinishedHangTests.report(durationMs: 300)))
        hang.service = "billing"
        hang.version = "1.1.0"
        exporter.hangFinished(hang)
        let many = (0..<(AgentMetrics.maxVersionsPerService + 3)).map { ServiceRelease(service: "cart", version: "v\($0)") }
        exporter.publish(SpoolGauges(monitoredSeconds: Dictionary(uniqueKeysWithValues: many.map { ($0, 1.0) })))
        text = Self.text(exporter)
        #expect(text.contains(#"hangwatch_hangs_total{service="billing",version="1.1.0",severity="moderate"} 1"#))
        #expect(text.contains(#"hangwatch_hangs_total{service="billing",version="1.0.0",severity="moderate"} 0"#))
        // A service directory's own series, from its first sight.
        exporter.publish(SpoolGauges(services: ["quiet"]))
        #expect(Self.text(exporter).contains(#"hangwatch_hangs_total{service="quiet",version="unversioned",severity="fatal"} 0"#))
        #expect(text.contains(#"hangwatch_monitored_seconds_total{service="cart",version="_other"} 3.0"#), "\(text)")
        let cartVersions = Set(text.split(separator: "\n").filter { $0.hasPrefix(#"hangwatch_monitored_seconds_total{service="cart""#) })
        #expect(cartVersions.count == AgentMetrics.maxVersionsPerService + 1)
    }

    /// Hangs by verdict (a fixed set: a report's unknown verdict reads as `unknown`) and the time a
    /// CPU limit held hung threads back, per service, each series from the service's first sight.
    @Test func hangsAreCountedByVerdictAndTheThrottledTimeAddsUp() throws {
        let exporter = try Self.exporter()
        exporter.publish(SpoolGauges(services: ["billing"]))
        var text = Self.text(exporter)
        for verdict in ["computing", "blocked", "starved", "throttled", "paging", "stopped", "deadlocked", "unknown"] {
            #expect(text.contains(#"hangwatch_hangs_by_verdict_total{service="billing",verdict="\#(verdict)"} 0"#), "\(verdict)")
        }
        #expect(!text.contains(#"verdict="debugger""#))
        #expect(text.contains("hangwatch_throttled_seconds_total{service=\"billing\"} 0\n"), "\(text)")
        for seconds in [0.75, 0.5] {
            var report = FinishedHangTests.report(durationMs: 800)
            report.context.verdict = .throttled
            report.context.throttledMs = seconds * 1000
            var hang = try #require(FinishedHangTests.hang(report))
            hang.service = "billing"
            exporter.hangFinished(hang)
        }
        var computing = try #require(FinishedHangTests.hang(FinishedHangTests.report(durationMs: 300)))
        computing.service = "billing"
        exporter.hangFinished(computing)
        text = Self.text(exporter)
        #expect(text.contains(#"hangwatch_hangs_by_verdict_total{service="billing",verdict="throttled"} 2"#), "\(text)")
        #expect(text.contains(#"hangwatch_hangs_by_verdict_total{service="billing",verdict="computing"} 1"#))
        #expect(text.contains(#"hangwatch_throttled_seconds_total{service="billing"} 1.25"#), "\(text)")
        for name in [AgentMetrics.hangsByVerdict, AgentMetrics.throttledSeconds] {
            #expect(text.contains("# HELP \(name) ") && text.contains("# TYPE \(name) counter"), "\(name)")
        }
    }

    @Test func hangsDropsAndGaugesAreExposedWithBoundedLabels() throws {
        let exporter = try Self.exporter()
        #expect(!exporter.waitsForNames)
        exporter.hangFinished(try #require(FinishedHangTests.hang(FinishedHangTests.report(durationMs: 300))))
        exporter.reportsDropped(.retention, count: 3)
        let services = (0..<(AgentMetrics.maxServices + 5)).map { "service-\($0)" }
        exporter.publish(
            SpoolGauges(
                reports: 7, bytes: 4096, monitors: [.alive: 2, .processStopped: 1], services: services,
                loopBusy: ["s": Self.loop([3, 1], nanoseconds: 500_000), "quiet": Self.loop([], nanoseconds: 0)],
                monitoredSeconds: Dictionary(uniqueKeysWithValues: services.map { (ServiceRelease(service: $0, version: "1.0"), 60.0) })))
        let text = Self.text(exporter)
        for name in [AgentMetrics.hangsTotal, AgentMetrics.hangDuration, AgentMetrics.loopBusy] {
            #expect(text.contains("# HELP \(name) "), "\(name)")
            #expect(text.contains("# TYPE \(name) "), "\(name)")
        }
        #expect(text.contains(#"hangwatch_hangs_total{service="s",version="unversioned",severity="moderate"} 1"#))
        // A release seen watching has its series from the start, at 0.
        #expect(text.contains(#"hangwatch_hangs_total{service="service-0",version="1.0",severity="fatal"} 0"#))
        #expect(text.contains(#"hangwatch_deadlocks_total{service="service-0",version="1.0"} 0"#))
        #expect(text.contains(#"hangwatch_monitored_seconds_total{service="service-0",version="1.0"} 60.0"#))
        #expect(text.contains(#"service="_other""#))
        #expect(!text.contains(#"service="service-\#(AgentMetrics.maxServices + 4)""#))
        #expect(text.contains(#"hangwatch_reports_dropped_total{reason="retention"} 3"#))
        #expect(text.contains("hangwatch_spool_reports 7") && text.contains("hangwatch_spool_size_bytes 4096"))
        #expect(text.contains(#"hangwatch_monitors{state="alive"} 2"#) && text.contains(#"hangwatch_monitors{state="process_stopped"} 1"#))
        #expect(text.contains(#"hangwatch_monitors{state="watchdog_stuck"} 0"#))
        #expect(text.contains(#"hangwatch_loop_busy_seconds_bucket{service="s",le="0.0001"} 3"#))
        #expect(text.contains(#"hangwatch_loop_busy_seconds_bucket{service="s",le="0.00025"} 4"#))
        #expect(text.contains(#"hangwatch_loop_busy_seconds_count{service="s"} 4"#))
        #expect(text.contains(#"hangwatch_loop_busy_seconds_sum{service="s"} 0.0005"#))
        // A service whose monitors counted nothing has no histogram.
        #expect(!text.contains(#"service="quiet""#))
    }

    @Test func loopHistogramsAreRunningTotalsNotIncrements() throws {
        let exporter = try Self.exporter()
        exporter.publish(SpoolGauges(loopBusy: ["s": Self.loop([3], nanoseconds: 1000)]))
        exporter.publish(SpoolGauges(loopBusy: ["s": Self.loop([5], nanoseconds: 2000)]))
        #expect(Self.text(exporter).contains(#"hangwatch_loop_busy_seconds_count{service="s"} 5"#))
    }

    @Test func thePoolProbesStartDelaysAreAHistogramOfTheirOwn() throws {
        let exporter = try Self.exporter()
        exporter.publish(SpoolGauges(loopBusy: ["s": Self.loop([3], nanoseconds: 1000)], poolStartDelay: ["s": Self.loop([0, 2, 1], nanoseconds: 700_000)]))
        let text = Self.text(exporter)
        #expect(text.contains("# HELP \(AgentMetrics.poolStartDelay) ") && text.contains("# TYPE \(AgentMetrics.poolStartDelay) histogram"))
        #expect(text.contains(#"hangwatch_pool_start_delay_seconds_bucket{service="s",le="0.0001"} 0"#))
        #expect(text.contains(#"hangwatch_pool_start_delay_seconds_bucket{service="s",le="0.00025"} 2"#))
        #expect(text.contains(#"hangwatch_pool_start_delay_seconds_count{service="s"} 3"#))
        #expect(text.contains(#"hangwatch_loop_busy_seconds_count{service="s"} 3"#))
    }

    /// Running totals in, counters out: each pass raises a service's counter to its total.
    @Test func starvedPoolsAndCutShortCallsAreCountersByService() throws {
        let exporter = try Self.exporter()
        exporter.publish(SpoolGauges(poolStarvations: ["s": 0], callsCutShort: ["s": 2, "t": 0]))
        exporter.publish(SpoolGauges(poolStarvations: ["s": 3], callsCutShort: ["s": 5, "t": 0]))
        exporter.publish(SpoolGauges(poolStarvations: ["s": 3], callsCutShort: ["s": 5, "t": 1]))
        let text = Self.text(exporter)
        #expect(text.contains("# HELP \(AgentMetrics.poolStarvations) ") && text.contains("# TYPE \(AgentMetrics.poolStarvations) counter"))
        #expect(text.contains("# HELP \(AgentMetrics.callsCutShort) ") && text.contains("# TYPE \(AgentMetrics.callsCutShort) counter"))
        #expect(text.contains(#"hangwatch_pool_starvations_total{service="s"} 3"#), "\(text)")
        #expect(text.contains(#"hangwatch_capture_calls_cut_short_total{service="s"} 5"#))
        #expect(text.contains(#"hangwatch_capture_calls_cut_short_total{service="t"} 1"#))
    }

    /// The busiest run loop's busy ratio: a gauge by service and source, the services bounded like
    /// every metric's (those past the bound share `_other`, at the highest of their ratios); none
    /// at all while no monitor publishes one, and a service's series goes when its monitors do.
    @Test func theLoopBusyRatioIsAGaugeByServiceAndSource() throws {
        let exporter = try Self.exporter()
        #expect(!Self.text(exporter).contains(AgentMetrics.loopBusyRatio))
        let services = (0..<(AgentMetrics.maxServices + 3)).map { "service-\($0)" }
        var ratios = Dictionary(uniqueKeysWithValues: services.map { ($0, 0.25) })
        ratios["service-\(AgentMetrics.maxServices + 1)"] = 0.97
        ratios["service-0"] = 0.93
        exporter.publish(SpoolGauges(services: services, loopBusyRatio: ratios))
        var text = Self.text(exporter)
        #expect(text.contains("# HELP \(AgentMetrics.loopBusyRatio) ") && text.contains("# TYPE \(AgentMetrics.loopBusyRatio) gauge"))
        #expect(text.contains(#"hangwatch_loop_busy_ratio{service="service-0",source="runloop"} 0.93"#), "\(text)")
        #expect(text.contains(#"hangwatch_loop_busy_ratio{service="service-1",source="runloop"} 0.25"#))
        #expect(text.contains(#"hangwatch_loop_busy_ratio{service="_other",source="runloop"} 0.97"#))
        let series = text.split(separator: "\n").filter { $0.hasPrefix(AgentMetrics.loopBusyRatio + "{") }
        #expect(series.count == AgentMetrics.maxServices + 1, "\(series.count)")
        exporter.publish(SpoolGauges(services: services, loopBusyRatio: ["service-1": 0.5]))
        text = Self.text(exporter)
        #expect(text.contains(#"hangwatch_loop_busy_ratio{service="service-1",source="runloop"} 0.5"#))
        #expect(!text.contains(#"hangwatch_loop_busy_ratio{service="service-0""#))
    }

    /// The run loops' busy pieces: a histogram by service and source (`runloop`), running totals,
    /// none at all while no monitor publishes one.
    @Test func theLoopLagIsAHistogramByServiceAndSource() throws {
        let exporter = try Self.exporter()
        #expect(!Self.text(exporter).contains(AgentMetrics.loopLag))
        exporter.publish(SpoolGauges(loopLag: ["s": Self.loop([90, 0, 0, 0, 0, 0, 0, 40, 6], nanoseconds: 1_100_000_000)]))
        exporter.publish(SpoolGauges(loopLag: ["s": Self.loop([100, 0, 0, 0, 0, 0, 0, 50, 6], nanoseconds: 1_300_000_000)]))
        let text = Self.text(exporter)
        #expect(text.contains("# HELP \(AgentMetrics.loopLag) ") && text.contains("# TYPE \(AgentMetrics.loopLag) histogram"))
        #expect(text.contains(#"hangwatch_loop_lag_seconds_bucket{service="s",source="runloop",le="0.0001"} 100"#), "\(text)")
        #expect(text.contains(#"hangwatch_loop_lag_seconds_bucket{service="s",source="runloop",le="0.025"} 150"#))
        #expect(text.contains(#"hangwatch_loop_lag_seconds_bucket{service="s",source="runloop",le="0.05"} 156"#))
        #expect(text.contains(#"hangwatch_loop_lag_seconds_bucket{service="s",source="runloop",le="+Inf"} 156"#))
        #expect(text.contains(#"hangwatch_loop_lag_seconds_sum{service="s",source="runloop"} 1.3"#))
        #expect(text.contains(#"hangwatch_loop_lag_seconds_count{service="s",source="runloop"} 156"#))
        #expect(!text.contains(#"hangwatch_loop_busy_seconds_count{service="s""#), "a section of its own")
    }

    @Test func labelsAreEscaped() {
        #expect(LoopBusyExposition.escapeLabel("a\"b\\c\nd") == #"a\"b\\c\nd"#)
        #expect(LoopBusyExposition.seconds(2_500_000_000) == "2.5" && LoopBusyExposition.seconds(1_000_000_000) == "1.0")
        #expect(LoopBusyExposition.ratioValue(0.912345) == "0.9123" && LoopBusyExposition.ratioValue(1.2) == "1.0")
        #expect(LoopBusyExposition.ratioValue(.nan) == "0.0")
    }
}
