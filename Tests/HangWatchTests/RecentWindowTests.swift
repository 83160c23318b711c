import Foundation
@testable import HangWatch
import HangWatchReport
import Testing

/// `hangwatch dump --recent`'s window of a run loop's flight recorder, ending now: the heartbeat's
/// busy ratio (the bucket in progress for its elapsed part, the piece in progress counted), the
/// piece in progress drawn in the buckets it covers, the longest piece and how long the loop has
/// been busy. From numbers, in the latch's units of 1024 ns.
@Suite struct RecentWindowTests {
    static let size = UnsafeLeadUpRecorder.bucketUnits

    /// Five buckets, epochs 10 to 14, now half-way through the last: the ring holds half of bucket
    /// 10 (its longest piece 1,000 units) and a quarter of bucket 12; a piece began half-way
    /// through bucket 13 and goes on.
    static func busyNow() -> RecentWindow {
        let size = Self.size
        return RecentWindow(
            buckets: [
                .init(epoch: 10, busyUnits: size / 2, longestUnits: 1_000, stretches: 3, iterations: 4),
                .init(epoch: 11),
                .init(epoch: 12, busyUnits: size / 4, longestUnits: size / 4, stretches: 1, iterations: 1),
                .init(epoch: 13),
                .init(epoch: 14),
            ], nowUnits: 14 * size + size / 2, openPieceStartUnits: 13 * size + size / 2)
    }

    @Test func thePieceInProgressIsCountedInTheRatioAndDrawnInTheBucketsItCovers() {
        let recent = Self.busyNow()
        let size = Self.size
        #expect(recent.bucketsWithOpenPiece.map(\.busyUnits) == [size / 2, 0, size / 4, size / 2, size / 2])
        // Counts and the longest piece that ended in a bucket are the ring's.
        #expect(recent.bucketsWithOpenPiece.map(\.longestUnits) == [1_000, 0, size / 4, 0, 0])
        #expect(recent.bucketsWithOpenPiece.map(\.iterations) == [4, 0, 1, 0, 0])
        let window = recent.window
        // 1.75 buckets busy over the 4.5 the window covers, as the heartbeat reads it.
        #expect(window.busyRatio == ReportBuilder.ratio(1.75 / 4.5), "\(window.busyRatio)")
        #expect(window.busyRatio == ReportBuilder.ratio(recent.busy.ratio))
        #expect(window.windowMs == 500 && window.bucketMs == 100 && window.buckets.count == 5)
        #expect(window.buckets.map(\.busyMs) == [50, 0, 25, 50, 50].map { LeadUpRecord.milliseconds(units: size * UInt64($0) / 100) })
        #expect(window.reading == "busy 39 % in the last 0.5 s", "\(window.reading)")
        #expect(window.tornBuckets == nil)
        // The piece in progress is the longest, and has lasted a bucket.
        #expect(recent.busy.longestUnits == size)
        #expect(recent.busyNowUnits == size)
    }

    @Test func anIdleLoopReadsIdleAndNotBusyNow() {
        var recent = Self.busyNow()
        recent.openPieceStartUnits = nil
        recent.buckets[2] = .init(epoch: 12)
        recent.buckets[0].busyUnits = Self.size / 10
        #expect(recent.busyNowUnits == nil)
        #expect(recent.bucketsWithOpenPiece == recent.buckets)
        let window = recent.window
        #expect(window.busyRatio == ReportBuilder.ratio(0.1 / 4.5))
        #expect(window.reading == "idle in the last 0.5 s (busy 2 %)", "\(window.reading)")
        #expect(recent.busy.longestUnits == 1_000)
    }

    /// The reading says the ratio the answer carries: 0.50496 is written 0.505, which the CLI
    /// draws as 51 %, and the reading says 51 % too (not the 50 % of the ratio before rounding).
    @Test func theReadingSaysTheRatioAsWritten() {
        let size = Self.size
        let recent = RecentWindow(
            buckets: [
                .init(epoch: 10, busyUnits: size), .init(epoch: 11, busyUnits: size), .init(epoch: 12, busyUnits: 26_593), .init(epoch: 13),
                .init(epoch: 14),
            ], nowUnits: 14 * size + size / 2, openPieceStartUnits: nil)
        #expect(recent.busy.ratio > 0.5049 && recent.busy.ratio < 0.505)
        #expect(recent.window.busyRatio == 0.505)
        #expect(recent.window.reading == "busy \(Int((recent.window.busyRatio * 100).rounded())) % in the last 0.5 s", "\(recent.window.reading)")
        #expect(recent.window.reading == "busy 51 % in the last 0.5 s")
    }

    /// A bucket never holds more busy time than its elapsed part: the ring's piece that ended (read
    /// on the coarse clock) and the piece in progress (from the same clock) may overlap by a tick.
    @Test func aBucketIsNeverBusierThanItsElapsedPart() {
        var recent = Self.busyNow()
        recent.buckets[4].busyUnits = Self.size / 2
        #expect(recent.bucketsWithOpenPiece[4].busyUnits == Self.size / 2)
    }

    /// A torn bucket (rewritten while read) reads idle and is counted.
    @Test func aTornBucketIsCountedAsIdle() {
        var recent = Self.busyNow()
        recent.buckets[1].torn = true
        #expect(recent.window.tornBuckets == 1)
        #expect(recent.window.buckets[1].busyMs == 0)
    }
}
