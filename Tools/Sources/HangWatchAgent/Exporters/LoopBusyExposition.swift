import Foundation
import HangWatchReport

/// `hangwatch_loop_busy_seconds`, `hangwatch_loop_lag_seconds` and `hangwatch_pool_start_delay_seconds`, written as Prometheus
/// text rather than through swift-metrics: monitors count per bucket themselves (millions of
/// iterations per minute), and swift-metrics can only record values one at a time. Beside them the
/// gauge `hangwatch_loop_busy_ratio`, as text too so that a service whose monitors went away has
/// no series left behind. Prometheus only (not sent over OTLP).
enum LoopBusyExposition {
    /// What the exposition holds by `service` label, as of the last pass.
    struct ByLabel: Sendable {
        var loop: [String: LoopBusyHistogram.Counts] = [:]
        var pool: [String: LoopBusyHistogram.Counts] = [:]
        var ratio: [String: Double] = [:]
        var lag: [String: LoopBusyHistogram.Counts] = [:]
    }

    /// The `source` label of `hangwatch_loop_busy_ratio` and `hangwatch_loop_lag_seconds`: the kinds of source that publish them (only
    /// run loops keep a flight recorder yet).
    enum Source: String, CaseIterable {
        case runLoop = "runloop"
    }

    /// The ratios of `bySpoolService` by their `service` label: the highest of those that share one
    /// (`_other`), as each is the busiest loop's.
    static func byLabel(_ bySpoolService: [String: Double], label: (String) -> String) -> [String: Double] {
        var ratios: [String: Double] = [:]
        for (service, ratio) in bySpoolService.sorted(by: { $0.key < $1.key }) {
            ratios[label(service)] = max(ratios[label(service)] ?? 0, ratio)
        }
        return ratios
    }

    static let loopBusyRatioHelp =
        "Busy share of the busiest monitored run loop over its flight recorder's window (leadUpWindow, default 5 s) as of its last heartbeat, by service and source."

    /// The gauge's text: one series per service label, `source="runloop"`; nothing when no monitor publishes one.
    static func ratioText(_ ratios: [String: Double], name: String = AgentMetrics.loopBusyRatio) -> String {
        guard !ratios.isEmpty else { return "" }
        var text = "# HELP \(name) \(loopBusyRatioHelp)\n"
        text += "# TYPE \(name) gauge\n"
        for (service, ratio) in ratios.sorted(by: { $0.key < $1.key }) {
            text += "\(name){service=\"\(escapeLabel(service))\",source=\"\(Source.runLoop.rawValue)\"} \(ratioValue(ratio))\n"
        }
        return text
    }

    /// A ratio to 4 decimals, clamped to 0...1.
    static func ratioValue(_ ratio: Double) -> String {
        let clamped = ratio.isFinite ? min(1, max(0, ratio)) : 0
        return String((clamped * 10_000).rounded() / 10_000)
    }
    /// The totals of `bySpoolService` summed by their `service` label (`label` maps a spool
    /// directory to it: several may share `_other`).
    static func byLabel(
        _ bySpoolService: [String: LoopBusyHistogram.Counts], label: (String) -> String
    ) -> [String: LoopBusyHistogram.Counts] {
        var totals: [String: LoopBusyHistogram.Counts] = [:]
        for (service, counts) in bySpoolService.sorted(by: { $0.key < $1.key }) where counts.iterations > 0 {
            totals[label(service), default: .zero].add(counts)
        }
        return totals
    }

    static let loopBusyHelp = "Busy time of each loop iteration, from monitors that publish it (HANGWATCH_LOOP_HISTOGRAM)."
    static let loopLagHelp =
        "Busy pieces of the monitored run loops (the spans the hang threshold is compared with, on the 4 ms coarse clock), from their flight recorders (leadUpWindow above 0), by service and source."
    static let poolStartDelayHelp =
        "How late Swift's cooperative pool started the monitor's probe job, once per threshold (a starved pool: the probe waits)."

    /// A histogram's text: one per service label, with `source` when given.
    static func text(
        _ histograms: [String: LoopBusyHistogram.Counts], name: String = AgentMetrics.loopBusy, help: String = loopBusyHelp,
        source: Source? = nil
    ) -> String {
        guard !histograms.isEmpty else { return "" }
        var text = "# HELP \(name) \(help)\n"
        text += "# TYPE \(name) histogram\n"
        for (service, counts) in histograms.sorted(by: { $0.key < $1.key }) {
            let label = "service=\"\(escapeLabel(service))\"" + (source.map { ",source=\"\($0.rawValue)\"" } ?? "")
            var cumulative: UInt64 = 0
            for (index, bound) in LoopBusyHistogram.bounds.enumerated() {
                cumulative &+= index < counts.buckets.count ? counts.buckets[index] : 0
                text += "\(name)_bucket{\(label),le=\"\(seconds(bound))\"} \(cumulative)\n"
            }
            let last = LoopBusyHistogram.bounds.count
            cumulative &+= last < counts.buckets.count ? counts.buckets[last] : 0
            text += "\(name)_bucket{\(label),le=\"+Inf\"} \(cumulative)\n"
            text += "\(name)_sum{\(label)} \(Double(counts.totalNanoseconds) / 1e9)\n"
            text += "\(name)_count{\(label)} \(cumulative)\n"
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

extension LoopBusyHistogram.Counts {
    static var zero: Self { Self(buckets: Array(repeating: 0, count: LoopBusyHistogram.bucketCount), totalNanoseconds: 0) }

    /// Adds `other`'s iterations, bucket by bucket (wrapping, as the monitors' counters do).
    mutating func add(_ other: Self) {
        for index in buckets.indices where index < other.buckets.count { buckets[index] &+= other.buckets[index] }
        totalNanoseconds &+= other.totalNanoseconds
    }
}
