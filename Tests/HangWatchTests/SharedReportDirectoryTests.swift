import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Logging
import Testing

/// What the monitors of a process writing to one report directory share (`SharedReportDirectory`,
/// held through `ProcessRuntime.directories`), on scripted time: one writer and one heartbeat,
/// settings that must agree, the heartbeat speaking for every monitor there.
@Suite struct SharedReportDirectoryTests {
    static func withHeartbeat(_ configuration: inout HangMonitor.Configuration) {
        configuration.heartbeatInterval = .seconds(10)
    }

    static func heartbeat(_ h: WatchdogHarness) -> MonitorHeartbeat? {
        try? MonitorHeartbeat.read(path: h.directory.path + "/" + MonitorHeartbeat.fileName(pid: getpid()))
    }

    /// A second monitor of the process whose directory settings differ is refused, naming the
    /// setting and both values; with the same settings it shares the first one's writer.
    @Test func aMonitorWithOtherDirectorySettingsIsRefusedNamingTheSetting() throws {
        let first = WatchdogHarness(configure: Self.withHeartbeat)
        var other = first.assembly.configuration
        other.reportsPerMinute = first.assembly.configuration.reportsPerMinute + 1
        let control = WatchdogControl(thresholdMicroseconds: 250_000)
        let owner = MonitorAssembly.Owner(
            id: ObjectIdentifier(control), control: control,
            statistics: MonitorStatistics(), logger: Logger(label: "hangwatch.tests", factory: { _ in SwiftLogNoOpLogHandler() }),
            enricher: nil)
        do {
            _ = try MonitorAssembly(configuration: other, source: ScriptedSource(), handles: .none, world: first.assembly.world, owner: owner)
            Issue.record("a monitor with another rate limit joined the directory")
        } catch HangMonitorError.invalidConfiguration(let key, let value, let reason) {
            #expect(key == "reportsPerMinute" && value == "\(other.reportsPerMinute)")
            #expect(reason.contains(first.directory.path) && reason.contains("reportsPerMinute 6"), "\(reason)")
        }
        let second = WatchdogHarness(joining: first, configure: Self.withHeartbeat)
        #expect(second.assembly.writer === first.assembly.writer)
        #expect(second.assembly.directory === first.assembly.directory)
        first.stop(at: 10)
        second.stop(at: 10)
        WatchdogHarness.run(together: [first, second])
    }

    /// The heartbeat is the directory's: while one of two monitors records a hang it says
    /// `recording`; its hang count is both monitors', and stays so after one of them stopped; the
    /// file goes with the last monitor.
    @Test func theHeartbeatSpeaksForEveryMonitorOfTheDirectory() throws {
        let a = WatchdogHarness(configure: Self.withHeartbeat)
        let b = WatchdogHarness(joining: a, configure: Self.withHeartbeat)
        a.busy(from: 100, for: 600)
        b.busy(from: 2_000, for: 400)
        var during: MonitorHeartbeat?
        var idle: MonitorHeartbeat?
        var afterOneStopped: MonitorHeartbeat?
        a.clock.at(a.t(600)) { during = Self.heartbeat(a) }
        a.clock.at(a.t(1_500)) { idle = Self.heartbeat(a) }
        a.stop(at: 3_000)
        a.clock.at(a.t(3_500)) { afterOneStopped = Self.heartbeat(a) }
        b.stop(at: 4_000)
        WatchdogHarness.run(together: [a, b])

        #expect(during?.state == .recording && during?.hangsDetected == 1, "\(String(describing: during))")
        #expect(idle?.state == .idle && idle?.thresholdMicroseconds == 250_000, "\(String(describing: idle))")
        #expect(afterOneStopped?.state == .idle && afterOneStopped?.hangsDetected == 2, "\(String(describing: afterOneStopped))")
        #expect(Self.heartbeat(a) == nil, "the last monitor's stop removes the file")
    }

    /// The directory opens (its heartbeat lane joins the watchdog and ticks) before its first
    /// monitor begins: a page published with no monitor keeps the threshold it was made with,
    /// never 0 (an idle clean-clone run read 0 there once).
    @Test func aPagePublishedBeforeTheFirstMonitorKeepsItsThreshold() throws {
        let directory = ReportDirectory()
        try ReportStore(directory: directory.path).prepare()
        let publisher = try HeartbeatPublisher(
            directory: directory.path, access: .private, interval: .seconds(10), thresholdMicroseconds: 250_000)
        let lane = HeartbeatLane(publisher: publisher, intervalMicroseconds: 10_000_000, stop: StopFlag(), poolDelays: { _ in nil })
        lane.publish()
        let page = try MonitorHeartbeat.read(path: publisher.path)
        #expect(page.thresholdMicroseconds == 250_000 && page.state == .idle, "\(page)")
        lane.retire()
        #expect(!FileManager.default.fileExists(atPath: publisher.path))
    }
}
