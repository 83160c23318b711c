import Foundation
import HangWatchReading
import HangWatchReport
import HangWatchTestSupport
import Testing

/// `--since` and `--until` read times the way journalctl does.
@Suite struct ReportFilterTimeTests {
    /// A fixed now (2026-11-23 15:30:00 UTC) and a zone an hour east of UTC.
    static let now = Date(timeIntervalSince1970: 1_795_447_800)
    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 3600)!
        return calendar
    }()

    @Test(arguments: [
        ("90s", -90.0), ("2h30m", -9_000), ("-1h", -3_600), ("1h ago", -3_600), ("+1h", 3_600), ("now", 0), ("1d12h", -129_600),
        // Midnight of the zone's day (16:30 local): 16.5 h back.
        ("today", -59_400), ("yesterday", -145_800), ("tomorrow", 27_000),
        // Local dates and times.
        ("2026-11-23", -59_400), ("2026-11-23 10:00", -23_400), ("2026-11-23 10:00:30", -23_370), ("2026-11-23T10:00", -23_400),
        // RFC 3339 says its own zone.
        ("2026-11-23T15:00:00Z", -1_800), ("2026-11-23T15:00:00+01:00", -5_400),
    ])
    func readsWhatJournalctlReads(text: String, offset: Double) throws {
        let date = try #require(ReportFilter.parseTime(text, now: Self.now, calendar: Self.calendar), "\(text)")
        #expect(abs(date.timeIntervalSince(Self.now) - offset) < 0.001, "\(text): \(date.timeIntervalSince(Self.now))")
    }

    @Test(arguments: ["", "90", "soon", "2026-13-01", "2026-02-30", "2026-11-23 25:00", "2026-11-23 10", "-", "1h ago ago", "2026-1-2"])
    func refusesTheRest(text: String) {
        #expect(ReportFilter.parseTime(text, now: Self.now, calendar: Self.calendar) == nil, "\(text)")
    }

    @Test func untilKeepsHangsThatStartedBefore() {
        let filter = ReportFilter(since: Self.now.addingTimeInterval(-3600), until: Self.now.addingTimeInterval(-600))
        func summary(_ offset: Double) -> ReportSummary {
            var summary = ReportSummary(report: ReportFixtures.report(), path: "/r/hang.json")
            summary.startedAt = Self.now.addingTimeInterval(offset)
            return summary
        }
        #expect(!filter.matches(summary(-4000)))
        #expect(filter.matches(summary(-3600)))
        #expect(filter.matches(summary(-601)))
        #expect(!filter.matches(summary(-600)))
    }
}
