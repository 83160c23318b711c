import Foundation
import HangWatchRendering
import HangWatchReport
import HangWatchTestSupport
import Testing

/// `hangwatch dump --recent`'s text of an answer, as strings: each watch with its window drawn as
/// `show` draws a lead-up, its reading, longest piece and whether it is busy now; a watch without a
/// recorder says so.
@Suite(.serialized) struct RecentDumpTextTests {
    static func window(_ busy: [Double], ratio: Double, reading: String, torn: Int? = nil) -> HangReport.LeadUp {
        HangReport.LeadUp(
            windowMs: Double(busy.count) * 100, bucketMs: 100,
            buckets: busy.map { HangReport.LeadUp.Bucket(busyMs: $0, stretches: 1, iterations: 2, longestMs: $0 / 2) }, busyRatio: ratio,
            reading: reading, tornBuckets: torn)
    }

    static func answer(_ sources: [HangReport.Recent.Source]) -> HangReport {
        var report = ReportFixtures.report()
        report.source = "recent"
        report.recent = HangReport.Recent(sources: sources)
        return report
    }

    static func render(_ report: HangReport) -> [String] {
        Text.utc = true
        return ReportDetail(terminal: Terminal(colors: false, width: 100), maxFrames: 16).renderRecent(report)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    @Test func eachWatchIsItsWindowDrawnItsReadingAndItsLongestPieceOrWhyItHasNone() {
        let loop = HangReport.Recent.Source(
            source: "runloop", service: "billing", thread: HangReport.ThreadInfo(tid: 42, name: "billing", isMain: true), thresholdMs: 250,
            window: Self.window([0, 0, 50, 100, 100, 50, 0, 0], ratio: 0.375, reading: "busy 38 % in the last 0.8 s"), longestMs: 24,
            busyNowMs: 8)
        let queue = HangReport.Recent.Source(
            source: "dispatch-queue", service: "billing", thread: HangReport.ThreadInfo(tid: 57, name: "queue-worker", isMain: false),
            thresholdMs: 250, noRecorder: "only run loops and event loops keep a flight recorder")
        let pool = HangReport.Recent.Source(
            source: "concurrency-pool", service: "ledger", thread: nil, thresholdMs: 500, noRecorder: "only run loops and event loops keep a flight recorder")
        let lines = Self.render(Self.answer([loop, queue, pool]))
        #expect(
            lines == [
                "recent windows of billing (pid 42, host host-1) at 2026-11-18 11:06:40.123 UTC",
                "3 watches, 1 with a flight recorder",
                "",
                "runloop \"billing\" tid 42 (main), threshold 250ms",
                "  0.8 s: ▁▁▅██▅▁▁  busy 38 %",
                "  busy 38 % in the last 0.8 s (a block per 100ms); longest piece 24ms; busy now for 8ms",
                "",
                "dispatch-queue \"queue-worker\" tid 57, threshold 250ms",
                "  no window: only run loops and event loops keep a flight recorder",
                "",
                "concurrency-pool, threshold 500ms, service ledger",
                "  no window: only run loops and event loops keep a flight recorder",
            ], "\(lines.joined(separator: "\n"))")
    }

    /// The line `show` draws for a hang's lead-up is the one drawn here (the same 50-column blocks
    /// for a 5 s window); an idle loop says it is idle now; torn buckets are said.
    @Test func theBlocksAreShowsAndAnIdleLoopSaysSo() {
        let window = Self.window(Array(repeating: 0, count: 49) + [10], ratio: 0.002, reading: "idle in the last 5 s (busy 0 %)", torn: 2)
        let loop = HangReport.Recent.Source(
            source: "runloop", service: "billing", thread: HangReport.ThreadInfo(tid: 42, name: nil, isMain: true), thresholdMs: 250,
            window: window, longestMs: 5)
        let lines = Self.render(Self.answer([loop]))
        #expect(lines[1] == "1 watch, 1 with a flight recorder")
        #expect(lines[3] == "runloop \"?\" tid 42 (main), threshold 250ms")
        #expect(lines[4] == "  " + ReportDetail.leadUpLine(window) && lines[4].hasPrefix("  5 s: ▁▁▁"), "\(lines[4])")
        #expect(
            lines[5] == "  idle in the last 5 s (busy 0 %) (a block per 100ms); longest piece 5ms; idle now; 2 buckets rewritten while read (counted idle)",
            "\(lines[5])")
    }

    /// The recorder's lag since it began, by its histogram's bounds: how many pieces, the bounds
    /// 99 % and 99.9 % of them were under, and the bucket of the longest with its count; a
    /// quantile in the last, open bucket says "over" its bound.
    @Test func theLagLineSaysItsPiecesQuantilesAndLongest() {
        var counts = [UInt64](repeating: 0, count: 15)
        counts[0] = 58_000
        counts[7] = 1_100
        counts[8] = 139
        counts[9] = 2
        let lag = HangReport.Recent.Lag(boundsMs: LoopBusyHistogram.bounds.map { Double($0) / 1e6 }, counts: counts, totalMs: 29_000)
        #expect(lag.pieces == 59_241)
        #expect(lag.atMostMs(0.99) == 25 && lag.atMostMs(0.999) == 50 && lag.atMostMs(0.5) == 0.1)
        var loop = HangReport.Recent.Source(
            source: "runloop", service: "billing", thread: HangReport.ThreadInfo(tid: 42, name: "billing", isMain: true), thresholdMs: 250,
            window: Self.window([50, 50], ratio: 0.5, reading: "busy 50 % in the last 0.2 s"), longestMs: 24)
        loop.lag = lag
        #expect(
            Self.render(Self.answer([loop]))[6]
                == "  lag since the recorder began: 59,241 pieces; 99 % at most 25ms, 99.9 % at most 50ms; the longest at most 100ms (2)")
        var over = counts
        over[14] = 1_000
        loop.lag = HangReport.Recent.Lag(boundsMs: lag.boundsMs, counts: over, totalMs: 3_000_000)
        #expect(loop.lag?.atMostMs(0.99) == nil)
        #expect(Self.render(Self.answer([loop]))[6].hasSuffix("60,241 pieces; 99 % over 2.5s, 99.9 % over 2.5s; the longest over 2.5s (1,000)"))
        loop.lag = HangReport.Recent.Lag(boundsMs: lag.boundsMs, counts: Array(repeating: 0, count: 15), totalMs: 0)
        #expect(Self.render(Self.answer([loop]))[6] == "  lag since the recorder began: no piece yet")
    }
}
