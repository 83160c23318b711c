import Foundation
import HangWatchReport
import Testing

@Suite struct ReportTimestampTests {
    @Test func formatsUTCWithMilliseconds() {
        let date = Date(timeIntervalSince1970: 1_795_000_000.123)
        #expect(ReportTimestamp.format(date) == "2026-11-18T11:06:40.123Z")
    }

    @Test func compactFormHasNoSeparators() {
        let date = Date(timeIntervalSince1970: 1_795_000_000.123)
        #expect(ReportTimestamp.compact(date) == "20261118T110640123Z")
    }

    @Test func parsesWhatItFormats() throws {
        let date = Date(timeIntervalSince1970: 1_795_000_000.456)
        let parsed = try #require(ReportTimestamp.parse(ReportTimestamp.format(date)))
        #expect(abs(parsed.timeIntervalSince1970 - date.timeIntervalSince1970) < 0.0005)
    }

    @Test func parsesOffsetsAndMissingFraction() throws {
        let withOffset = try #require(ReportTimestamp.parse("2026-11-18T12:06:40.5+01:00"))
        #expect(abs(withOffset.timeIntervalSince1970 - 1_795_000_000.5) < 0.0005)
        let noFraction = try #require(ReportTimestamp.parse("2026-11-18T11:06:40Z"))
        #expect(noFraction.timeIntervalSince1970 == 1_795_000_000)
    }

    @Test(arguments: ["", "2026-11-19", "2026-13-19T09:46:40Z", "2026-11-19T09:46:40", "2026-11-19T09:46:40.Z",
                      "2026-11-19T25:00:00Z", "2026-11-19T09:46:40Zjunk", "yyyy-mm-ddThh:mm:ssZ"])
    func rejectsMalformedTimestamps(_ text: String) {
        #expect(ReportTimestamp.parse(text) == nil)
    }
}
