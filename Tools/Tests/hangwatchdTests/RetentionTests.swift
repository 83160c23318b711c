import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

@Suite(.serialized) struct RetentionTests {
    @Test func eachServiceKeepsItsNewestAndForeignFilesStay() throws {
        let root = try SpoolRoot()
        for service in ["billing", "cart", "search"] { try DemoReports.copy(into: root.path, service: service, copies: 2) }
        try "keep me".write(toFile: root.path + "/billing/README.txt", atomically: true, encoding: .utf8)
        try "secret".write(toFile: root.path + ".secret", atomically: true, encoding: .utf8)
        defer { unlink(root.path + ".secret") }
        try FileManager.default.createSymbolicLink(
            atPath: root.path + "/cart/hang-20000101T000000000Z-cart-1-1.json", withDestinationPath: root.path + ".secret")
        let agent = try AgentProcess(
            root: root.path,
            arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_ENRICH=no", "--set", "HANGWATCHD_MAX_REPORTS_PER_SERVICE=4"])
        try agent.waitUntilReady()
        for service in ["billing", "cart", "search"] {
            let reports = root.reports(service)
            #expect(reports.count == 4, "\(service): \(reports.count)")
            // The newest four.
            let all = try ReportStore(directory: (try DemoReports.directory.get())).list().map { try ReportReader().read(path: $0.path) }
            let newest = all.map(\.startedAt).sorted().suffix(2)
            #expect(reports.allSatisfy { newest.contains($0.startedAt) })
        }
        #expect(FileManager.default.fileExists(atPath: root.path + "/billing/README.txt"))
        #expect(root.names("cart").contains("hang-20000101T000000000Z-cart-1-1.json"))
        #expect(try String(contentsOfFile: root.path + ".secret", encoding: .utf8) == "secret")
        // Logged once the file is gone: it may land a moment after.
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { agent.log.contains("hangwatch.reason=\"over the per-service count\"") }, "\(agent.log)")
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0)
    }
}
