import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// One zone everywhere: local time by default, UTC with --utc, the offset always shown.
@Suite struct TimeZoneTests {
    /// A report that started at 2026-11-22 01:02:03.123 UTC.
    static func fixture() throws -> Fixture {
        let fixture = try Fixture(withDemoReports: false)
        var report = ReportFixtures.report()
        report.startedAt = Date(timeIntervalSince1970: 1_795_309_323.123)
        try ReportStore(directory: fixture.directory).prepare()
        _ = try ReportStore(directory: fixture.directory).write(report)
        return fixture
    }

    @Test func listShowAndTopAgreeOnTheZoneAndSayIt() throws {
        let fixture = try Self.fixture()
        // Two hours east of UTC, without daylight saving (POSIX TZ: the sign is reversed).
        let east = ["TZ": "XST-2"]
        let list = try fixture.hangwatch("list", "--no-symbolicate", environment: east)
        // Not today: dates and times, under the zone.
        #expect(list.lines.first?.hasPrefix("STARTED +02:00") == true, "\(list.output)")
        #expect(list.lines.dropFirst().first?.hasPrefix("11-22 03:02:03") == true, "\(list.output)")
        let show = try fixture.hangwatch("show", "latest", "--no-symbolicate", environment: east)
        #expect(show.output.contains("2026-11-22 03:02:03.123 +02:00"), "\(show.output)")
        let top = try fixture.hangwatch("top", "--no-symbolicate", environment: east)
        #expect(top.output.contains("11-22 03:02:03 +02:00"), "\(top.output)")

        let utcList = try fixture.hangwatch("list", "--no-symbolicate", "--utc", environment: east)
        #expect(utcList.lines.first?.hasPrefix("STARTED UTC") == true, "\(utcList.output)")
        #expect(utcList.output.contains("01:02:03"))
        let utcShow = try fixture.hangwatch("show", "latest", "--no-symbolicate", "--utc", environment: east)
        #expect(utcShow.output.contains("2026-11-22 01:02:03.123 UTC"), "\(utcShow.output)")
    }
}
