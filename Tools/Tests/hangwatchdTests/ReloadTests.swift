import Foundation
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// SIGHUP re-reads the configuration file; a bad file is rejected and the running settings kept.
@Suite(.serialized) struct ReloadTests {
    @Test func aBadConfigurationIsRejectedAndTheOldOneKept() throws {
        let root = try SpoolRoot()
        let config = root.path + ".env"
        defer { unlink(config) }
        try "HANGWATCHD_LOG_LEVEL=info\n".write(toFile: config, atomically: true, encoding: .utf8)
        let agent = try AgentProcess(root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0"], config: config)
        try agent.waitUntilReady()

        try "HANGWATCHD_LOG_LEVEL=info\nHANGWATCHD_MAX_USE=3\n".write(toFile: config, atomically: true, encoding: .utf8)
        var mark = agent.messages.count
        agent.signal(SIGHUP)
        #expect(agent.waitForMessage(since: mark) { $0.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") } != nil)
        let rejected = agent.waitForMessage(since: mark) { $0.contains("READY=1") && $0.contains("configuration rejected") }
        #expect(rejected?.contains("HANGWATCHD_MAX_USE (\(config):2)") == true, "\(agent.messages)")
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { agent.log.contains("configuration rejected; keeping the previous one") })
        #expect(agent.process.isRunning)

        // A good file is applied: debug lines start to appear.
        try "HANGWATCHD_LOG_LEVEL=debug\nHANGWATCHD_ENRICH=no\n".write(toFile: config, atomically: true, encoding: .utf8)
        mark = agent.messages.count
        agent.signal(SIGHUP)
        #expect(agent.waitForMessage(since: mark) { $0.hasPrefix("RELOADING=1") } != nil)
        #expect(agent.waitForMessage(since: mark) { $0.contains("READY=1") && !$0.contains("rejected") } != nil)
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { agent.log.contains("<6>configuration reloaded") })
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0)
    }
}
