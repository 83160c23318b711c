import Foundation
import HangWatch
import HangWatchReport
import Synchronization
import HangWatchTestSupport
import Testing

/// Scopes: a thread with a loop of its own declares its work; the same watchdog, capture and
/// reports as a run loop's.
@Suite(.serialized) struct ScopeTests {
    /// Runs `body` on a new thread that first starts watching scopes with `monitor`; waits for it.
    static func onOwnThread(_ monitor: HangMonitor, _ body: @escaping @Sendable (HangMonitor) -> Void) throws {
        let done = DispatchSemaphore(value: 0)
        let started = Mutex<(any Error)?>(nil)
        let thread = Thread {
            do {
                guard ThreadName.setCurrent("scope-loop") else { throw CocoaError(.featureUnsupported) }
                try monitor.startWatchingScopes()
                body(monitor)
            } catch {
                started.withLock { $0 = error }
            }
            done.signal()
        }
        thread.start()
        done.wait()
        if let error = started.withLock({ $0 }) { throw error }
    }

    @Test func aScopeThatOverrunsIsReportedOnceWithTheCulprit() throws {
        let directory = ReportDirectory()
        let monitor = try HangMonitor(configuration: directory.configuration(threshold: .milliseconds(200)))
        defer { monitor.stop() }
        try Self.onOwnThread(monitor) { monitor in
            // A loop of short work items, then one that takes too long.
            for _ in 0..<50 {
                monitor.enterWork()
                _ = spinInTestHang(milliseconds: 1)
                monitor.leaveWork()
            }
            monitor.enterWork()
            _ = hangInDeclaredScope(milliseconds: 600)
            monitor.leaveWork()
        }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        #expect(reports.count == 1 && directory.reports().count == 1)
        let report = try #require(reports.first)
        #expect(report.source == "scope")
        #expect(report.activity == "work")
        #expect(report.thread.name == "scope-loop")
        #expect(report.durationMs >= 550 && report.durationMs < 2000, "\(report.durationMs)")
        #expect(report.heaviestStackContains("hangInDeclaredScope"), "\(report.heaviestSymbols)")
    }

    @Test func aDeadlineIsTheScopesThresholdAndNestedScopesAreOneStretch() throws {
        let directory = ReportDirectory()
        let monitor = try HangMonitor(configuration: directory.configuration(threshold: .seconds(5)))
        defer { monitor.stop() }
        try Self.onOwnThread(monitor) { monitor in
            monitor.watch(deadline: .milliseconds(100)) {
                monitor.watch {
                    _ = hangInDeclaredScope(milliseconds: 200)
                }
                _ = hangInDeclaredScope(milliseconds: 200)
            }
            // Back to the configured 5 s: 300 ms is fine.
            monitor.watch { _ = hangInDeclaredScope(milliseconds: 300) }
        }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        #expect(directory.reports().count == 1)
        let report = try #require(reports.first)
        #expect(report.thresholdMs == 100)
        // One stretch: the inner scope's end did not end the hang.
        #expect(report.durationMs >= 350, "\(report.durationMs)")
        #expect(monitor.threshold == .seconds(5))
    }

    @Test func callsFromAnotherThreadAreIgnored() throws {
        let directory = ReportDirectory()
        let monitor = try HangMonitor(configuration: directory.configuration(threshold: .milliseconds(100)))
        defer { monitor.stop() }
        try Self.onOwnThread(monitor) { _ in }
        // This thread is not the scope thread: its long "work" is not watched.
        monitor.enterWork()
        _ = hangInDeclaredScope(milliseconds: 400)
        monitor.leaveWork()
        monitor.stop()
        #expect(directory.reports().isEmpty)
    }

    /// The value `startWatchingScopes()` returns marks the thread's work like the monitor's calls.
    @Test func theScopesAStartReturnsMarkItsThreadsWork() throws {
        let directory = ReportDirectory()
        let monitor = try HangMonitor(configuration: directory.configuration(threshold: .milliseconds(200)))
        defer { monitor.stop() }
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            guard let scopes = try? monitor.startWatchingScopes() else { return }
            scopes.watch { _ = hangInDeclaredScope(milliseconds: 500) }
        }
        thread.start()
        done.wait()
        let reports = directory.waitForFinished(1)
        #expect(reports.count == 1 && reports.first?.source == "scope", "\(reports.map(\.source))")
        #expect(reports.first?.heaviestStackContains("hangInDeclaredScope") == true)
    }

    /// Scope calls that can mark nothing (the monitor watches a run loop; or the caller is not the
    /// scopes' thread) do nothing, and say so once each in the log, not at every call.
    @Test func scopeCallsThatCanMarkNothingSaySoOnceInTheLog() throws {
        let directory = ReportDirectory()
        let log = LogRecorder()
        let loop = LoopThread()
        defer { loop.stop() }
        let monitor = try HangMonitor(configuration: directory.configuration(threshold: .milliseconds(200)), logger: log.logger)
        try monitor.start(runLoop: loop.runLoop)
        for _ in 0..<3 { monitor.watch { monitor.enterWork(); monitor.leaveWork() } }
        let anotherSource = log.all.filter { $0.level == .warning && $0.message.hasPrefix("scope calls do nothing: this monitor watches a runloop source") }
        #expect(anotherSource.count == 1, "\(log.all.map(\.message))")
        monitor.stop()

        // Scopes of another thread, called from this one. Entered for real, they would never be
        // left: the monitor would report a hang a threshold later.
        let started = DispatchSemaphore(value: 0), checked = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        let thread = Thread {
            _ = try? monitor.startWatchingScopes()
            started.signal()
            checked.wait()
            // The control: the scopes' own thread, in a scope past the threshold, is reported.
            monitor.watch { _ = hangInDeclaredScope(milliseconds: 500) }
            done.signal()
        }
        thread.start()
        started.wait()
        for _ in 0..<3 { monitor.enterWork() }
        let anotherThread = log.all.filter { $0.level == .warning && $0.message.hasPrefix("scope calls from another thread") }
        #expect(anotherThread.count == 1, "\(log.all.map(\.message))")
        // Three thresholds: a scope those calls had entered would have been detected by now.
        usleep(600_000)
        #expect(monitor.statistics.hangsDetected == 0, "\(monitor.statistics)")
        checked.signal()
        done.wait()
        let reports = directory.waitForFinished(1)
        monitor.stop()
        #expect(reports.count == 1 && reports.first?.heaviestStackContains("hangInDeclaredScope") == true, "\(reports.map(\.heaviestSymbols))")
        #expect(directory.reports().count == 1, "only the control's hang: \(directory.listing())")
    }
}
