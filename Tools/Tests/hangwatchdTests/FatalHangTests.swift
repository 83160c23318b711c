import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// A process killed in the middle of a hang (as a systemd watchdog kill or the OOM killer would)
/// leaves a provisional report; the agent finishes it. A live process's is left alone.
@Suite(.serialized) struct FatalHangTests {
    @Test func aProvisionalReportOfAKilledProcessBecomesAFatalHang() throws {
        let root = try SpoolRoot()
        let agent = try AgentProcess(root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_ENRICH=no"])
        try agent.waitUntilReady()

        let demo = Process()
        demo.executableURL = URL(fileURLWithPath: BuiltExecutable.path("hangwatch-demo"))
        demo.arguments = ["--reports", root.path + "/demo", "--hang-forever"]
        demo.standardOutput = FileHandle.nullDevice
        demo.standardError = FileHandle.nullDevice
        try demo.run()
        defer {
            if demo.isRunning { kill(demo.processIdentifier, SIGKILL) }
            demo.waitUntilExit()
        }
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { root.reports("demo").first?.outcome == .ongoing })
        // Alive and hanging: the agent leaves the provisional report alone, and the monitor's
        // watchdog, busy sampling, is not flagged.
        usleep(1_000_000)
        #expect(root.reports("demo").first?.outcome == .ongoing)
        #expect(root.names("demo").contains(".heartbeat-\(demo.processIdentifier)"))
        #expect(!agent.log.contains("stopped ticking"))

        kill(demo.processIdentifier, SIGKILL)
        demo.waitUntilExit()
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { root.reports("demo").first?.outcome == .processExited }, "\(agent.log)")
        let report = try #require(root.reports("demo").first)
        #expect(report.processExit?.reason == "gone")
        #expect(report.durationMs >= 1000)
        #expect(report.endedAt == report.processExit?.lastSeenAt)
        #expect(ReportValidator().problems(report).isEmpty)
        // Logged once the report is rewritten: it may land a moment after the file.
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { agent.log.contains("<4>fatal hang: the process exited during a hang") }, "\(agent.log)")
        // The dead monitor's heartbeat file is cleaned up.
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { !root.names("demo").contains { $0.hasPrefix(".heartbeat-") } })
        // And the CLI shows it for what it was.
        let show = Process()
        show.executableURL = URL(fileURLWithPath: BuiltExecutable.path("hangwatch"))
        show.arguments = ["show", "latest", "--dir", root.path, "--no-symbolicate"]
        show.environment = ["XDG_CACHE_HOME": root.path + ".cache"]
        let pipe = Pipe()
        show.standardOutput = pipe
        try show.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        show.waitUntilExit()
        try? FileManager.default.removeItem(atPath: root.path + ".cache")
        #expect(text.contains("outcome   process exited during hang"), "\(text)")
        #expect(text.contains("exit      the process died mid-hang, last seen "), "\(text)")
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0)
    }
}
