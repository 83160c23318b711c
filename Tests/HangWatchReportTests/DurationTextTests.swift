import HangWatchReport
import Testing

@Suite struct DurationTextTests {
    @Test(arguments: [
        ("250", 0.25), ("250ms", 0.25), ("1.5s", 1.5), ("2m", 120), ("12h", 43_200), ("30d", 2_592_000), ("500us", 0.0005),
        // As systemd and journalctl write them.
        ("1d12h", 129_600), ("2h30m", 9_000), ("1h 30min", 5_400), ("1w", 604_800), ("90sec", 90), ("1m30s", 90), (" 5 M ", 300),
    ])
    func readsWhatPeopleWrite(text: String, seconds: Double) throws {
        let duration = try #require(DurationText.parse(text), "\(text)")
        #expect(DurationText.nanoseconds(duration) == Int64((seconds * 1e9).rounded()), "\(text)")
    }

    @Test(arguments: ["", "abc", "-5s", "5 parsecs", "1h30", "1.2.3s", "s", "inf", "nan", "1e300s", "2h-30m"])
    func refusesTheRest(text: String) {
        #expect(DurationText.parse(text) == nil, "\(text)")
    }

    /// What the settings files print reads back the same.
    @Test(arguments: ["0s", "250ms", "2s", "5m", "12h", "30d", "1500us"])
    func formatAndParseRoundTrip(text: String) throws {
        let duration = try #require(DurationText.parse(text))
        #expect(DurationText.format(duration) == text)
        #expect(DurationText.parse(DurationText.format(duration)) == duration)
    }
}
