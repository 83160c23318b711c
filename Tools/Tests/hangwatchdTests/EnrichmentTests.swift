import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// New reports get names while their binaries are on disk; a binary whose build-id differs is
/// refused and the refusal recorded; SIGTERM in the middle leaves only whole files.
@Suite(.serialized) struct EnrichmentTests {
    @Test func newReportsAreNamedAndRefusalsRecorded() throws {
        let root = try SpoolRoot()
        try DemoReports.copy(into: root.path, service: "demo")
        // One report claims a build of the demo that is not on disk.
        let store = ReportStore(directory: root.path + "/demo", access: .sharedWithAgent)
        var other = try #require(root.reports("demo").first)
        let main = try #require(other.images.firstIndex { $0.isMainExecutable })
        other.id += "-rebuilt"
        other.images[main].buildId = String(repeating: "ab", count: 20)
        try store.write(other)

        let agent = try AgentProcess(root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_ENRICH_DELAY=0"])
        try agent.waitUntilReady()
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { root.reports("demo").allSatisfy { $0.symbolication != nil } }, "\(agent.log)")
        for report in root.reports("demo") {
            let record = try #require(report.symbolication)
            #expect(record.by == "hangwatchd")
            #expect(record.framesNamed > 0)
            if report.id == other.id {
                #expect(record.problems.contains { $0.contains("does not match the report's \(String(repeating: "ab", count: 20))") })
                #expect(!report.frames.contains { $0.symbol?.contains("DemoService") == true })
            } else {
                #expect(report.frames.contains { $0.symbol?.contains("DemoService") == true }, "\(report.id)")
                #expect(ReportValidator().problems(report).isEmpty)
            }
        }
        // That later passes never rewrite a named report is SpoolKeeperNamingTests' (on scripted time).
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0)
    }

    @Test func sigtermWhileNamingLeavesOnlyWholeReports() throws {
        let root = try SpoolRoot()
        try DemoReports.copy(into: root.path, service: "demo", copies: 300)
        let agent = try AgentProcess(
            root: root.path,
            arguments: [
                "--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_ENRICH_DELAY=0", "--set", "HANGWATCHD_MAX_REPORTS_PER_SERVICE=5000",
            ])
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { agent.log.contains("report named") }, "\(agent.log)")
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0, "\(agent.log)")
        let names = root.names("demo")
        #expect(!names.contains { $0.hasSuffix(".tmp") }, "\(names.filter { $0.hasSuffix(".tmp") })")
        let reports = names.filter { $0.hasSuffix(".json") }
        #expect(reports.count == 1500)
        var named = 0
        for name in reports {
            let report = try ReportReader().read(path: root.path + "/demo/" + name)
            if report.symbolication != nil { named += 1 }
        }
        // Stopped part way: some named, and everything readable.
        #expect(named > 0 && named < 1500, "\(named) named")
    }
}
