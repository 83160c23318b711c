import Foundation
import HangWatch
import HangWatchReport
import HangWatchSymbolication

/// Reading what a monitor wrote, symbolicated, without sleeping and hoping: every wait polls for
/// a condition up to a generous deadline and returns what it found.
struct ReportDirectory {
    let path: String
    static let symbolicator = Symbolicator()

    init(_ name: String = #function) {
        path = FileManager.default.temporaryDirectory.path + "/hangwatch-tests-\(getpid())-"
            + name.filter { $0.isLetter } + "-" + UUID().uuidString.prefix(6)
    }

    func reports() -> [HangReport] {
        let files = (try? ReportStore(directory: path).list()) ?? []
        return files.compactMap { try? ReportReader().read(path: $0.path) }.map { report in
            var report = report
            Self.symbolicator.symbolicate(&report)
            return report
        }
    }

    /// Polls until `condition` holds for the reports (or `timeout` passes); returns the reports.
    @discardableResult
    func waitFor(timeout: Double = 10, _ condition: ([HangReport]) -> Bool) -> [HangReport] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let current = reports()
            if condition(current) || Date() > deadline { return current }
            usleep(20_000)
        }
    }

    /// Waits until `count` reports exist and none is still ongoing.
    @discardableResult
    func waitForFinished(_ count: Int, timeout: Double = 10) -> [HangReport] {
        waitFor(timeout: timeout) { reports in reports.count >= count && reports.allSatisfy { $0.outcome != .ongoing } }
    }

    func configuration(threshold: Duration = .milliseconds(250)) -> HangMonitor.Configuration {
        var configuration = HangMonitor.Configuration(serviceName: "tests", threshold: threshold, reportDirectory: path)
        configuration.repeatWindow = .zero
        configuration.reportBurst = 100
        configuration.reportsPerMinute = 1000
        return configuration
    }
}

extension HangReport {
    /// The heaviest stack's symbols, innermost first.
    var heaviestSymbols: [String] { heaviestStack?.frames.map { $0.symbol ?? $0.address } ?? [] }

    func heaviestStackContains(_ function: String) -> Bool {
        heaviestSymbols.contains { $0.contains(function) }
    }
}

/// A test thread's run loop, watched by a started and attached monitor that writes into its own
/// directory. Stop the loop when done (`defer { loop.stop() }`).
func startMonitoredLoop(
    _ name: String = #function, threshold: Duration = .milliseconds(250),
    configure: (inout HangMonitor.Configuration) -> Void = { _ in }
) throws -> (directory: ReportDirectory, loop: LoopThread, monitor: HangMonitor) {
    let directory = ReportDirectory(name)
    var configuration = directory.configuration(threshold: threshold)
    configure(&configuration)
    let loop = LoopThread()
    let monitor = try HangMonitor(configuration: configuration)
    try monitor.start(runLoop: loop.runLoop)
    let deadline = Date().addingTimeInterval(5)
    while !monitor.isAttached && Date() < deadline { usleep(5000) }
    guard monitor.isAttached else {
        loop.stop()
        throw HangMonitorError.captureUnavailable(reason: "the test loop did not attach within 5 s")
    }
    return (directory, loop, monitor)
}
