import CoreMetrics
import Foundation
import HangWatchReport
import Prometheus
import Synchronization

/// The agent's metrics (names and labels: docs/fleet.md). Recorded through swift-metrics into
/// `factory` (a Prometheus registry, plus the OTLP backend when one is configured); nothing here
/// touches the process-wide `MetricsSystem`, so an embedding program keeps its own.
///
/// Labels stay bounded: `service` is a spool directory (at most `maxServices` distinct values,
/// the rest are `_other`), `severity`, `reason` and `state` are fixed sets. Never a pid, stack
/// or report id.
public final class AgentMetrics: Sendable {
    public enum DropReason: String, Sendable, CaseIterable {
        /// A hang's OTLP log record was not delivered (queue full, or retries used up).
        case export
        /// Retention deleted a report (age, count, size or free-space limits).
        case retention
        /// A report could not be read (corrupt, foreign, too large).
        case unreadable
    }

    public enum MonitorState: String, Sendable, CaseIterable {
        case alive
        case watchdogStuck = "watchdog_stuck"
        case processStopped = "process_stopped"
    }

    public static let hangsTotal = "hangwatch_hangs_total"
    public static let hangDuration = "hangwatch_hang_duration_seconds"
    public static let onCpuRatio = "hangwatch_hang_oncpu_ratio"
    public static let reportsDropped = "hangwatch_reports_dropped_total"
    public static let monitors = "hangwatch_monitors"
    public static let spoolBytes = "hangwatch_spool_size_bytes"
    public static let spoolReports = "hangwatch_spool_reports"
    public static let loopBusy = "hangwatch_loop_busy_seconds"
    public static let buildInfo = "hangwatch_agent_build_info"

    /// Hang durations: from a quarter second (the default threshold) to five minutes.
    public static let durationBuckets: [Duration] = [
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .milliseconds(5000),
        .seconds(10), .seconds(30), .seconds(60), .seconds(300),
    ]
    public static let ratioBuckets: [Double] = [0.1, 0.25, 0.5, 0.75, 0.9, 1]

    static let catalog: [String: PrometheusMetricsCatalog.Entry] = [
        hangsTotal: .init(help: "Hangs of monitored loops, by service and severity (moderate, severe, fatal)."),
        hangDuration: .init(help: "How long each hang kept its loop stuck.", durationBuckets: durationBuckets),
        onCpuRatio: .init(help: "Share of each hang the stuck thread spent on a CPU (1: computing, 0: blocked).", valueBuckets: ratioBuckets),
        reportsDropped: .init(help: "Reports lost to export failures, deleted by retention, or unreadable, by reason."),
        monitors: .init(help: "Monitored processes the agent sees, by state (alive, watchdog_stuck, process_stopped)."),
        spoolBytes: .init(help: "Bytes of hang reports in the spool."),
        spoolReports: .init(help: "Hang reports in the spool."),
        buildInfo: .init(help: "The agent's version (always 1)."),
    ]

    public static let maxServices = 256

    public let registry: PrometheusCollectorRegistry
    private let factory: any MetricsFactory
    private let state = Mutex(State())

    private struct State {
        var services: Set<String> = []
        var monitorGauges: [MonitorState: CoreMetrics.Gauge] = [:]
        /// Loop-busy histograms by service label, cumulative since the agent started.
        var loopBusy: [String: LoopBusyHistogram.Counts] = [:]
    }

    /// `extraFactories` receive every metric too (the OTLP backend).
    public init(version: String, extraFactories: [any MetricsFactory] = []) {
        registry = PrometheusCollectorRegistry()
        let prometheus = PrometheusMetricsCatalog(registry: registry, entries: Self.catalog)
        factory = extraFactories.isEmpty ? prometheus : MultiplexMetricsHandler(factories: [prometheus] + extraFactories)
        CoreMetrics.Gauge(label: Self.buildInfo, dimensions: [("version", version)], factory: factory).record(1)
        // Series that exist from the start, so rate() and alerts see a 0 before the first event.
        for reason in DropReason.allCases { CoreMetrics.Counter(label: Self.reportsDropped, dimensions: [("reason", reason.rawValue)], factory: factory).increment(by: 0) }
        let gauges = Dictionary(uniqueKeysWithValues: MonitorState.allCases.map {
            ($0, CoreMetrics.Gauge(label: Self.monitors, dimensions: [("state", $0.rawValue)], factory: factory))
        })
        for gauge in gauges.values { gauge.record(0) }
        state.withLock { $0.monitorGauges = gauges }
        spool(reports: 0, bytes: 0)
    }

    /// The `service` label's value: bounded, never empty.
    func serviceLabel(_ service: String) -> String {
        let name = service.isEmpty ? "_root" : service
        return state.withLock { state in
            if state.services.contains(name) { return name }
            guard state.services.count < Self.maxServices else { return "_other" }
            state.services.insert(name)
            return name
        }
    }

    /// Makes a service's hang series exist (at 0) as soon as its directory appears.
    public func serviceSeen(_ service: String) {
        let label = serviceLabel(service)
        for severity in FinishedHang.Severity.allCases {
            CoreMetrics.Counter(label: Self.hangsTotal, dimensions: [("service", label), ("severity", severity.rawValue)], factory: factory)
                .increment(by: 0)
        }
    }

    public func record(_ hang: FinishedHang) {
        let service = serviceLabel(hang.service)
        CoreMetrics.Counter(label: Self.hangsTotal, dimensions: [("service", service), ("severity", hang.severity.rawValue)], factory: factory)
            .increment(by: hang.count)
        let duration = CoreMetrics.Timer(label: Self.hangDuration, dimensions: [("service", service)], factory: factory)
        let ratio = hang.onCpuRatio.map { _ in CoreMetrics.Recorder(label: Self.onCpuRatio, dimensions: [("service", service)], factory: factory) }
        for _ in 0..<min(hang.count, 10_000) {
            duration.recordSeconds(hang.durationSeconds)
            if let ratio, let value = hang.onCpuRatio { ratio.record(value) }
        }
    }

    public func dropped(_ reason: DropReason, count: Int = 1) {
        guard count > 0 else { return }
        CoreMetrics.Counter(label: Self.reportsDropped, dimensions: [("reason", reason.rawValue)], factory: factory).increment(by: count)
    }

    public func monitors(_ counts: [MonitorState: Int]) {
        let gauges = state.withLock { $0.monitorGauges }
        for (state, gauge) in gauges { gauge.record(counts[state] ?? 0) }
    }

    public func spool(reports: Int, bytes: UInt64) {
        CoreMetrics.Gauge(label: Self.spoolReports, factory: factory).record(reports)
        CoreMetrics.Gauge(label: Self.spoolBytes, factory: factory).record(Double(bytes))
    }

    /// Adds the loop iterations a monitor counted since the agent last looked.
    public func loopBusy(service: String, added: LoopBusyHistogram.Counts) {
        guard added.iterations > 0 else { return }
        let label = serviceLabel(service)
        state.withLock { state in
            var total = state.loopBusy[label] ?? LoopBusyHistogram.Counts(
                buckets: Array(repeating: 0, count: LoopBusyHistogram.bucketCount), totalNanoseconds: 0)
            for index in total.buckets.indices where index < added.buckets.count { total.buckets[index] &+= added.buckets[index] }
            total.totalNanoseconds &+= added.totalNanoseconds
            state.loopBusy[label] = total
        }
    }

    /// The Prometheus text exposition of everything recorded.
    public func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(8192)
        registry.emit(into: &buffer)
        buffer.append(contentsOf: loopBusyExposition().utf8)
        return buffer
    }

    /// `hangwatch_loop_busy_seconds`, written here rather than through swift-metrics: monitors
    /// count iterations per bucket themselves (millions per minute), and swift-metrics can only
    /// record values one at a time. Prometheus only (not sent over OTLP).
    func loopBusyExposition() -> String {
        let histograms = state.withLock { $0.loopBusy }
        guard !histograms.isEmpty else { return "" }
        var text = "# HELP \(Self.loopBusy) Busy time of each loop iteration, from monitors that publish it (HANGWATCH_LOOP_HISTOGRAM).\n"
        text += "# TYPE \(Self.loopBusy) histogram\n"
        for (service, counts) in histograms.sorted(by: { $0.key < $1.key }) {
            let label = "service=\"\(Self.escapeLabel(service))\""
            var cumulative: UInt64 = 0
            for (index, bound) in LoopBusyHistogram.bounds.enumerated() {
                cumulative &+= counts.buckets[index]
                text += "\(Self.loopBusy)_bucket{\(label),le=\"\(Self.seconds(bound))\"} \(cumulative)\n"
            }
            cumulative &+= counts.buckets[LoopBusyHistogram.bounds.count]
            text += "\(Self.loopBusy)_bucket{\(label),le=\"+Inf\"} \(cumulative)\n"
            text += "\(Self.loopBusy)_sum{\(label)} \(Double(counts.totalNanoseconds) / 1e9)\n"
            text += "\(Self.loopBusy)_count{\(label)} \(cumulative)\n"
        }
        return text
    }

    static func seconds(_ nanoseconds: UInt64) -> String {
        let value = Double(nanoseconds) / 1e9
        return value == value.rounded() ? String(Int(value)) + ".0" : String(value)
    }

    static func escapeLabel(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
