import CoreMetrics
import HangWatchReport
import Synchronization

/// The agent's metrics (names and labels: docs/fleet.md), recorded through swift-metrics into one
/// `factory` (a Prometheus registry, or the OTLP backend). Nothing here touches the process-wide
/// `MetricsSystem`, so an embedding program keeps its own.
///
/// Labels stay bounded: `service` is a spool directory (at most `maxServices` distinct values,
/// the rest are `_other`), `version` the service's release (at most `maxVersionsPerService` a
/// service, `maxReleases` in all; the rest are `_other`), `severity`, `reason` and `state` are
/// fixed sets. Never a pid, stack or report id.
final class AgentMetrics: Sendable {
    static let hangsTotal = "hangwatch_hangs_total"
    static let hangsByVerdict = "hangwatch_hangs_by_verdict_total"
    static let throttledSeconds = "hangwatch_throttled_seconds_total"
    static let hangDuration = "hangwatch_hang_duration_seconds"
    static let onCpuRatio = "hangwatch_hang_oncpu_ratio"
    static let reportsDropped = "hangwatch_reports_dropped_total"
    static let monitors = "hangwatch_monitors"
    static let spoolBytes = "hangwatch_spool_size_bytes"
    static let spoolReports = "hangwatch_spool_reports"
    static let loopBusy = "hangwatch_loop_busy_seconds"
    static let loopBusyRatio = "hangwatch_loop_busy_ratio"
    static let loopLag = "hangwatch_loop_lag_seconds"
    static let poolStartDelay = "hangwatch_pool_start_delay_seconds"
    static let poolStarvations = "hangwatch_pool_starvations_total"
    static let callsCutShort = "hangwatch_capture_calls_cut_short_total"
    static let deadlocks = "hangwatch_deadlocks_total"
    static let buildInfo = "hangwatch_build_info"
    static let monitoredSeconds = "hangwatch_monitored_seconds_total"

    /// Hang durations: from a quarter second (the default threshold) to five minutes.
    static let durationBuckets: [Duration] = [
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .milliseconds(5000),
        .seconds(10), .seconds(30), .seconds(60), .seconds(300),
    ]
    static let ratioBuckets: [Double] = [0.1, 0.25, 0.5, 0.75, 0.9, 1]

    static let maxServices = 256
    static let maxVersionsPerService = 32
    static let maxReleases = 1024

    private let factory: any MetricsFactory
    private let state = Mutex(State())

    private struct State {
        var services: Set<String> = []
        /// The versions labelled so far, by service label.
        var versions: [String: Set<String>] = [:]
        var releaseCount = 0
        /// Releases whose hang series exist (at 0 until their first hang).
        var seen: Set<ServiceRelease> = []
        /// `service` labels whose verdict and throttled-time series exist.
        var servicesSeen: Set<String> = []
        /// The monitored seconds counters were last brought up to, by release.
        var monitoredSeconds: [ServiceRelease: Double] = [:]
        var monitorGauges: [MonitorState: CoreMetrics.Gauge] = [:]
        /// The running totals counters were last brought up to, by metric and `service` label.
        var totals: [String: [String: UInt64]] = [:]
    }

    init(version: String, factory: any MetricsFactory) {
        self.factory = factory
        CoreMetrics.Gauge(label: Self.buildInfo, dimensions: [("version", version)], factory: factory).record(1)
        // Series that exist from the start, so rate() and alerts see a 0 before the first event.
        for reason in DropReason.allCases {
            CoreMetrics.Counter(label: Self.reportsDropped, dimensions: [("reason", reason.rawValue)], factory: factory).increment(by: 0)
        }
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

    /// The `service` and `version` labels of `release`: bounded, never empty.
    func labels(_ release: ServiceRelease) -> [(String, String)] {
        let service = serviceLabel(release.service)
        let version = release.version.isEmpty ? MonitoredTime.unversioned : release.version
        let label = state.withLock { state -> String in
            if state.versions[service]?.contains(version) == true { return version }
            guard state.versions[service, default: []].count < Self.maxVersionsPerService, state.releaseCount < Self.maxReleases
            else { return "_other" }
            state.versions[service, default: []].insert(version)
            state.releaseCount += 1
            return version
        }
        return [("service", service), ("version", label)]
    }

    /// Makes a release's hang and deadlock series exist (at 0) as soon as a monitor of it is seen
    /// watching, so rate() and alerts see a 0 before its first hang.
    func releaseSeen(_ release: ServiceRelease) {
        guard state.withLock({ $0.seen.insert(release).inserted }) else { return }
        let labels = labels(release)
        for severity in FinishedHang.Severity.allCases {
            CoreMetrics.Counter(label: Self.hangsTotal, dimensions: labels + [("severity", severity.rawValue)], factory: factory)
                .increment(by: 0)
        }
        CoreMetrics.Counter(label: Self.deadlocks, dimensions: labels, factory: factory).increment(by: 0)
        let service = serviceLabel(release.service)
        guard state.withLock({ $0.servicesSeen.insert(service).inserted }) else { return }
        for verdict in HangReport.Verdict.allCases where verdict != .debugger {
            CoreMetrics.Counter(label: Self.hangsByVerdict, dimensions: [("service", service), ("verdict", verdict.rawValue)], factory: factory)
                .increment(by: 0)
        }
        CoreMetrics.FloatingPointCounter(label: Self.throttledSeconds, dimensions: [("service", service)], factory: factory).increment(by: 0)
    }

    /// A report of `release` newly says a thread is deadlocked (`hangwatch_deadlocks_total`).
    func deadlock(_ release: ServiceRelease) {
        CoreMetrics.Counter(label: Self.deadlocks, dimensions: labels(release), factory: factory).increment(by: 1)
    }

    func record(_ hang: FinishedHang) {
        let service = serviceLabel(hang.service)
        let release = labels(ServiceRelease(service: hang.service, version: hang.version))
        CoreMetrics.Counter(label: Self.hangsTotal, dimensions: release + [("severity", hang.severity.rawValue)], factory: factory)
            .increment(by: hang.count)
        CoreMetrics.Counter(label: Self.hangsByVerdict, dimensions: [("service", service), ("verdict", hang.verdictKind.rawValue)], factory: factory)
            .increment(by: hang.count)
        if hang.throttledSeconds > 0 {
            CoreMetrics.FloatingPointCounter(label: Self.throttledSeconds, dimensions: [("service", service)], factory: factory)
                .increment(by: hang.throttledSeconds)
        }
        let duration = CoreMetrics.Timer(label: Self.hangDuration, dimensions: [("service", service)], factory: factory)
        let ratio = hang.onCpuRatio.map { _ in CoreMetrics.Recorder(label: Self.onCpuRatio, dimensions: [("service", service)], factory: factory) }
        for _ in 0..<min(hang.count, 10_000) {
            duration.recordSeconds(hang.durationSeconds)
            if let ratio, let value = hang.onCpuRatio { ratio.record(value) }
        }
    }

    func dropped(_ reason: DropReason, count: Int = 1) {
        guard count > 0 else { return }
        CoreMetrics.Counter(label: Self.reportsDropped, dimensions: [("reason", reason.rawValue)], factory: factory).increment(by: count)
    }

    func monitors(_ counts: [MonitorState: Int]) {
        let gauges = state.withLock { $0.monitorGauges }
        for (state, gauge) in gauges { gauge.record(counts[state] ?? 0) }
    }

    func spool(reports: Int, bytes: UInt64) {
        CoreMetrics.Gauge(label: Self.spoolReports, factory: factory).record(reports)
        CoreMetrics.Gauge(label: Self.spoolBytes, factory: factory).record(Double(bytes))
    }

    /// Everything a pass's gauges say, but the loop histograms (Prometheus only).
    func publish(_ gauges: SpoolGauges) {
        // A service's series exist from its directory's first sight (for hangs of reports that name
        // no version), each release's from its monitors' (`releaseSeen`).
        for service in gauges.services { releaseSeen(ServiceRelease(service: service, version: MonitoredTime.unversioned)) }
        for release in gauges.monitoredSeconds.keys.sorted() { releaseSeen(release) }
        countSeconds(upTo: gauges.monitoredSeconds)
        spool(reports: gauges.reports, bytes: gauges.bytes)
        monitors(gauges.monitors)
        count(Self.poolStarvations, upTo: gauges.poolStarvations)
        count(Self.callsCutShort, upTo: gauges.callsCutShort)
    }

    /// Brings `hangwatch_monitored_seconds_total` of each release up to its running total.
    private func countSeconds(upTo totals: [ServiceRelease: Double]) {
        for (release, total) in totals.sorted(by: { $0.key < $1.key }) {
            let added = state.withLock { state -> Double? in
                let previous = state.monitoredSeconds[release]
                guard previous.map({ total > $0 }) ?? true else { return nil }
                state.monitoredSeconds[release] = total
                return total - (previous ?? 0)
            }
            guard let added else { continue }
            CoreMetrics.FloatingPointCounter(label: Self.monitoredSeconds, dimensions: labels(release), factory: factory)
                .increment(by: added)
        }
    }

    /// Brings the counter `label` of each service up to its running total (a series appears, at
    /// 0, with the first total its service publishes). Services past `maxServices` share
    /// `_other`, whose counter gets each one's increments.
    private func count(_ label: String, upTo totals: [String: UInt64]) {
        for (service, total) in totals.sorted(by: { $0.key < $1.key }) {
            // What to add: all of it the first time (the series is made, at 0 when the total is);
            // then only a rise. Nil: nothing to do.
            let added = state.withLock { state -> UInt64? in
                let previous = state.totals[label]?[service]
                guard previous.map({ total > $0 }) ?? true else { return nil }
                state.totals[label, default: [:]][service] = total
                return total - (previous ?? 0)
            }
            guard let added else { continue }
            CoreMetrics.Counter(label: label, dimensions: [("service", serviceLabel(service))], factory: factory)
                .increment(by: Int(clamping: added))
        }
    }
}
