import CoreFoundation
import Foundation
import HangWatch
import HangWatchReport

/// HangWatch as shipped, as one of the compared variants.
final class HangWatchVariant: Baseline {
    let monitor: HangMonitor
    let directory: String

    init(threshold: Duration = .milliseconds(250), name: String = "bench", loopHistogram: Bool = false, pool: Bool = true) throws {
        directory = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-\(getpid())-\(name)"
        try? FileManager.default.removeItem(atPath: directory)
        var configuration = HangMonitor.Configuration(serviceName: "bench", threshold: threshold, reportDirectory: directory)
        configuration.repeatWindow = .zero
        configuration.reportBurst = 10_000
        configuration.reportsPerMinute = 10_000
        configuration.maxReports = 100_000
        configuration.maxReportBytes = 1 << 30
        configuration.loopHistogram = loopHistogram
        configuration.watchesConcurrencyPool = pool
        monitor = try HangMonitor(configuration: configuration)
    }

    func attach(to runLoop: RunLoop, _ cfRunLoop: CFRunLoop) {
        do {
            try monitor.start(runLoop: runLoop)
        } catch {
            fatalError("cannot start the monitor: \(error)")
        }
        while !monitor.isAttached { usleep(1000) }
    }

    func detach() {
        monitor.stop()
    }

    /// Every report written so far.
    func reports() -> [HangReport] {
        let files = (try? ReportStore(directory: directory).list()) ?? []
        return files.compactMap { try? ReportReader().read(path: $0.path) }
    }

    func removeReports() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
