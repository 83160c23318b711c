import Foundation
import HangWatchReport
import HangWatchTestSupport
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

    /// Found by the fuzzer: `1970-01-01T00:00:00.183Z` was read as a hair under .183 and written
    /// back as `.182Z`, so each rewrite of a report (by the agent, by `hangwatch symbolicate`)
    /// moved its times by a millisecond. Every millisecond of a second, near 1970, before it, and
    /// now, reads back as written.
    @Test(arguments: [0, -86_400, 1_795_000_000, 253_402_300_000])
    func whatIsReadIsWrittenBackUnchanged(_ second: Int) throws {
        for millisecond in 0..<1000 {
            let text = ReportTimestamp.format(Date(timeIntervalSince1970: Double(second)))
                .replacingOccurrences(of: ".000Z", with: "." + String(millisecond + 1000).dropFirst() + "Z")
            let parsed = try #require(ReportTimestamp.parse(text), "\(text)")
            #expect(ReportTimestamp.format(parsed) == text)
        }
    }

    /// Found by the fuzzer: a time zone offset could put a timestamp past 9999-12-31T23:59:59Z,
    /// which `format` writes with a five-digit year that does not read back. Refused when read.
    @Test func refusesWhatCannotBeWrittenBackInFourDigitYears() throws {
        #expect(ReportTimestamp.parse("9999-12-31T23:59:60.999-23:59") == nil)
        #expect(ReportTimestamp.parse("0000-01-01T00:00:00.000+00:01") == nil)
        let last = try #require(ReportTimestamp.parse("9999-12-31T23:59:59.999Z"))
        #expect(ReportTimestamp.format(last) == "9999-12-31T23:59:59.999Z")
        let first = try #require(ReportTimestamp.parse("0000-01-01T00:00:00.000Z"))
        #expect(ReportTimestamp.format(first) == "0000-01-01T00:00:00.000Z")
    }
}
