import Foundation
import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

/// What a process has one of, with real threads (`ProcessRuntime`): two monitors of two loops,
/// writing to two directories, are watched by the process's one watchdog thread; each one's hang
/// is its own report in its own directory; the thread goes with the last monitor.
@Suite(.serialized) struct ProcessRuntimeTests {
    static func threads(named name: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).filter { tid in
            (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }

    @Test func twoMonitorsOfTwoLoopsShareTheProcesssOneWatchdogThread() throws {
        let before = Self.threads(named: "hangwatch-wdog")
        let (first, firstLoop, firstMonitor) = try startMonitoredLoop("runtime-first") { $0.serviceName = "first" }
        defer { firstLoop.stop() }
        let (second, secondLoop, secondMonitor) = try startMonitoredLoop("runtime-second") { $0.serviceName = "second" }
        defer { secondLoop.stop() }
        #expect(Self.threads(named: "hangwatch-wdog") == before + 1)

        firstLoop.afterDelay(0.05) { _ = hangInTimerCallback(milliseconds: 400) }
        secondLoop.afterDelay(0.05) { _ = hangInTimerCallback(milliseconds: 600) }
        let firstReports = first.waitForFinished(1)
        let secondReports = second.waitForFinished(1)
        try #require(firstReports.count == 1 && secondReports.count == 1, "\(firstReports.map(\.id)) \(secondReports.map(\.id))")
        #expect(firstReports[0].thread.tid == firstLoop.tid && secondReports[0].thread.tid == secondLoop.tid)
        #expect(firstReports[0].service == "first" && secondReports[0].service == "second")
        #expect(firstReports[0].durationMs >= 395 && secondReports[0].durationMs >= 595)
        #expect(firstMonitor.statistics.hangsDetected == 1 && secondMonitor.statistics.hangsDetected == 1)

        firstMonitor.stop()
        #expect(Self.threads(named: "hangwatch-wdog") == before + 1, "the second monitor's lanes keep it")
        secondMonitor.stop()
        #expect(Eventually.holds { Self.threads(named: "hangwatch-wdog") == before })
    }
}
