import Foundation
@testable import HangWatch
import HangWatchReport
import Synchronization
import HangWatchTestSupport
import Testing

/// Waits (polling, up to a generous deadline) until the monitored thread has attached.
func waitUntilAttached(_ monitor: HangMonitor, timeout: Double = 5) throws {
    try #require(Eventually.holds(timeout: timeout) { monitor.isAttached })
}

/// End to end: a real run loop on a test thread, real observers, real signals, real files: what
/// only real threads show. (The watchdog's decisions themselves are `WatchdogTests`, on scripted
/// time.) Serialized so hangs do not compete for the two CPUs and distort each other's timing.
@Suite(.serialized) struct HangMonitorTests {
    @Test func reportsEachInjectedHangOnceWithItsDurationAndCulprit() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }

        for milliseconds in [400, 600, 900] {
            loop.afterDelay(0.05) { _ = hangInTimerCallback(milliseconds: milliseconds) }
            let expected = directory.reports().count + 1
            directory.waitForFinished(expected)
            try waitUntilAttached(monitor)
        }
        monitor.stop()
        let reports = directory.reports().sorted { $0.startedAt < $1.startedAt }
        try #require(reports.count == 3)
        for (report, milliseconds) in zip(reports, [400.0, 600, 900]) {
            // Generous bounds: the true duration, give or take scheduling and the coarse clock.
            #expect(report.durationMs >= milliseconds - 30 && report.durationMs <= milliseconds + 120, "\(report.durationMs)")
            #expect(report.heaviestStackContains("hangInTimerCallback"), "\(report.heaviestSymbols)")
            #expect(report.outcome == .recovered)
            #expect(report.activity == "afterWaiting")
            // A computing thread is on a CPU or waiting for one (other tests' load may starve it).
            #expect(report.context.verdict == .computing || report.context.verdict == .starved)
            #expect((report.context.onCpuRatio ?? 0) + (report.context.runQueueRatio ?? 0) >= 0.8)
            #expect(report.samples.count >= Int((milliseconds - 250) / 50) - 2)
            #expect(report.capture.errors.isEmpty)
        }
        #expect(monitor.statistics.hangsDetected == 3)
        #expect(monitor.statistics.reportsWritten == 3)
    }

    @Test func theObserversSeeSleepAsIdleAndEachIterationAsAStretchOfItsOwn() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        // The loop sleeps, then runs four timers 100 ms apart: three short bursts and a hang. Had
        // sleep counted as busy, or the bursts run together, there would be a report before the
        // hang's, or one that began before it.
        for (index, delay) in [0.4, 0.5, 0.6].enumerated() {
            loop.afterDelay(delay) { _ = spinInTestHang(milliseconds: 60 + 10 * index) }
        }
        loop.afterDelay(0.7) { _ = hangInTimerCallback(milliseconds: 400) }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        try #require(reports.count == 1 && directory.reports().count == 1)
        #expect(reports[0].heaviestStackContains("hangInTimerCallback"), "\(reports[0].heaviestSymbols)")
        #expect(reports[0].durationMs >= 370 && reports[0].durationMs <= 520, "\(reports[0].durationMs)")
        #expect(monitor.statistics.hangsDetected == 1)
    }

    @Test func aHangInABlockOfTheNextIterationIsStuckAfterBeforeSources() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        // A block performed from a block runs at the top of the next iteration, after
        // beforeSources (a block that wakes a sleeping loop runs after afterWaiting). The loop must
        // be asleep when the first block comes: one that lands while the loop still finishes the
        // iteration that attached the monitor runs at the top of the next one, and the block it
        // performs waits for the loop's next wake (afterWaiting: seen once in a CI run).
        loop.iteration {}
        loop.perform { RunLoop.current.perform { _ = hangInPerformedBlock(milliseconds: 600) } }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        let report = try #require(reports.first)
        #expect(report.activity == "beforeSources")
        #expect(report.heaviestStackContains("hangInPerformedBlock"), "\(report.heaviestSymbols)")
    }

    @Test func aHangInsideANestedRunIsReported() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        loop.perform {
            // A nested run of the same mode: idle for a while, then one of its timers hangs.
            let timer = Timer(fire: Date(timeIntervalSinceNow: 0.3), interval: 0, repeats: false) { _ in _ = hangInNestedRun(milliseconds: 600) }
            RunLoop.current.add(timer, forMode: .default)
            _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(1.2))
        }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        try #require(reports.count == 1)
        let report = reports[0]
        #expect(report.heaviestStackContains("hangInNestedRun"), "\(report.heaviestSymbols)")
        // The nested loop's idle time is not part of the hang.
        #expect(report.durationMs >= 570 && report.durationMs <= 720, "\(report.durationMs)")
    }

    @Test func aHangInACustomModeIsReportedWithItsMode() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        loop.perform {
            let mode = RunLoop.Mode("TestModalMode")
            let timer = Timer(fire: Date(timeIntervalSinceNow: 0.4), interval: 0, repeats: false) { _ in _ = hangInCustomMode(milliseconds: 600) }
            RunLoop.current.add(timer, forMode: mode)
            let end = Date().addingTimeInterval(1.3)
            while Date() < end && RunLoop.current.run(mode: mode, before: end) {}
        }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        try #require(reports.count == 1, "a nested run that sleeps in a custom mode is not a hang; its timer is")
        let report = reports[0]
        #expect(report.mode == "TestModalMode")
        #expect(report.heaviestStackContains("hangInCustomMode"), "\(report.heaviestSymbols)")
        #expect(report.durationMs >= 570 && report.durationMs <= 720, "\(report.durationMs)")
    }

    @Test func aThreadThatBlocksTheCaptureSignalIsReportedWithACaptureError() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        let signal = CaptureSignal.defaultSignal
        loop.perform { _ = hangWithSignalsBlocked(milliseconds: 600, signal: signal) }
        let blocked = directory.waitForFinished(1)
        try #require(blocked.count == 1)
        #expect(blocked[0].capture.errors.map(\.kind) == ["signal blocked"])
        #expect(blocked[0].heaviestStack == nil)
        // The watchdog is alive: the next hang is captured normally.
        loop.perform { _ = hangInPerformedBlock(milliseconds: 500) }
        let all = directory.waitForFinished(2)
        monitor.stop()
        let second = try #require(all.max { $0.startedAt < $1.startedAt })
        #expect(second.heaviestStackContains("hangInPerformedBlock"), "\(second.heaviestSymbols)")
    }

    @Test func aThreadBlockedOnALockIsReportedOffCPUInFutex() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        let lock = NSLock()
        lock.lock()
        loop.perform { hangWaitingForLock(lock) }
        // Held until the hang has been sampled a few times (the provisional report is rewritten
        // as its samples double).
        let provisional = directory.waitFor { $0.first.map { $0.outcome == .ongoing && $0.samples.count >= 4 } ?? false }
        #expect(provisional.first?.samples.count ?? 0 >= 4)
        lock.unlock()
        let reports = directory.waitForFinished(1)
        monitor.stop()
        let report = try #require(reports.first)
        #expect(report.context.verdict == .blocked)
        #expect(report.context.blockedIn == "futex")
        #expect((report.context.onCpuRatio ?? 1) < 0.2)
        #expect(report.samples.contains { $0.method == "syscall" })
        #expect(report.heaviestStackContains("hangWaitingForLock"), "\(report.heaviestSymbols)")
    }

    @Test func capturingNeverCutsASleepShort() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        let slept = Mutex<Double>(0)
        loop.sync { slept.withLock { $0 = hangInSleep(milliseconds: 700) } }
        let reports = directory.waitForFinished(1)
        monitor.stop()
        #expect(slept.withLock { $0 } >= 699)
        let report = try #require(reports.first)
        #expect(report.context.blockedIn == "clock_nanosleep")
        // No signal while the thread slept; at most the last sample may race with its waking up.
        #expect(report.samples.filter { $0.syscall == "clock_nanosleep" }.allSatisfy { $0.method != "signal" })
        #expect(report.samples.filter { $0.method == "signal" }.count <= 1)
        #expect(report.heaviestStackContains("hangInSleep"), "\(report.heaviestSymbols)")
    }

    @Test func startStopStartKeepsWorking() throws {
        let directory = ReportDirectory()
        let loop = LoopThread()
        defer { loop.stop() }
        let monitor = try HangMonitor(configuration: directory.configuration())
        for round in 1...2 {
            try monitor.start(runLoop: loop.runLoop)
            #expect(throws: HangMonitorError.alreadyRunning) { try monitor.start(runLoop: loop.runLoop) }
            try waitUntilAttached(monitor)
            loop.perform { _ = hangInPerformedBlock(milliseconds: 450) }
            directory.waitForFinished(round)
            monitor.stop()
            #expect(!monitor.isRunning)
        }
        #expect(directory.reports().count == 2)
        // Stopped: hangs are no longer seen (no watchdog is left to see them).
        loop.sync { _ = spinInTestHang(milliseconds: 400) }
        #expect(directory.reports().count == 2)
    }

    @Test func stoppingDuringAHangWritesItAsStopped() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        // A hang that would outlast the test; it ends once the monitor has stopped.
        let spin = SpinStop()
        defer { spin.raise() }
        loop.perform { _ = spinInTestHang(milliseconds: 10_000, unless: spin) }
        // The provisional report appears while the hang goes on.
        let provisional = directory.waitFor { $0.contains { $0.outcome == .ongoing } }
        #expect(provisional.first?.outcome == .ongoing)
        #expect(provisional.first?.endedAt == nil)
        let stopStarted = Date()
        monitor.stop()
        #expect(Date().timeIntervalSince(stopStarted) < 1.5)
        let reports = directory.reports()
        try #require(reports.count == 1)
        #expect(reports[0].outcome == .monitorStopped)
        #expect(reports[0].durationMs >= 250)
    }

    /// `pause()`, `resume()`, `setThreshold` and the grace period reach the watchdog (whose rules
    /// for them are `WatchdogTests`): each case is a stretch that must not be reported, then one
    /// that must; the one report is the second's.
    @Test func pausedDetectionIgnoresKnownLongOperations() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        loop.iteration { monitor.withoutHangDetection { _ = spinInTestHang(milliseconds: 600) } }
        loop.iteration {
            monitor.pause()
            _ = spinInTestHang(milliseconds: 400)
            monitor.resume()
            // Busy time counts again from resume(): 150 ms more is not a hang.
            _ = spinInTestHang(milliseconds: 150)
        }
        loop.iteration { _ = hangInPerformedBlock(milliseconds: 500) }
        monitor.stop()
        let reports = directory.reports()
        try #require(reports.count == 1)
        #expect(reports[0].heaviestStackContains("hangInPerformedBlock"), "\(reports[0].heaviestSymbols)")
    }

    @Test func theThresholdCanChangeWhileRunning() throws {
        let (directory, loop, monitor) = try startMonitoredLoop()
        defer { loop.stop() }
        try monitor.setThreshold(.milliseconds(800))
        #expect(monitor.threshold == .milliseconds(800))
        loop.iteration { _ = spinInTestHang(milliseconds: 500) }
        try monitor.setThreshold(.milliseconds(100))
        loop.iteration { _ = hangInPerformedBlock(milliseconds: 300) }
        monitor.stop()
        let reports = directory.reports()
        try #require(reports.count == 1)
        #expect(reports[0].thresholdMs == 100)
        #expect(reports[0].heaviestStackContains("hangInPerformedBlock"), "\(reports[0].heaviestSymbols)")
        #expect(throws: HangMonitorError.self) { try monitor.setThreshold(.microseconds(10)) }
    }

    @Test func theGracePeriodSuppressesHangsRightAfterStart() throws {
        let (directory, loop, monitor) = try startMonitoredLoop { $0.startupGracePeriod = .milliseconds(300) }
        defer { loop.stop() }
        // Busy from the start for 500 ms: only 200 ms of it after the grace period.
        loop.iteration { _ = spinInTestHang(milliseconds: 500) }
        loop.iteration { _ = hangInPerformedBlock(milliseconds: 500) }
        monitor.stop()
        let reports = directory.reports()
        try #require(reports.count == 1)
        #expect(reports[0].heaviestStackContains("hangInPerformedBlock"), "\(reports[0].heaviestSymbols)")
    }

    @Test func repeatsOfOneHangAreFoldedIntoOneReport() throws {
        let (directory, loop, monitor) = try startMonitoredLoop(threshold: .milliseconds(50)) { configuration in
            configuration.repeatWindow = .seconds(600)
        }
        defer { loop.stop() }
        for _ in 0..<6 {
            loop.iteration { _ = hangInPerformedBlock(milliseconds: 150) }
        }
        monitor.stop()
        let reports = directory.reports()
        try #require(reports.count == 1, "\(reports.map(\.heaviestSymbols))")
        #expect(reports[0].repeats?.count == 5)
        #expect(monitor.statistics.hangsFolded == 5)
    }

    /// The rate limit delays new reports; it loses none: over the limit they wait for a token, and
    /// the ones still waiting are written when the monitor stops.
    @Test func theRateLimitDelaysNewReportsAndLosesNone() throws {
        let (directory, loop, monitor) = try startMonitoredLoop(threshold: .milliseconds(50)) { configuration in
            configuration.reportBurst = 2
            configuration.reportsPerMinute = 1
        }
        defer { loop.stop() }
        for _ in 0..<5 {
            loop.iteration { _ = spinInTestHang(milliseconds: 120) }
        }
        #expect(directory.waitForFinished(2).count == 2)
        #expect(directory.reports().count == 2)
        monitor.stop()
        #expect(directory.reports().count == 5)
        #expect(monitor.statistics.hangsSuppressed == 0)
        #expect(monitor.statistics.hangsDetected == 5)
    }

    @Test func aMonitorThatIsDisabledDoesNothing() throws {
        let directory = ReportDirectory()
        var configuration = directory.configuration()
        configuration.isEnabled = false
        let monitor = try HangMonitor(configuration: configuration)
        try monitor.start()
        #expect(!monitor.isRunning)
        #expect(!FileManager.default.fileExists(atPath: directory.path))
    }

    @Test func anUnusableReportDirectoryFailsStart() throws {
        var configuration = HangMonitor.Configuration(serviceName: "tests", reportDirectory: "/proc/hangwatch-cannot-exist")
        configuration.repeatWindow = .zero
        let monitor = try HangMonitor(configuration: configuration)
        #expect(throws: HangMonitorError.self) { try monitor.start() }
        #expect(!monitor.isRunning)
    }
}
