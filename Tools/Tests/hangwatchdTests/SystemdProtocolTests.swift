import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// hangwatchd speaks sd_notify to a socket the test opens, as systemd would.
@Suite(.serialized) struct SystemdProtocolTests {
    @Test(arguments: [false, true])
    func readyStatusWatchdogThenStopping(abstractSocket: Bool) throws {
        let root = try SpoolRoot()
        try DemoReports.copy(into: root.path, service: "demo")
        // WATCHDOG_USEC 400 ms: a ping every 200 ms.
        let agent = try AgentProcess(
            root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_ENRICH=no"],
            watchdogMicroseconds: 400_000, abstractSocket: abstractSocket)
        try agent.waitUntilReady()
        // Ready only once the spool is indexed: the status says what is there.
        let ready = try #require(agent.messages.first { $0.contains("READY=1") })
        #expect(ready.contains("STATUS=1 service, 5 reports"), "\(ready)")
        #expect(ready.contains("last hang demo "))

        // Pings at half of WATCHDOG_USEC, from the agent's main loop.
        var pings: [Date] = []
        let window = Date().addingTimeInterval(1.6)
        while Date() < window {
            if let message = agent.notify.receive(timeout: max(0.01, window.timeIntervalSinceNow)), message == "WATCHDOG=1" {
                pings.append(Date())
            }
        }
        #expect(pings.count >= 5 && pings.count <= 12, "\(pings.count) pings in 1.6 s")
        let gaps = zip(pings.dropFirst(), pings).map { $0.timeIntervalSince($1) }
        #expect(gaps.allSatisfy { $0 > 0.05 && $0 < 0.6 }, "\(gaps)")

        agent.signal(SIGTERM)
        #expect(agent.waitForMessage { $0.hasPrefix("STOPPING=1") } != nil)
        #expect(agent.waitForExit() == 0, "\(agent.log)")
        #expect(agent.log.contains("<6>hangwatchd stopped"))
    }

    @Test func noWatchdogPingsWithoutWatchdogUsec() throws {
        let root = try SpoolRoot()
        let agent = try AgentProcess(root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0"])
        try agent.waitUntilReady()
        #expect(agent.waitForMessage(timeout: 1) { $0.contains("WATCHDOG=1") } == nil)
        agent.signal(SIGINT)
        #expect(agent.waitForExit() == 0)
    }

    @Test func aNotifySocketThatIsNotSystemdsNeverStopsTheAgent() throws {
        let root = try SpoolRoot()
        let file = root.path + ".not-a-socket"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        defer { unlink(file) }
        for value in [
            nil, "@hangwatch-nobody-listens-\(getpid())", root.path + ".missing.sock", file, "garbage", "@",
            "/run/" + String(repeating: "n", count: 120),  // longer than a socket address holds
        ] as [String?] {
            let agent = try AgentProcess(
                root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0"], environment: ["NOTIFY_SOCKET": value])
            #expect(Eventually.holds(timeout: 20, interval: 0.02) { agent.log.contains("<6>hangwatchd ready") }, "\(value ?? "unset"): \(agent.log)")
            // Only a socket systemd is meant to listen on is worth a warning.
            let warned = agent.log.contains("<4>cannot notify systemd")
            #expect(warned == (value.map { $0.hasPrefix("/") || $0.hasPrefix("@") } ?? false), "\(value ?? "unset"): \(agent.log)")
            agent.signal(SIGTERM)
            #expect(agent.waitForExit() == 0, "\(value ?? "unset"): \(agent.log)")
        }
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "x")
    }

    @Test func watchdogSettingsNotForThisAgentAreIgnoredWithAWarning() throws {
        let root = try SpoolRoot()
        for (settings, pings) in [
            (["WATCHDOG_USEC": "18446744073709551615"], true),  // the largest: a ping at start, then hourly
            (["WATCHDOG_USEC": "1"], true),
            (["WATCHDOG_USEC": "400000", "WATCHDOG_PID": "1"], false),
            (["WATCHDOG_USEC": "0"], false),
            (["WATCHDOG_USEC": "soon"], false),
        ] as [([String: String?], Bool)] {
            let agent = try AgentProcess(root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0"], environment: settings)
            try agent.waitUntilReady()
            #expect((agent.waitForMessage(timeout: 1) { $0.contains("WATCHDOG=1") } != nil) == pings, "\(settings): \(agent.log)")
            #expect(agent.log.contains("<4>systemd watchdog settings ignored") == !pings, "\(settings): \(agent.log)")
            agent.signal(SIGTERM)
            #expect(agent.waitForExit() == 0, "\(settings): \(agent.log)")
        }
    }

    @Test func aMissingOrUnsafeSpoolIsExitThree() throws {
        let root = try SpoolRoot()
        chmod(root.path, 0o777)
        let unsafe = try AgentProcess(root: root.path)
        #expect(unsafe.waitForExit() == 3)
        #expect(unsafe.log.contains("refusing an unsafe spool: writable by everyone without the sticky bit"), "\(unsafe.log)")
        let missing = try AgentProcess(root: root.path + "/none")
        #expect(missing.waitForExit() == 3)
        #expect(missing.log.contains("no such directory"))
    }

    @Test func anInvalidConfigurationIsExitTwoWithTheKey() throws {
        let root = try SpoolRoot()
        let agent = try AgentProcess(root: root.path, arguments: ["--set", "HANGWATCHD_MAX_AGE=soon"])
        #expect(agent.waitForExit() == 2)
        #expect(agent.log.contains("HANGWATCHD_MAX_AGE (command line)=\"soon\": expected a duration"), "\(agent.log)")
    }
}
