import Foundation
import HangWatchReading
import HangWatchReport
import HangWatchTestSupport
import Testing

/// `top` counts a report's folded repeats with what its file records of them.
@Suite struct HangGroupTests {
    @Test func foldedRepeatsCountInTotalsMaximaAndLastSeen() throws {
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        var first = ReportFixtures.report(id: "20261120T100000000Z-billing-42-1", durationMs: 300)
        first.startedAt = start
        // Three repeats folded into it: 296 ms the longest, the last 6.8 s after the first hang.
        first.repeats = HangReport.Repeats(count: 3, lastAt: start.addingTimeInterval(6.8), totalDurationMs: 850, maxDurationMs: 296)
        var second = ReportFixtures.report(id: "20261120T100001000Z-billing-42-2", durationMs: 280)
        second.startedAt = start.addingTimeInterval(1)
        let other = ReportFixtures.report(id: "20261120T100002000Z-billing-42-3", durationMs: 5000)
        var otherSignature = other
        otherSignature.signature = "ffffffff"

        let groups = HangGroup.group([first, second, otherSignature].map { ReportSummary(report: $0, path: "/r/" + $0.id) })
        let group = try #require(groups.first { $0.signature == first.signature })
        #expect(group.count == 5)
        #expect(abs(group.totalMs - (300 + 850 + 280)) < 0.001, "\(group.totalMs)")
        #expect(group.maxMs == 300)
        #expect(group.lastSeen == start.addingTimeInterval(6.8))
        #expect(group.firstSeen == start)

        // A repeat longer than the report's own hang is the group's maximum.
        first.repeats?.maxDurationMs = 420
        let longer = try #require(HangGroup.group([ReportSummary(report: first, path: "/r/a")]).first)
        #expect(longer.maxMs == 420)
    }

    /// The catalog's index keeps what the summaries say of repeats.
    @Test func theIndexKeepsTheRepeats() throws {
        let root = ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        var report = ReportFixtures.report()
        report.repeats = HangReport.Repeats(count: 2, lastAt: report.startedAt.addingTimeInterval(30), totalDurationMs: 640, maxDurationMs: 330)
        let store = ReportStore(directory: root + "/reports")
        try store.prepare()
        _ = try store.write(report)
        let catalog = ReportCatalog(directory: root + "/reports", indexPath: root + "/index")
        let fresh = try catalog.summaries().summaries
        let indexed = try catalog.summaries().summaries
        #expect(FileManager.default.fileExists(atPath: root + "/index"))
        #expect(fresh == indexed)
        #expect(indexed.first?.repeatsTotalMs == 640 && indexed.first?.repeatsMaxMs == 330)
        #expect(indexed.first?.lastSeen == report.startedAt.addingTimeInterval(30))
    }

    /// A report named after the fact groups by names; one without, by addresses; each says so.
    @Test func groupsSayWhichSignatureTheyUse() throws {
        var named = ReportFixtures.report(id: "20261120T100000000Z-billing-42-1")
        for index in named.frames.indices { named.frames[index].symbol = named.frames[index].symbol ?? "billing.f\(index)() -> ()" }
        named.heaviestStack?.frames = named.frames
        let unnamed = ReportFixtures.report(id: "20261120T100001000Z-billing-42-2")
        let groups = HangGroup.group([named, unnamed].map { ReportSummary(report: $0, path: "/r/" + $0.id) })
        #expect(Set(groups.compactMap(\.signatureKind)) == [.names, .addresses])
        #expect(groups.first { $0.signatureKind == .addresses }?.signature == unnamed.signature)
        #expect(groups.first { $0.signatureKind == .names }?.signature == named.grouping.signature)
    }

    @Test func groupsByALabelsValueWithOneGroupForHangsWithoutIt() throws {
        func report(_ id: Int, route: String?, ms: Double) -> ReportSummary {
            var report = ReportFixtures.report(id: "20261120T10000\(id)000Z-billing-42-\(id)", durationMs: ms)
            report.labels = route.map { ["route": $0, "tenant": "acme"] } ?? ["tenant": "acme"]
            return ReportSummary(report: report, path: "/r/\(id)")
        }
        let summaries = [report(1, route: "GET /checkout", ms: 300), report(2, route: "GET /checkout", ms: 400),
                         report(3, route: "GET /cart", ms: 900), report(4, route: nil, ms: 100), report(5, route: "", ms: 50)]
        let groups = HangGroup.group(summaries, byLabel: "route")
        #expect(groups.map(\.labelValue) == ["GET /cart", "GET /checkout", nil, ""])
        #expect(groups.map(\.count) == [1, 2, 1, 1])
        #expect(groups.allSatisfy { $0.labelKey == "route" && $0.signature.isEmpty && $0.signatureKind == nil })
        #expect(groups[1].totalMs == 700)
    }

    @Test func aLabelFilterMatchesAKeyAValueOrAPattern() throws {
        var report = ReportFixtures.report()
        report.labels = ["route": "GET /checkout", "tenant": "acme"]
        let summary = ReportSummary(report: report, path: "/r/a")
        func matches(_ texts: String...) -> Bool {
            ReportFilter(labels: texts.compactMap(ReportFilter.LabelMatch.init)).matches(summary)
        }
        #expect(matches("route=GET /checkout"))
        #expect(matches("route=*checkout"))
        #expect(matches("tenant"))
        #expect(matches("route=GET /check*", "tenant=acme"))
        #expect(!matches("route=/checkout"))
        #expect(!matches("route=GET /checkout", "tenant=globex"))
        #expect(!matches("request"))
        #expect(ReportFilter.LabelMatch("=x") == nil && ReportFilter.LabelMatch("") == nil)
        #expect(ReportFilter.LabelMatch("a=b=c") == ReportFilter.LabelMatch(key: "a", pattern: "b=c"))
        #expect(!ReportFilter(labels: [ReportFilter.LabelMatch(key: "route", pattern: nil)]).matches(ReportSummary(report: ReportFixtures.report(), path: "/r/b")))
    }
}
