import HangWatchReport
import Logging
import Testing

@testable import HangWatchAgent

/// The OTLP resource is the agent's: its host, and where the agent itself runs, by the semantic
/// conventions' names.
@Suite struct OTLPExporterTests {
    static let diagnostics = Logger(label: "hangwatch.tests", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test func theResourceSaysWhereTheAgentRuns() {
        let identity = WorkloadIdentity(
            containerID: String(repeating: "9e8d7c6b", count: 8), podName: "hangwatchd-x7k2p", namespaceName: "hangwatch", containerName: "hangwatchd",
            nodeName: "node-3")
        let configuration = OTLPExporter.configuration(AgentConfiguration(), endpoint: "http://127.0.0.1:4318", diagnostics: Self.diagnostics, identity: identity)
        #expect(configuration.serviceName == "hangwatchd")
        #expect(configuration.resourceAttributes["host.name"] != nil)
        for (name, value) in identity.attributes { #expect(configuration.resourceAttributes[name] == value, "\(name)") }
        #expect(configuration.resourceAttributes["k8s.pod.uid"] == nil)
        let bare = OTLPExporter.configuration(AgentConfiguration(), endpoint: "http://127.0.0.1:4318", diagnostics: Self.diagnostics, identity: nil)
        #expect(Set(bare.resourceAttributes.keys) == ["host.name"])
    }
}
