import CoreMetrics
import Prometheus

/// A swift-metrics factory over a Prometheus registry that gives every metric its `# HELP` line
/// and its own histogram buckets (swift-prometheus' own factory registers metrics without help
/// text, which `promtool check metrics` flags).
struct PrometheusMetricsCatalog: MetricsFactory {
    struct Entry {
        var help: String
        var durationBuckets: [Duration] = []
        var valueBuckets: [Double] = []
    }

    let registry: PrometheusCollectorRegistry
    let entries: [String: Entry]

    private func descriptor(_ label: String) -> MetricNameDescriptor {
        // unitName is empty: the catalogue's names already end in their unit.
        MetricNameDescriptor(metricName: label, unitName: "", helpText: entries[label]?.help ?? "")
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: descriptor(label), labels: dimensions) }
        return registry.makeValueHistogram(
            descriptor: descriptor(label), labels: dimensions, buckets: entries[label]?.valueBuckets ?? [0.5, 1])
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(
            descriptor: descriptor(label), labels: dimensions, buckets: entries[label]?.durationBuckets ?? [.seconds(1)])
    }

    // The agent keeps its metrics for its lifetime.
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}
