import Foundation
import HangWatchTestSupport
import Testing
import ToolsTestSupport

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The agent says its metrics endpoint is listening only once it is: not before a start that
/// fails (an unsafe spool, a port that is taken), and the endpoint answers as soon as it is said.
@Suite struct MetricsListenTests {
    @Test func aSpoolThatIsRefusedIsExitThreeWithoutAListeningEndpoint() throws {
        let root = try SpoolRoot()
        let missing = try AgentProcess(root: root.path + "/none")
        #expect(missing.waitForExit() == 3)
        #expect(missing.log.contains("no such directory"), "\(missing.log)")
        #expect(!missing.log.contains("listening"), "\(missing.log)")
        chmod(root.path, 0o777)
        let unsafe = try AgentProcess(root: root.path)
        #expect(unsafe.waitForExit() == 3)
        #expect(!unsafe.log.contains("listening"), "\(unsafe.log)")
    }

    @Test func aPortThatIsTakenIsExitOneNamingTheAddressAndTheSetting() throws {
        let root = try SpoolRoot()
        let first = try AgentProcess(root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0"])
        try first.waitUntilReady()
        let port = try #require(first.metricsPort, "\(first.log)")
        let second = try AgentProcess(
            root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_METRICS_LISTEN=127.0.0.1:\(port)"])
        #expect(second.waitForExit() == 1)
        #expect(second.log.contains("127.0.0.1:\(port)") && second.log.contains("HANGWATCHD_METRICS_LISTEN"), "\(second.log)")
        #expect(!second.log.contains("listening"), "\(second.log)")
        first.signal(SIGTERM)
        #expect(first.waitForExit() == 0)
    }

    @Test func theEndpointAnswersAsSoonAsItIsSaidToListen() throws {
        let root = try SpoolRoot()
        let agent = try AgentProcess(root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0"])
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { agent.metricsPort != nil }, "\(agent.log)")
        let port = try #require(agent.metricsPort)
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/metrics"))
        let text = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        #expect(text.contains("hangwatch_build_info"))
        // Stopped once it said READY: its SIGTERM handling is in place by then (the endpoint listens
        // before the service group that handles the signal runs; a SIGTERM in between ends the
        // agent by the default action, 15, seen once in a clean-clone run).
        try agent.waitUntilReady()
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0)
    }
}
