@testable import HangWatch
import HangWatchReport
import Testing

/// What a report makes of the flight recorder: `before` (buckets, ratio, reading) and `kind`.
@Suite struct LeadUpRecordTests {
    let bucketUnits = UnsafeLeadUpRecorder.bucketUnits

    /// A window of `busy` fractions per bucket (the last holding the onset `onsetFraction` of
    /// the way in), buckets 100 ... 100 + count - 1.
    func record(_ busy: [Double], onsetFraction: Double = 1) -> LeadUpRecord {
        let buckets = busy.enumerated().map { offset, fraction in
            UnsafeLeadUpRecorder.Bucket(
                epoch: 100 + UInt64(offset), busyUnits: UInt64(fraction * Double(bucketUnits)), longestUnits: 1000,
                stretches: 1, iterations: 2)
        }
        let onset = (100 + UInt64(busy.count) - 1) * bucketUnits + UInt64(onsetFraction * Double(bucketUnits))
        return LeadUpRecord(
            buckets: buckets, onsetUnits: onset, stretchStartUnits: onset, stretchIterations: 0, stretchLongestUnits: 0,
            onsetBeganIteration: false)
    }

    @Test func anIdleWindowReadsIdle() {
        let leadUp = record(Array(repeating: 0.01, count: 50)).leadUp
        #expect(leadUp.windowMs == 5000)
        #expect(leadUp.bucketMs == 100)
        #expect(leadUp.buckets.count == 50)
        #expect(abs(leadUp.busyRatio - 0.01) < 0.001)
        #expect(leadUp.reading == "idle before onset (busy 1 %)")
        #expect(leadUp.buckets[0] == HangReport.LeadUp.Bucket(busyMs: 0.999, stretches: 1, iterations: 2, longestMs: 1.024))
        #expect(leadUp.tornBuckets == nil)
    }

    @Test func aBusyRunBeforeTheOnsetIsNamedWithItsLength() {
        // Idle for 2 s, then 92 % busy for 3 s; the onset 20 ms into its bucket (judged no run).
        let busy = Array(repeating: 0.0, count: 20) + Array(repeating: 0.92, count: 29) + [0.2]
        let leadUp = record(busy, onsetFraction: 0.2).leadUp
        #expect(leadUp.reading == "busy 92 % for 2.9 s before onset")
        #expect(abs(leadUp.busyRatio - (29 * 0.92 + 0.2) / 49.2) < 0.002)
    }

    @Test func intermittentBusyIsGivenOverTheWindow() {
        let busy = (0..<50).map { $0 % 2 == 0 ? 0.6 : 0.0 }
        #expect(record(busy).leadUp.reading == "busy 30 % in the 5 s before onset")
    }

    @Test func tornBucketsAreCounted() {
        var leadUp = record([0.5, 0.5])
        leadUp.buckets[0] = UnsafeLeadUpRecorder.Bucket(epoch: 100, torn: true)
        #expect(leadUp.leadUp.tornBuckets == 1)
        #expect(leadUp.leadUp.buckets[0].busyMs == 0)
    }

    struct KindRow: CustomTestStringConvertible, Sendable {
        var iterations: UInt64
        var busyBeforeMs: UInt64
        var longestMs: UInt64
        var expected: HangReport.Kind.Name
        var testDescription: String { "\(iterations) iterations, \(busyBeforeMs) ms before, longest \(longestMs) ms: \(expected)" }
    }

    /// Threshold 200 ms. A backlog is proven only by several iterations without sleeping, each at
    /// most a quarter of the threshold, that lasted the threshold; one piece proves nothing.
    @Test(arguments: [
        KindRow(iterations: 0, busyBeforeMs: 0, longestMs: 0, expected: .unknown),
        KindRow(iterations: 1, busyBeforeMs: 15, longestMs: 15, expected: .unknown),
        KindRow(iterations: 180, busyBeforeMs: 2700, longestMs: 15, expected: .mixed),
        KindRow(iterations: 2, busyBeforeMs: 200, longestMs: 50, expected: .mixed),
        KindRow(iterations: 2, busyBeforeMs: 200, longestMs: 51, expected: .unknown),
        KindRow(iterations: 20, busyBeforeMs: 199, longestMs: 10, expected: .unknown),
        KindRow(iterations: 3, busyBeforeMs: 450, longestMs: 150, expected: .unknown),
    ])
    func theKindFollowsFromWhatTheRunLoopProves(_ row: KindRow) {
        let kind = RunLoopHangKind.decide(
            iterationsBefore: row.iterations, busyBeforeMicroseconds: row.busyBeforeMs * 1000,
            longestBeforeMicroseconds: row.longestMs * 1000, thresholdMicroseconds: 200_000)
        #expect(kind.name == row.expected.rawValue)
        #expect(kind.iterationsBefore == Int(row.iterations))
        #expect(kind.busyBeforeMs == Double(row.busyBeforeMs))
    }

    @Test func theStretchBeforeTheOnsetGivesTheKind() {
        var leadUp = record([0.9, 0.9, 0.9, 0.9])
        // The stretch began 300 ms before the onset with 21 iterations, the piece that hung one of them.
        leadUp.stretchStartUnits = leadUp.onsetUnits - 3 * bucketUnits
        leadUp.stretchIterations = 21
        leadUp.stretchLongestUnits = bucketUnits / 10
        leadUp.onsetBeganIteration = true
        let kind = leadUp.kind(thresholdMicroseconds: 200_000)
        #expect(kind.name == "mixed")
        #expect(kind.iterationsBefore == 20)
        // A stretch that began after the onset is another one: nothing is proven.
        leadUp.stretchStartUnits = leadUp.onsetUnits + 1
        #expect(leadUp.kind(thresholdMicroseconds: 200_000).name == "unknown")
    }

    @Test func secondsAreWrittenToATenth() {
        #expect(LeadUpRecord.seconds(units: 48 * bucketUnits) == "4.8")
        #expect(LeadUpRecord.seconds(units: 50 * bucketUnits) == "5")
    }
}
