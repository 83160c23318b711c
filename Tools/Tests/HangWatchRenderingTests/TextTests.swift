import HangWatchRendering
import Testing

/// Fixed-width text: cut with an ellipsis, padded, durations and ratios in a few characters.
@Suite struct TextTests {
    @Test(arguments: [
        (text: "billing", width: 10, right: false, fitted: "billing   "),
        (text: "billing", width: 10, right: true, fitted: "   billing"),
        (text: "billing-service", width: 8, right: false, fitted: "billing…"),
        (text: "billing", width: 7, right: false, fitted: "billing"),
        (text: "billing", width: 0, right: false, fitted: ""),
    ])
    func fitPadsOrCutsToExactlyTheWidth(_ row: (text: String, width: Int, right: Bool, fitted: String)) {
        #expect(Text.fit(row.text, row.width, right: row.right) == row.fitted)
    }

    @Test func clipCutsButNeverPads() {
        #expect(Text.clip("billing", 10) == "billing")
        #expect(Text.clip("billing-service", 8) == "billing…")
        #expect(Text.clip("billing", 0) == "")
    }

    @Test(arguments: [
        (milliseconds: 0.4, text: "0ms"),
        (milliseconds: 712.5, text: "713ms"),
        (milliseconds: 1_500, text: "1.5s"),
        (milliseconds: 12_000, text: "12s"),
        (milliseconds: 90_000, text: "1.5m"),
        (milliseconds: -5_000, text: "-5e+03ms"),
    ])
    func durationsAreShortWithTheirUnit(_ row: (milliseconds: Double, text: String)) {
        #expect(Text.duration(row.milliseconds) == row.text)
    }

    @Test func ratiosArePercentsAndMissingOnesADash() {
        #expect(Text.percent(0.984) == "98%")
        #expect(Text.percent(nil) == "-")
        #expect(Text.whole(1e308) == "1e+308")
    }
}
