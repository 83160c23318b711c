import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

@Suite(.serialized) struct TopCommandTests {
    struct Group: Decodable {
        var signature: String
        var signatureKind: HangReport.SignatureKind?
        var label: String?
        var value: String?
        var version: String?
        var monitoredSeconds: Double?
        var perMonitoredHour: Double?
        var by: String?
        var count: Int
        var totalMs, p50Ms, p95Ms, maxMs: Double
        var firstSeen, lastSeen: Date
        var services: [String]
        var representative: String
        var stack: [String]
    }

    /// Copies of `report` as if it had hung again later, `count` times, each lasting `durations[i]`.
    static func repeats(of report: HangReport, durations: [Double], service: String? = nil) -> [HangReport] {
        durations.enumerated().map { index, duration in
            var copy = report
            copy.id = "20300101T00000\(index)000Z-\(service ?? report.service)-\(report.pid)-\(index + 100)"
            copy.service = service ?? report.service
            copy.startedAt = report.startedAt.addingTimeInterval(Double(index + 1) * 60)
            copy.durationMs = duration
            return copy
        }
    }

    @Test func groupsBySignatureSortedByTotalTime() throws {
        let fixture = try Fixture()
        let reports = try DemoReports.reports()
        // The lock wait happens three more times, once in another service.
        let lockWait = try #require(reports.first { $0.context.verdict == .blocked && $0.context.blockedIn == "futex" })
        for copy in Self.repeats(of: lockWait, durations: [1000, 2000], service: nil) + Self.repeats(of: lockWait, durations: [3000], service: "cart") {
            _ = try ReportStore(directory: fixture.directory).write(copy)
        }
        // Names looked up on the fly (the demo's binary is there): groups by names.
        let result = try fixture.hangwatch("top", "--json")
        #expect(result.status == 0, "\(result.errors)")
        let groups = try HangReport.makeDecoder().decode([Group].self, from: Data(result.output.utf8))
        #expect(groups.allSatisfy { $0.signatureKind == .names }, "\(groups.map(\.signatureKind))")
        // Without names, by addresses: the same groups.
        let raw = try fixture.hangwatch("top", "--json", "--no-symbolicate")
        let rawGroups = try HangReport.makeDecoder().decode([Group].self, from: Data(raw.output.utf8))
        #expect(rawGroups.allSatisfy { $0.signatureKind == .addresses })
        #expect(Set(rawGroups.map(\.signature)) == Set(reports.map(\.signature)))
        #expect(rawGroups.map(\.count) == groups.map(\.count) && rawGroups.map(\.representative) == groups.map(\.representative))
        // Every demo hang has a culprit of its own.
        #expect(groups.count == Set(reports.map(\.signature)).count)
        #expect(groups.map(\.totalMs) == groups.map(\.totalMs).sorted(by: >))
        let first = try #require(groups.first)
        #expect(rawGroups.first?.signature == lockWait.signature)
        #expect(first.count == 4)
        #expect(abs(first.totalMs - (lockWait.durationMs + 6000)) < 0.01)
        #expect(first.maxMs == 3000)
        #expect(first.p50Ms == 1000 || first.p50Ms == 2000)
        #expect(first.services.sorted() == ["cart", "demo"])
        #expect(first.firstSeen == lockWait.startedAt)
        #expect(first.stack.contains { $0.contains("waitForCacheLock") })
        for group in rawGroups.dropFirst() {
            #expect(group.count == 1)
            let member = try #require(reports.first { $0.signature == group.signature })
            #expect(group.totalMs == member.durationMs)
        }
    }

    @Test func groupsByALabelWithTheHangsWithoutIt() throws {
        let fixture = try Fixture(withDemoReports: false)
        let reports = try DemoReports.reports()
        let store = ReportStore(directory: fixture.directory)
        for (index, report) in reports.enumerated() {
            var labelled = report
            labelled.labels = index == 0 ? nil : ["route": index % 2 == 0 ? "GET /checkout" : "GET /cart", "tenant": "acme"]
            _ = try store.write(labelled)
        }
        let result = try fixture.hangwatch("top", "--by", "route", "--json")
        #expect(result.status == 0, "\(result.errors)")
        let groups = try HangReport.makeDecoder().decode([Group].self, from: Data(result.output.utf8))
        #expect(Set(groups.map(\.value)) == ["GET /checkout", "GET /cart", nil])
        #expect(groups.allSatisfy { $0.label == "route" && $0.signatureKind == nil })
        #expect(groups.map(\.count).reduce(0, +) == reports.count)
        #expect(groups.first { $0.value == nil }?.count == 1)
        let text = try fixture.hangwatch("top", "--by", "route")
        #expect(text.lines.filter { $0.hasPrefix("#") }.allSatisfy { $0.hasSuffix("route=GET /checkout") || $0.hasSuffix("route=GET /cart") || $0.hasSuffix("route: none") }, "\(text.output)")
        let empty = try fixture.hangwatch("top", "--by", "")
        #expect(empty.status == 2)
    }

    /// The demo's reports as if written in pods: `billing-a` (three hangs, its two containers), and
    /// `billing-b` (one), both in namespace `shop` on one node, and one hang of a process that
    /// runs nowhere known. Each pod and container is one group; the hangs that say none, one more.
    static let appID = String(repeating: "3f2a1b4c", count: 8)
    static let sidecarID = String(repeating: "9e8d7c6b", count: 8)
    static func podReports() throws -> [HangReport] {
        try DemoReports.reports().enumerated().map { index, report in
            var placed = report
            switch index {
            case 0:
                placed.resource = nil
            case 1, 2:
                placed.resource = WorkloadIdentity(
                    containerID: appID, podName: "billing-a", namespaceName: "shop", podUID: "0c6a5d3e-2b7e-4a36-a9a4-0d2d1c7f3b11",
                    containerName: "app", nodeName: "node-3")
            case 3:
                placed.resource = WorkloadIdentity(containerID: sidecarID, podName: "billing-a", namespaceName: "shop", containerName: "worker", nodeName: "node-3")
            default:
                // No container id (cgroup v2 with a cgroup namespace under containerd): the name in its pod.
                placed.resource = WorkloadIdentity(podName: "billing-b", namespaceName: "shop", containerName: "app", nodeName: "node-3")
            }
            return placed
        }
    }

    @Test func groupsByPodAndContainerWithTheHangsThatSayNone() throws {
        let fixture = try Fixture(withDemoReports: false)
        let reports = try Self.podReports()
        try #require(reports.count == 5, "the demo writes five hangs")
        let store = ReportStore(directory: fixture.directory)
        for report in reports { _ = try store.write(report) }
        func groups(_ by: String) throws -> [Group] {
            let result = try fixture.hangwatch("top", "--by", by, "--json")
            #expect(result.status == 0, "\(result.errors)")
            return try HangReport.makeDecoder().decode([Group].self, from: Data(result.output.utf8))
        }
        func counts(_ groups: [Group]) -> [String: Int] {
            Dictionary(groups.map { ($0.value ?? "none", $0.count) }, uniquingKeysWith: +)
        }
        let pods = try groups("pod")
        #expect(counts(pods) == ["shop/billing-a": 3, "shop/billing-b": 1, "none": 1], "\(pods.map { ($0.value, $0.count) })")
        #expect(pods.allSatisfy { $0.by == "pod" && $0.label == nil && $0.signatureKind == nil })
        #expect(pods.map(\.totalMs) == pods.map(\.totalMs).sorted(by: >))
        let containers = try groups("container")
        #expect(counts(containers) == [Self.appID: 2, Self.sidecarID: 1, "shop/billing-b/app": 1, "none": 1])
        #expect(counts(try groups("namespace")) == ["shop": 4, "none": 1])
        #expect(counts(try groups("node")) == ["node-3": 4, "none": 1])
        // A label named pod is still reachable.
        let byLabel = try groups("label:pod")
        #expect(byLabel.count == 1 && byLabel.first?.label == "pod" && byLabel.first?.value == nil)

        // The text: the pod as kubectl names it, a container by its short id with its name and pod.
        let text = try fixture.hangwatch("top", "--by", "container")
        let heads = text.lines.filter { $0.hasPrefix("#") }
        #expect(heads.count == 4, "\(text.output)")
        #expect(heads.contains { $0.hasSuffix("container=3f2a1b4c3f2a (app in shop/billing-a)") }, "\(heads)")
        #expect(heads.contains { $0.hasSuffix("container=shop/billing-b/app") } && heads.contains { $0.hasSuffix("container: none") }, "\(heads)")
        let podText = try fixture.hangwatch("top", "--by", "pod")
        #expect(podText.lines.filter { $0.hasPrefix("#") }.contains { $0.hasSuffix("pod=shop/billing-a") }, "\(podText.output)")
    }

    /// `--by version`: a group per release and one for the reports without a version, with hangs
    /// per monitored hour where the agent counted the time; `label:version` is the label.
    @Test func groupsByServiceVersionWithRatesPerMonitoredHour() throws {
        let fixture = try Fixture(withDemoReports: false)
        let billing = fixture.directory + "/billing"
        var number = try Releases.write(2, at: "steady", version: "1.0", into: billing, from: 0)
        number = try Releases.write(3, at: "steady", version: "2.0", into: billing, from: number)
        number = try Releases.write(1, at: "other", version: "2.0", into: billing, from: number)
        number = try Releases.write(1, at: "steady", version: nil, into: billing, from: number)
        // 2.0 ran 4 hours in billing; monitors without a version 2; 1.0's time is not known.
        try Releases.writeMonitoredTime(["2.0": 4, MonitoredTime.unversioned: 2], into: billing)
        // Twice: the second run reads the summaries (and their versions) from the index.
        for _ in 0..<2 {
            let result = try fixture.hangwatch("top", "--by", "version", "--json", "--no-symbolicate")
            #expect(result.status == 0, "\(result.errors)")
            let groups = try HangReport.makeDecoder().decode([Group].self, from: Data(result.output.utf8))
            #expect(groups.map(\.version) == ["2.0", "1.0", nil])
            #expect(groups.map(\.count) == [4, 2, 1])
            #expect(groups.allSatisfy { $0.label == nil && $0.signatureKind == nil && $0.signature.isEmpty })
            #expect(groups[0].monitoredSeconds == 14_400 && groups[0].perMonitoredHour == 1)
            #expect(groups[1].monitoredSeconds == nil && groups[1].perMonitoredHour == nil)
            #expect(groups[2].monitoredSeconds == 7200 && groups[2].perMonitoredHour == 0.5)
        }
        let text = try fixture.hangwatch("top", "--by", "version", "--no-symbolicate")
        let heads = text.lines.filter { $0.hasPrefix("#") }
        #expect(heads.count == 3)
        #expect(heads[0].hasSuffix("version=2.0 (1.0 per monitored hour)"), "\(text.output)")
        #expect(heads[1].hasSuffix("version=1.0"), "\(text.output)")
        #expect(heads[2].hasSuffix("version: none (0.5 per monitored hour)"), "\(text.output)")
        // A time window has no monitored time to divide by.
        let windowed = try fixture.hangwatch("top", "--by", "version", "--since", "2000-01-01", "--json", "--no-symbolicate")
        #expect(windowed.status == 0 && !windowed.output.contains("perMonitoredHour"), "\(windowed.output)")

        // A label named version: label:version.
        var labelled = Releases.report(site: "steady", version: "2.0", number: number)
        labelled.labels = ["version": "blue"]
        _ = try ReportStore(directory: billing).write(labelled)
        let byLabel = try fixture.hangwatch("top", "--by", "label:version", "--json", "--no-symbolicate")
        let labelGroups = try HangReport.makeDecoder().decode([Group].self, from: Data(byLabel.output.utf8))
        #expect(labelGroups.allSatisfy { $0.label == "version" && $0.version == nil }, "\(byLabel.output)")
        #expect(Set(labelGroups.map(\.value)) == ["blue", nil] && labelGroups.first { $0.value == "blue" }?.count == 1)
        #expect(try fixture.hangwatch("top", "--by", "label:").status == 2)
    }

    @Test func textFitsEightyColumnsAndNamesTheCulprits() throws {
        let fixture = try Fixture()
        let result = try fixture.hangwatch("top")
        #expect(result.status == 0)
        #expect(result.lines.allSatisfy { $0.count <= 80 && !$0.hasSuffix(" ") }, "\(result.lines.filter { $0.count > 80 || $0.hasSuffix(" ") })")
        #expect(result.lines.first?.hasPrefix("#1  1 hang,") == true)
        for culprit in ["recomputePricing", "parseInventorySnapshot", "waitForCacheLock", "renderModalFrame", "flushAuditLogSynchronously"] {
            #expect(result.output.contains(culprit), "\(culprit)")
        }
        let limited = try fixture.hangwatch("top", "--limit", "2")
        #expect(limited.lines.filter { $0.hasPrefix("#") }.count == 2)
    }

    /// The groups' lines are as wide as what they say, the same at 120 columns as at 300: the
    /// signature follows the widest statistics, the times follow the services.
    @Test func columnsAreAsWideAsTheirContentNotTheTerminal() throws {
        let fixture = try Fixture()
        let wide = try fixture.hangwatch(["top"], environment: ["COLUMNS": "300"])
        let wider = try fixture.hangwatch(["top"], environment: ["COLUMNS": "120"])
        #expect(wide.status == 0, "\(wide.errors)")
        // The groups' own lines (frames are cut only to the terminal's width).
        func groupLines(_ result: CommandResult) -> [String] { result.lines.filter { $0.hasPrefix("#") || $0.contains("  first ") } }
        #expect(!groupLines(wide).isEmpty)
        #expect(groupLines(wide) == groupLines(wider), "\(wide.output)\n\(wider.output)")
        #expect(groupLines(wide).allSatisfy { $0.count < 120 }, "\(groupLines(wide).map(\.count))")
        let heads = wide.lines.filter { $0.hasPrefix("#") }
        #expect(heads.contains { $0.range(of: #"s  sig [0-9a-f]{8} \(names\)$"#, options: .regularExpression) != nil }, "\(heads)")
        let seen = wide.lines.filter { $0.hasPrefix("    ") && $0.contains("  first ") }
        #expect(seen.contains { $0.range(of: #"^    \S.*\S  first "#, options: .regularExpression) != nil }, "\(seen)")
    }

    @Test func nothingToGroupIsExitOne() throws {
        let fixture = try Fixture(withDemoReports: false)
        let result = try fixture.hangwatch("top")
        #expect(result.status == 1)
        #expect(result.errors.contains("no hangs match"))
    }
}
