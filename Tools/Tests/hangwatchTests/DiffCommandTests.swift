import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite(.serialized) struct DiffCommandTests {
    struct Diff: Decodable {
        struct Side: Decodable {
            var version: String
            var count: Int
            var monitoredSeconds: Double?
            var perMonitoredHour: Double?
        }

        struct Count: Decodable {
            var count: Int
            var perMonitoredHour: Double?
        }

        struct Group: Decodable {
            var status: String
            var signature: String
            var signatureKind: String
            var from, to: Count
            var services: [String]
            var topFrame: String?
            var representative: String
            var stack: [String]
        }

        var from, to: Side
        var comparedBy: String
        var groups: [Group]

        /// The status of the group whose top frame names `site`.
        func status(of site: String) -> String? { groups.first { $0.topFrame?.contains(site) == true }?.status }
    }

    func decode(_ result: CommandResult) throws -> Diff {
        try HangReport.makeDecoder().decode(Diff.self, from: Data(result.output.utf8))
    }

    /// 1.0 → 2.0 in billing's directory: `steady` as often (and rebuilt: every address moved),
    /// `worse` more often, `better` less, `fixed` gone, `fresh` new.
    func writeReleases(into directory: String) throws {
        var number = 0
        number = try Releases.write(2, at: "steady", version: "1.0", into: directory, from: number)
        number = try Releases.write(2, at: "worse", version: "1.0", into: directory, from: number)
        number = try Releases.write(3, at: "better", version: "1.0", into: directory, from: number)
        number = try Releases.write(1, at: "fixed", version: "1.0", into: directory, from: number)
        number = try Releases.write(2, at: "steady", version: "2.0", into: directory, from: number, build: 2)
        number = try Releases.write(4, at: "worse", version: "2.0", into: directory, from: number, build: 2)
        number = try Releases.write(1, at: "better", version: "2.0", into: directory, from: number, build: 2)
        number = try Releases.write(1, at: "fresh", version: "2.0", into: directory, from: number, build: 2)
    }

    @Test func marksOnlyTheNewSiteNew_andARebuiltSiteIsNotNew() throws {
        let fixture = try Fixture(withDemoReports: false)
        try writeReleases(into: fixture.directory + "/billing")
        // The rebuild moved the addresses: by addresses, steady would be two culprits.
        let before = Releases.report(site: "steady", version: "1.0", number: 0)
        let after = Releases.report(site: "steady", version: "2.0", number: 1, build: 2)
        #expect(before.signature != after.signature && before.grouping == after.grouping)

        let result = try fixture.hangwatch("diff", "1.0", "2.0", "--json", "--no-symbolicate")
        #expect(result.status == 0, "\(result.errors)")
        let diff = try decode(result)
        #expect(diff.groups.filter { $0.status == "new" }.count == 1)
        #expect(diff.status(of: "fresh") == "new")
        #expect(diff.status(of: "worse") == "more")
        #expect(diff.status(of: "better") == "fewer")
        #expect(diff.status(of: "fixed") == "gone")
        #expect(diff.status(of: "steady") == "same")
        // New first, then more, fewer, gone, same.
        #expect(diff.groups.map(\.status) == ["new", "more", "fewer", "gone", "same"])
        // No time: counts decide, and no rate is made up.
        #expect(diff.comparedBy == "counts")
        #expect(!result.output.contains("perMonitoredHour") && !result.output.contains("monitoredSeconds"))
        let steady = try #require(diff.groups.first { $0.status == "same" })
        #expect(steady.from.count == 2 && steady.to.count == 2 && steady.signatureKind == "names")
        #expect(steady.signature == after.grouping.signature)
        #expect(diff.from.version == "1.0" && diff.from.count == 8 && diff.to.version == "2.0" && diff.to.count == 8)
        #expect(diff.groups.allSatisfy { $0.services == ["billing"] && !$0.stack.isEmpty && !$0.representative.isEmpty })

        let text = try fixture.hangwatch("diff", "1.0", "2.0", "--no-symbolicate")
        #expect(text.status == 0, "\(text.errors)")
        #expect(text.lines.first == "1.0 (monitored time unknown) → 2.0 (monitored time unknown): by count", "\(text.output)")
        #expect(text.lines.dropFirst().first?.hasPrefix("STATUS") == true, "\(text.output)")
        let rows = Array(text.lines.dropFirst(2))
        #expect(rows.map { String($0.prefix { $0 != " " }) } == ["new", "more", "fewer", "gone", "same"], "\(text.output)")
        #expect(rows.first?.contains("0 → 1") == true && rows.first?.contains("fresh") == true, "\(text.output)")
        #expect(!text.lines.contains { $0.contains("PER HOUR") })
    }

    /// With both versions' time, rates decide: steady has fewer hangs in 2.0 but runs half as long,
    /// so within 25% of its rate it is the same; worse has fewer hangs and a higher rate.
    @Test func ratesDecideWhenBothVersionsHaveMonitoredTime() throws {
        let fixture = try Fixture(withDemoReports: false)
        let billing = fixture.directory + "/billing"
        var number = 0
        number = try Releases.write(10, at: "steady", version: "1.0", into: billing, from: number)
        number = try Releases.write(6, at: "steady", version: "2.0", into: billing, from: number)
        number = try Releases.write(4, at: "worse", version: "1.0", into: billing, from: number)
        number = try Releases.write(3, at: "worse", version: "2.0", into: billing, from: number)
        number = try Releases.write(10, at: "better", version: "1.0", into: billing, from: number)
        number = try Releases.write(3, at: "better", version: "2.0", into: billing, from: number)
        // 1.0 ran 10 hours, 6 of them in billing and 4 in cart (which never hung); 2.0 ran 5.
        try Releases.writeMonitoredTime(["1.0": 6, "2.0": 5], into: billing)
        try Releases.writeMonitoredTime(["1.0": 4], into: fixture.directory + "/cart")

        let result = try fixture.hangwatch("diff", "1.0", "2.0", "--json", "--no-symbolicate")
        #expect(result.status == 0, "\(result.errors)")
        let diff = try decode(result)
        #expect(diff.comparedBy == "rates")
        #expect(diff.from.monitoredSeconds == 36_000 && diff.to.monitoredSeconds == 18_000)
        #expect(diff.from.perMonitoredHour == 2.4 && diff.to.perMonitoredHour == 2.4)
        // steady: 1/h → 1.2/h (+20%); worse: 0.4/h → 0.6/h (+50%); better: 1/h → 0.6/h (-40%).
        #expect(diff.status(of: "steady") == "same")
        #expect(diff.status(of: "worse") == "more")
        #expect(diff.status(of: "better") == "fewer")
        let steady = try #require(diff.groups.first { $0.topFrame?.contains("steady") == true })
        #expect(steady.from.perMonitoredHour == 1 && steady.to.perMonitoredHour == 1.2)
        #expect(steady.from.count == 10 && steady.to.count == 6)

        // Billing alone: 1.0 ran 6 hours there, so steady's rate fell from 1.67/h to 1.2/h (-28%).
        let billingOnly = try decode(try fixture.hangwatch("diff", "1.0", "2.0", "--service", "billing", "--json", "--no-symbolicate"))
        #expect(billingOnly.from.monitoredSeconds == 21_600)
        #expect(billingOnly.status(of: "steady") == "fewer")

        let text = try fixture.hangwatch("diff", "1.0", "2.0", "--no-symbolicate")
        #expect(
            text.lines.first == "1.0 (10.0 monitored hours) → 2.0 (5.0 monitored hours): by rate per monitored hour, same within ±25%",
            "\(text.output)")
        #expect(text.lines.contains { $0.hasPrefix("same") && $0.contains("10 → 6") && $0.contains("1.0 → 1.2") }, "\(text.output)")

        // A time window has no monitored time to divide by: counts decide, and it says why.
        let windowed = try fixture.hangwatch("diff", "1.0", "2.0", "--since", "2000-01-01", "--json", "--no-symbolicate")
        #expect(windowed.status == 0, "\(windowed.errors)")
        let counted = try decode(windowed)
        #expect(counted.comparedBy == "counts" && counted.from.monitoredSeconds == nil && counted.status(of: "steady") == "fewer")
        let windowedText = try fixture.hangwatch("diff", "1.0", "2.0", "--since", "2000-01-01", "--no-symbolicate")
        #expect(windowedText.lines.first?.hasSuffix("by count (monitored time is not used with --since, --until, --pod, --namespace or --container)") == true)

        // Hangs of some of the service's pods have no monitored time of their own to divide by either.
        let store = ReportStore(directory: billing)
        for (offset, version) in ["1.0", "2.0"].enumerated() {
            var placed = Releases.report(site: "steady", version: version, number: number + offset)
            placed.resource = WorkloadIdentity(podName: "billing-a", namespaceName: "shop")
            _ = try store.write(placed)
        }
        let podded = try decode(try fixture.hangwatch("diff", "1.0", "2.0", "--namespace", "shop", "--json", "--no-symbolicate"))
        #expect(podded.comparedBy == "counts" && podded.from.monitoredSeconds == nil && podded.from.count == 1 && podded.to.count == 1)
    }

    /// Time for one version only, or for a version in a directory whose hangs of it were not
    /// counted: counts decide, and the rate known is still given.
    @Test func countsDecideWhenOneVersionsTimeIsUnknown() throws {
        let fixture = try Fixture(withDemoReports: false)
        let billing = fixture.directory + "/billing"
        var number = try Releases.write(4, at: "steady", version: "1.0", into: billing, from: 0)
        number = try Releases.write(2, at: "steady", version: "2.0", into: billing, from: number)
        try Releases.writeMonitoredTime(["1.0": 2], into: billing)
        let diff = try decode(try fixture.hangwatch("diff", "1.0", "2.0", "--json", "--no-symbolicate"))
        #expect(diff.comparedBy == "counts")
        #expect(diff.from.monitoredSeconds == 7200 && diff.to.monitoredSeconds == nil)
        #expect(diff.groups.first?.from.perMonitoredHour == 2 && diff.groups.first?.to.perMonitoredHour == nil)
        #expect(diff.status(of: "steady") == "fewer")

        // 2.0 hung in cart too, which has no monitored-time file: 2.0's time is not all known.
        try Releases.writeMonitoredTime(["1.0": 2, "2.0": 1], into: billing)
        try Releases.write(1, at: "steady", version: "2.0", into: fixture.directory + "/cart", from: number, service: "cart")
        let partial = try decode(try fixture.hangwatch("diff", "1.0", "2.0", "--json", "--no-symbolicate"))
        #expect(partial.to.monitoredSeconds == nil && partial.comparedBy == "counts")
        #expect(partial.from.monitoredSeconds == 7200)
    }

    @Test func aDamagedMonitoredTimeFileIsWarnedAboutAndItsTimeUnknown() throws {
        let fixture = try Fixture(withDemoReports: false)
        let billing = fixture.directory + "/billing"
        let number = try Releases.write(3, at: "steady", version: "1.0", into: billing, from: 0)
        try Releases.write(1, at: "steady", version: "2.0", into: billing, from: number)
        // cart's file is fine, billing's is not: no rate at all (billing's may have held any version).
        try Releases.writeMonitoredTime(["1.0": 5, "2.0": 5], into: fixture.directory + "/cart")
        let damaged = billing + "/" + MonitoredTime.fileName
        let negative = #"{"schema":"hangwatch.monitored-time/1","versions":{"1.0":{"seconds":-5,"lastSeen":"2026-11-22T00:00:00Z"}}}"#
        for bytes in [Data("{\"schema\": \"hangwatch.monitored-ti".utf8), Data(negative.utf8), Data()] {
            try bytes.write(to: URL(fileURLWithPath: damaged))
            let result = try fixture.hangwatch("diff", "1.0", "2.0", "--json", "--no-symbolicate")
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.errors.contains("warning: ignored \(damaged): ") && result.errors.contains("monitored time is unknown"), "\(result.errors)")
            let diff = try decode(result)
            #expect(diff.comparedBy == "counts" && diff.from.monitoredSeconds == nil && diff.to.monitoredSeconds == nil)
            #expect(diff.status(of: "steady") == "fewer")
            let top = try fixture.hangwatch("top", "--by", "version", "--json", "--no-symbolicate")
            #expect(top.status == 0 && top.errors.contains(damaged) && !top.output.contains("perMonitoredHour"), "\(top.output)\(top.errors)")
        }
        // A directory in its place is not a file to read either.
        try FileManager.default.removeItem(atPath: damaged)
        try FileManager.default.createDirectory(atPath: damaged, withIntermediateDirectories: false)
        let directory = try fixture.hangwatch("diff", "1.0", "2.0", "--json", "--no-symbolicate")
        #expect(directory.status == 0 && directory.errors.contains(damaged), "\(directory.errors)")
        #expect(try decode(directory).from.monitoredSeconds == nil)
    }

    @Test func anUnknownVersionIsAnErrorNamingTheVersionsThere() throws {
        let fixture = try Fixture(withDemoReports: false)
        var number = 0
        for minor in 0..<12 {
            number = try Releases.write(1, at: "steady", version: "1.\(minor)", into: fixture.directory, from: number)
        }
        let result = try fixture.hangwatch("diff", "1.0", "9.9", "--no-symbolicate")
        #expect(result.status == 1)
        #expect(result.output.isEmpty)
        // Last seen first, ten of them.
        #expect(
            result.errors.contains(
                "hangwatch: no hangs of version 9.9 in \(fixture.directory); the versions with hangs: 1.11, 1.10, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4, 1.3, 1.2, and 2 more (last seen first)"),
            "\(result.errors)")
        let both = try fixture.hangwatch("diff", "8.8", "9.9", "--service", "billing", "--no-symbolicate")
        #expect(both.status == 1 && both.errors.contains("no hangs of versions 8.8 and 9.9 match in"), "\(both.errors)")

        let unversioned = try Fixture(withDemoReports: false)
        try Releases.write(1, at: "steady", version: nil, into: unversioned.directory, from: 0)
        let none = try unversioned.hangwatch("diff", "1.0", "2.0", "--no-symbolicate")
        #expect(none.status == 1 && none.errors.contains("no hang there carries a version"), "\(none.errors)")
    }

    @Test func theSameVersionTwiceIsAUsageError() throws {
        let fixture = try Fixture(withDemoReports: false)
        try Releases.write(1, at: "steady", version: "1.0", into: fixture.directory, from: 0)
        let result = try fixture.hangwatch("diff", "1.0", "1.0")
        #expect(result.status == 2)
        #expect(result.errors.contains("FROM and TO are both 1.0"), "\(result.errors)")
        #expect(result.output.isEmpty)
        #expect(try fixture.hangwatch("diff", "1.0").status == 2)
    }
}
