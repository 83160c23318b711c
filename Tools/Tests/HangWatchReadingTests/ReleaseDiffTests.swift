import Foundation
@testable import HangWatchReading
import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct ReleaseDiffTests {
    /// The rule as a table: (hangs in FROM, in TO, rates or nil) → status.
    @Test(arguments: [
        (0, 3, nil, ReleaseDiff.Status.new), (3, 0, nil, .gone), (3, 3, nil, .same), (3, 4, nil, .more), (4, 3, nil, .fewer),
        // By rate: ±25% of FROM's is the same, whatever the counts.
        (10, 5, (1.0, 1.25), .same), (10, 5, (1.0, 1.26), .more), (10, 20, (1.0, 0.75), .same), (10, 20, (1.0, 0.74), .fewer),
        (0, 3, (0.0, 1.0), .new), (3, 0, (1.0, 0.0), .gone),
    ] as [(Int, Int, (Double, Double)?, ReleaseDiff.Status)])
    func statusFollowsTheRule(from: Int, to: Int, rates: (Double, Double)?, expected: ReleaseDiff.Status) {
        #expect(ReleaseDiff.status(from: from, to: to, rates: rates.map { (from: $0.0, to: $0.1) }) == expected)
    }

    func summary(_ version: String?, signature: String, number: Int, repeats: Int = 0) -> ReportSummary {
        var report = ReportFixtures.report(id: "20261122T0102\(String(format: "%02d", number))123Z-billing-42-\(number)")
        report.signature = signature
        report.startedAt = report.startedAt.addingTimeInterval(Double(number))
        report.serviceVersion = version.map { ServiceVersion(version: $0, source: .environment) }
        if repeats > 0 {
            report.repeats = HangReport.Repeats(count: repeats, lastAt: report.startedAt, totalDurationMs: 1, maxDurationMs: 1)
        }
        return ReportSummary(report: report, path: "/r/\(number).json")
    }

    /// Repeats count as hangs, other versions are left out, rows are sorted by status then by hangs
    /// in TO, and a rate is given only where the time is known.
    @Test func rowsCountRepeatsAndLeaveOtherVersionsOut() {
        let summaries = [
            summary("1", signature: "aaaaaaaaaaaaaaaa", number: 1), summary("2", signature: "aaaaaaaaaaaaaaaa", number: 2, repeats: 2),
            summary("2", signature: "bbbbbbbbbbbbbbbb", number: 3), summary("2", signature: "cccccccccccccccc", number: 4, repeats: 4),
            summary("3", signature: "dddddddddddddddd", number: 5), summary(nil, signature: "eeeeeeeeeeeeeeee", number: 6),
        ]
        let diff = ReleaseDiff(summaries, from: "1", to: "2", monitoredSeconds: { $0 == "2" ? 7200 : nil })
        #expect(diff.basis == .counts)
        #expect(diff.from.count == 1 && diff.to.count == 9)
        #expect(diff.rows.map(\.signature) == ["cccccccccccccccc", "bbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaa"])
        #expect(diff.rows.map(\.status) == [.new, .new, .more])
        #expect(diff.rows.map(\.toCount) == [5, 1, 3])
        #expect(diff.rows.map(\.toPerHour) == [2.5, 0.5, 1.5] && diff.rows.allSatisfy { $0.fromPerHour == nil })
        #expect(ReleaseDiff.versions(in: summaries) == ["3", "2", "1"])
    }

    /// Monitored time is known only when all of it is: a damaged file anywhere in view, or a
    /// directory whose hangs of the version were not counted, makes it unknown.
    @Test func monitoredTimeIsKnownOnlyWhenAllOfItIs() {
        let now = Date(timeIntervalSince1970: 0)
        func time(_ seconds: [String: Double]) -> MonitoredTimeFiles.State {
            .read(MonitoredTime(versions: seconds.mapValues { MonitoredTime.Entry(seconds: $0, lastSeen: now) }))
        }
        var hang = summary("2", signature: "aaaaaaaaaaaaaaaa", number: 1)
        hang.path = "/r/billing/hang-1.json"
        let files = MonitoredTimeFiles(directories: [
            .init(path: "/r", state: .missing), .init(path: "/r/billing", state: time(["2": 100, "1": 50])),
            .init(path: "/r/cart", state: time(["2": 20])),
        ])
        #expect(files.seconds(of: "2", services: [], summaries: [hang]) == 120)
        #expect(files.seconds(of: "2", services: ["billing"], summaries: [hang]) == 100)
        #expect(files.seconds(of: "1", services: [], summaries: [hang]) == 50)
        #expect(files.seconds(of: "3", services: [], summaries: [hang]) == nil)
        // Hangs of 2 in a directory without a file: their time was not counted.
        var elsewhere = hang
        elsewhere.path = "/r/hang-2.json"
        #expect(files.seconds(of: "2", services: [], summaries: [hang, elsewhere]) == nil)
        var damaged = files
        damaged.directories[2].state = .damaged(reason: "truncated")
        #expect(damaged.seconds(of: "2", services: [], summaries: [hang]) == nil)
        #expect(damaged.seconds(of: "2", services: ["billing"], summaries: [hang]) == 100)
        #expect(damaged.damaged.map(\.path) == ["/r/cart/.monitored-time.json"])
    }
}
