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
}
