import Foundation
import HangWatch
import HangWatchReport
import HangWatchSymbolication
import Testing

/// Reading what a monitor wrote, symbolicated, without sleeping and hoping: every wait polls for
/// a condition up to a generous deadline and returns what it found.
public struct ReportDirectory {
    public let path: String
    public static let symbolicator = Symbolicator()

    /// A new directory's path, named for the test.
    public init(_ name: String = #function) {
        path = FileManager.default.temporaryDirectory.path + "/hangwatch-tests-\(getpid())-"
            + name.filter { $0.isLetter } + "-" + UUID().uuidString.prefix(6)
    }

    /// An existing directory.
    public init(path: String) {
        self.path = path
    }

    /// The reports, symbolicated. Written atomically (renamed into place), a listed report that
    /// cannot be read is the product's failure, recorded as an issue (one removed meanwhile, by
    /// retention, is not).
    public func reports() -> [HangReport] {
        let files = (try? ReportStore(directory: path).list()) ?? []
        return files.compactMap { file -> HangReport? in
            do {
                return try ReportReader().read(path: file.path)
            } catch {
                if FileManager.default.fileExists(atPath: file.path) { Issue.record("a report the reader cannot read: \(file.path): \(error)") }
                return nil
            }
        }.map { report in
            var report = report
            Self.symbolicator.symbolicate(&report)
            return report
        }
    }

    /// Polls until `condition` holds for the reports (or `timeout` passes); returns the reports.
    @discardableResult
    public func waitFor(timeout: Double = 10, _ condition: ([HangReport]) -> Bool) -> [HangReport] {
        Eventually.value(timeout: timeout, interval: 0.02, reports, until: condition)
    }

    /// Every file in the directory, with its size: what a test that found no report says.
    public func listing() -> String {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
        guard !names.isEmpty else { return "\(path): empty or missing" }
        return names.map { name in
            let size = (try? FileManager.default.attributesOfItem(atPath: path + "/" + name)[.size] as? Int) ?? nil
            return "\(name) (\(size.map(String.init) ?? "?") bytes)"
        }.joined(separator: ", ")
    }

    /// Waits until `count` reports exist and none is still ongoing.
    @discardableResult
    public func waitForFinished(_ count: Int, timeout: Double = 10) -> [HangReport] {
        waitFor(timeout: timeout) { reports in reports.count >= count && reports.allSatisfy { $0.outcome != .ongoing } }
    }

    public func configuration(threshold: Duration = .milliseconds(250)) -> HangMonitor.Configuration {
        var configuration = HangMonitor.Configuration(serviceName: "tests", threshold: threshold, reportDirectory: path)
        configuration.repeatWindow = .zero
        configuration.reportBurst = 100
        configuration.reportsPerMinute = 1000
        // In-process monitors share the test runner's cooperative pool, which tests blocking in it
        // side by side starve on purpose: the pool source has its own tests, in child processes.
        configuration.watchesConcurrencyPool = false
        return configuration
    }
}

extension HangReport {
    /// The heaviest stack's symbols, innermost first.
    public var heaviestSymbols: [String] { heaviestStack?.frames.map { $0.symbol ?? $0.address } ?? [] }

    public func heaviestStackContains(_ function: String) -> Bool {
        heaviestSymbols.contains { $0.contains(function) }
    }
}

/// A test thread's run loop, watched by a started and attached monitor that writes into its own
/// directory (`prepare`: done to the loop's thread before the monitor starts). Stop the loop when
/// done (`defer { loop.stop() }`).
package func startMonitoredLoop(
    _ name: String = #function, threshold: Duration = .milliseconds(250),
    configure: (inout HangMonitor.Configuration) -> Void = { _ in }, prepare: (LoopThread) throws -> Void = { _ in }
) throws -> (directory: ReportDirectory, loop: LoopThread, monitor: HangMonitor) {
    let directory = ReportDirectory(name)
    var configuration = directory.configuration(threshold: threshold)
    configure(&configuration)
    let loop = LoopThread()
    do { try prepare(loop) } catch {
        loop.stop()
        throw error
    }
    let monitor = try HangMonitor(configuration: configuration)
    try monitor.start(runLoop: loop.runLoop)
    guard Eventually.holds(timeout: 5, { monitor.isAttached }) else {
        loop.stop()
        throw HangMonitorError.captureUnavailable(reason: "the test loop did not attach within 5 s")
    }
    return (directory, loop, monitor)
}
