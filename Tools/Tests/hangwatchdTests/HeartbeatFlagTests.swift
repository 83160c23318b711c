import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// A monitor whose watchdog stops ticking while its process lives is flagged, in the log and in
/// systemd's status line, and unflagged when it ticks again.
@Suite(.serialized) struct HeartbeatFlagTests {
    static func ownStartTicks() -> UInt64 {
        let text = (try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)) ?? ""
        guard let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return UInt64(fields[19]) ?? 0
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// This (live) process's heartbeat, last ticked `secondsAgo`, interval 1 s.
    static func heartbeat(secondsAgo: Double) -> MonitorHeartbeat {
        MonitorHeartbeat(
            pid: getpid(), startTimeTicks: ownStartTicks(), startedUnixMilliseconds: 0,
            tickMonotonicNanoseconds: monotonicNanoseconds() - UInt64(secondsAgo * 1e9), tickUnixMilliseconds: 0,
            intervalMilliseconds: 1000, state: .watching, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000)
    }

    @Test func aSilentWatchdogIsFlaggedThenClearedWhenItTicksAgain() throws {
        let root = try SpoolRoot()
        try FileManager.default.createDirectory(atPath: root.path + "/billing", withIntermediateDirectories: true)
        let path = root.path + "/billing/" + MonitorHeartbeat.fileName(pid: getpid())
        try Data(Self.heartbeat(secondsAgo: 60).encoded()).write(to: URL(fileURLWithPath: path))
        let agent = try AgentProcess(
            root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_HEARTBEAT_GRACE=1s"])
        try agent.waitUntilReady()
        let flagged = agent.waitForMessage { $0.contains("monitor flagged (billing: watchdog silent for") }
        #expect(flagged != nil, "\(agent.messages)")
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { agent.log.contains("<4>a monitor's watchdog has stopped ticking") && agent.log.contains("hangwatch.pid=\(getpid())") })

        // It ticks again (the writer rewrites the page in place).
        let mark = agent.messages.count
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.write(contentsOf: Data(Self.heartbeat(secondsAgo: 0).encoded()))
        try handle.close()
        #expect(agent.waitForMessage(since: mark) { $0.hasPrefix("STATUS=") && !$0.contains("flagged") } != nil)
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { agent.log.contains("a flagged monitor is healthy again") })
        // A heartbeat of a process that is gone is removed.
        try Data(MonitorHeartbeat(
            pid: 999_999, startTimeTicks: 1, startedUnixMilliseconds: 0, tickMonotonicNanoseconds: 0, tickUnixMilliseconds: 0,
            intervalMilliseconds: 1000, state: .idle, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 1
        ).encoded()).write(to: URL(fileURLWithPath: root.path + "/billing/.heartbeat-999999"))
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { !root.names("billing").contains(".heartbeat-999999") })
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0)
    }
}
