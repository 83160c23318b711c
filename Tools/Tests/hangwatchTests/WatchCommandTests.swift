import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

@Suite(.serialized) struct WatchCommandTests {
    /// `hangwatch watch` in the background, its output collected in a file.
    final class Watcher {
        let process = Process()
        let outputPath: String

        init(_ fixture: Fixture, arguments: [String] = []) throws {
            outputPath = fixture.root + "/watch.out"
            _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
            process.executableURL = URL(fileURLWithPath: Hangwatch.binary)
            process.arguments = ["watch", "--dir", fixture.directory, "--interval", "0.05", "--timeout", "60"] + arguments
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_CACHE_HOME"] = fixture.cache
            process.environment = environment
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        var lines: [String] {
            String(decoding: FileManager.default.contents(atPath: outputPath) ?? Data(), as: UTF8.self).split(separator: "\n").map(String.init)
        }

        /// Polls the output until `condition` holds or 20 s pass; returns the lines.
        @discardableResult
        func waitFor(_ condition: ([String]) -> Bool) -> [String] {
            Eventually.value(timeout: 20, interval: 0.02, { lines }, until: condition)
        }

        deinit {
            // SIGKILL: a signal mask inherited from the test runner may hold SIGTERM back.
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    @Test func printsEachNewHangOnceWhenDetectedAndOnceWhenOver() throws {
        let fixture = try Fixture()
        let watcher = try Watcher(fixture)
        let started = watcher.waitFor { $0.first?.hasPrefix("watching ") == true }
        // The hangs already there are not repeated.
        #expect(started.count == 1, "\(started)")

        var report = try #require(try DemoReports.reports().first { $0.context.blockedIn == "futex" })
        // Told apart by their pids (both are one call path: one signature).
        report.id = "20300101T000000000Z-demo-7-1"
        report.pid = 777_001
        report.outcome = .ongoing
        report.endedAt = nil
        let store = ReportStore(directory: fixture.directory)
        _ = try store.write(report)
        let ongoing = watcher.waitFor { $0.contains { $0.contains("777001") && $0.hasSuffix("(ongoing)") } }
        #expect(ongoing.contains { $0.contains("777001") && $0.contains("waitForCacheLock") }, "\(ongoing)")

        report.outcome = .recovered
        report.endedAt = report.startedAt.addingTimeInterval(report.durationMs / 1000)
        _ = try store.write(report)
        let over = watcher.waitFor { $0.filter { $0.contains("777001") }.count >= 2 }
        let lines = over.filter { $0.contains("777001") }
        #expect(lines.count == 2, "\(over)")
        #expect(lines.last?.hasSuffix("(ongoing)") == false)

        // A second, unrelated hang.
        report.id = "20300101T000001000Z-demo-7-2"
        report.pid = 777_002
        _ = try store.write(report)
        #expect(watcher.waitFor { $0.contains { $0.contains("777002") } }.filter { $0.contains("777001") }.count == 2)
    }

    @Test func fromStartPrintsWhatIsThereAndTheTimeoutEndsIt() throws {
        let fixture = try Fixture()
        let result = try fixture.hangwatch("watch", "--from-start", "--timeout", "0.5")
        #expect(result.status == 0)
        #expect(result.lines.count == 1 + fixture.reportPaths.count, "\(result.lines)")
    }

    /// `--timeout` and `--interval` take durations as every other option does (`90s`, `500ms`,
    /// `2m`); a plain number is seconds.
    @Test func timeoutAndIntervalTakeDurations() throws {
        let fixture = try Fixture()
        for (timeout, interval) in [("500ms", "100ms"), ("1s", "0.1"), ("0.5", "50ms")] {
            let started = Date()
            let result = try fixture.hangwatch("watch", "--timeout", timeout, "--interval", interval)
            #expect(result.status == 0, "\(timeout) \(interval): \(result.errors)")
            #expect(Date().timeIntervalSince(started) < 30)
        }
        for bad in [["--timeout", "soon"], ["--timeout", "0s"], ["--interval", "10ms"], ["--interval", "2m"]] {
            let result = try fixture.hangwatch(["watch"] + bad)
            #expect(result.status == 2, "\(bad): \(result.errors)")
        }
        let help = try fixture.hangwatch("watch", "--help")
        #expect(help.output.contains("90s, 10m, 500ms"), "\(help.output)")
    }
}
