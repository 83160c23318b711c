import HangWatchReport
import Synchronization

/// The agent's side of its exporters: hands every event to each of them, and holds a hang back
/// from those that want names (a log record with raw addresses helps no one) until its report
/// has been named or will not be. Without an exporter that waits for names, nothing is held.
///
/// `hangFinished`, `namesSettled`, `publish` and `shutdown` are called on the agent's worker;
/// `reportsDropped` from any thread.
final class ExportHub: Sendable {
    let exporters: [any HangExporter]
    /// Hangs held for names, by report path.
    private let held = Mutex<[String: FinishedHang]>([:])

    init(_ exporters: [any HangExporter]) {
        self.exporters = exporters
    }

    /// Whether some exporter would wait for names (and so hangs are worth holding).
    var holdsForNames: Bool { exporters.contains { $0.waitsForNames } }

    /// A hang finished; `namesPending`: its report is about to be named.
    func hangFinished(_ hang: FinishedHang, namesPending: Bool) {
        for exporter in exporters where !exporter.waitsForNames { exporter.hangFinished(hang) }
        guard holdsForNames else { return }
        if namesPending {
            // A newer hang of the same report replaces one still held (as before the split).
            held.withLock { $0[hang.reportPath] = hang }
        } else {
            for exporter in exporters where exporter.waitsForNames { exporter.hangFinished(hang) }
        }
    }

    /// The report at `path` was named (`report`: as named), will not be, or is gone (nil): a
    /// hang held for it goes out, with the new names when there are some.
    func deadlockFound(_ release: ServiceRelease) {
        for exporter in exporters { exporter.deadlockFound(release) }
    }

    func namesSettled(reportPath path: String, named report: HangReport?) {
        guard let hang = held.withLock({ $0.removeValue(forKey: path) }) else { return }
        let sent = report.map { hang.renamed(from: $0) } ?? hang
        for exporter in exporters where exporter.waitsForNames { exporter.hangFinished(sent) }
    }

    func reportsDropped(_ reason: DropReason, count: Int = 1) {
        guard count > 0 else { return }
        for exporter in exporters { exporter.reportsDropped(reason, count: count) }
    }

    func publish(_ gauges: SpoolGauges) {
        for exporter in exporters { exporter.publish(gauges) }
    }

    func shutdown() async {
        for exporter in exporters { await exporter.shutdown() }
    }
}
