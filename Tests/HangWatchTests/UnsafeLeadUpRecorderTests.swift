@testable import HangWatch
import HangWatchReport
import Testing

/// The run loop's flight recorder, written through the latch on scripted time
/// (`record(_:atMicroseconds:)`), read as the watchdog reads it.
@Suite struct UnsafeLeadUpRecorderTests {
    let beforeSources: UInt8 = 4
    let beforeWaiting: UInt8 = 32
    let afterWaiting: UInt8 = 64

    func makeLatch(buckets: Int = 50) -> ActivityLatch {
        ActivityLatch(busyActivities: [.beforeSources, .afterWaiting], leadUpBuckets: buckets)
    }

    /// Microseconds to the latch's units, as `record(_:atMicroseconds:)` converts them.
    func units(_ microseconds: UInt64) -> UInt64 { (microseconds * 1000) >> 10 }

    func milliseconds(_ units: UInt64) -> Double { Double(units) * 1.024 / 1000 }

    @Test func aStretchAcrossBucketBoundariesIsSplitBetweenThem() throws {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 1_050_000)
        latch.record(beforeWaiting, atMicroseconds: 1_320_000)
        let recorder = try #require(latch.leadUp)
        let buckets = Array(recorder.read(endingAt: units(1_320_000)).suffix(4))
        #expect(buckets.map(\.epoch) == [10, 11, 12, 13])
        let busy = buckets.map { milliseconds($0.busyUnits) }
        #expect(abs(busy[0] - 50) < 0.1)
        #expect(abs(busy[1] - 100) < 0.1)
        #expect(abs(busy[2] - 100) < 0.1)
        #expect(abs(busy[3] - 20) < 0.1)
        // Counted once, where it ended, with its whole length.
        #expect(buckets.map(\.stretches) == [0, 0, 0, 1])
        #expect(abs(milliseconds(buckets[3].longestUnits) - 270) < 0.1)
        #expect(buckets.prefix(3).allSatisfy { $0.longestUnits == 0 })
    }

    @Test func busyPiecesIterationsAndStretchesAreCountedWhereTheyEnd() throws {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 2_010_000)
        latch.record(beforeSources, atMicroseconds: 2_020_000)
        latch.record(beforeSources, atMicroseconds: 2_050_000)
        latch.record(beforeSources, atMicroseconds: 2_055_000)
        latch.record(beforeWaiting, atMicroseconds: 2_060_000)
        // Idle to idle, and the next wake, in the same bucket.
        latch.record(beforeWaiting, atMicroseconds: 2_070_000)
        latch.record(afterWaiting, atMicroseconds: 2_080_000)
        latch.record(beforeWaiting, atMicroseconds: 2_090_000)
        let recorder = try #require(latch.leadUp)
        let bucket = try #require(recorder.read(endingAt: units(2_090_000)).last)
        #expect(bucket.epoch == 20)
        #expect(bucket.iterations == 3)
        #expect(bucket.stretches == 2)
        #expect(abs(milliseconds(bucket.busyUnits) - 60) < 0.1)
        #expect(abs(milliseconds(bucket.longestUnits) - 30) < 0.1)
        #expect(!bucket.torn)
    }

    /// Lag below the threshold: every piece that ends (at a busy activity, or at the idle one that
    /// ends its stretch) is counted in the recorder's lag histogram by its length; the activity
    /// that begins a stretch ends none, and idle to idle counts nothing.
    @Test func everyPieceIsCountedInTheLagHistogramByItsLength() throws {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 4_000_000)
        latch.record(beforeSources, atMicroseconds: 4_007_000)
        latch.record(beforeSources, atMicroseconds: 4_037_000)
        latch.record(beforeSources, atMicroseconds: 4_037_000)
        latch.record(beforeWaiting, atMicroseconds: 4_187_000)
        latch.record(beforeWaiting, atMicroseconds: 4_500_000)
        latch.record(afterWaiting, atMicroseconds: 4_600_000)
        let lag = try #require(latch.leadUp).lag.read()
        // Bounds 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250 ms ...: 0, 7, 30 and 150 ms.
        var expected = [UInt64](repeating: 0, count: LoopBusyHistogram.bucketCount)
        expected[0] = 1
        expected[6] = 1
        expected[8] = 1
        expected[10] = 1
        #expect(lag.buckets == expected)
        #expect(abs(Double(lag.totalNanoseconds) / 1e6 - 187) < 0.01, "\(lag.totalNanoseconds)")
    }

    @Test func theCurrentStretchKeepsItsStartIterationsAndLongestPiece() throws {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 3_000_000)
        latch.record(beforeSources, atMicroseconds: 3_012_000)
        latch.record(beforeSources, atMicroseconds: 3_020_000)
        let stretch = try #require(latch.leadUp).stretch()
        #expect(stretch.start == units(3_000_000))
        #expect(stretch.iterations == 2)
        #expect(abs(milliseconds(stretch.longestUnits) - 12) < 0.1)
        // The next wake begins another stretch.
        latch.record(beforeWaiting, atMicroseconds: 3_021_000)
        latch.record(beforeSources, atMicroseconds: 3_100_000)
        let next = try #require(latch.leadUp).stretch()
        #expect(next.start == units(3_100_000))
        #expect(next.iterations == 1)
        #expect(next.longestUnits == 0)
    }

    @Test func aStaleBucketReadsAsIdle() throws {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 1_010_000)
        latch.record(beforeWaiting, atMicroseconds: 1_060_000)
        let recorder = try #require(latch.leadUp)
        #expect(recorder.read(endingAt: units(1_060_000)).last?.busyUnits ?? 0 > 0)
        // Five seconds later bucket 10's slot is bucket 60's: it holds an older epoch, read as idle.
        let later = recorder.read(endingAt: units(6_560_000))
        #expect(later.count == 50)
        #expect(later.first?.epoch == 16)
        #expect(later.allSatisfy { $0.busyUnits == 0 && $0.stretches == 0 && $0.iterations == 0 && !$0.torn })
    }

    /// Bucket 60 has bucket 10's slot: the loop resets it before counting there, and goes on
    /// counting in it (its cache of the bucket last written).
    @Test func aSlotIsResetForItsNextBucketAndThenAddedTo() throws {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 1_010_000)
        latch.record(beforeWaiting, atMicroseconds: 1_060_000)
        latch.record(afterWaiting, atMicroseconds: 6_010_000)
        latch.record(beforeSources, atMicroseconds: 6_020_000)
        latch.record(beforeWaiting, atMicroseconds: 6_030_000)
        latch.record(afterWaiting, atMicroseconds: 6_040_000)
        latch.record(beforeWaiting, atMicroseconds: 6_045_000)
        let recorder = try #require(latch.leadUp)
        let bucket = try #require(recorder.read(endingAt: units(6_045_000)).last)
        #expect(bucket.epoch == 60)
        #expect(abs(milliseconds(bucket.busyUnits) - 25) < 0.1)
        #expect(bucket.stretches == 2 && bucket.iterations == 1)
        #expect(abs(milliseconds(bucket.longestUnits) - 10) < 0.1)
    }

    @Test func aBucketBeingResetReadsAsIdle() throws {
        let latch = makeLatch()
        latch.record(afterWaiting, atMicroseconds: 1_010_000)
        latch.record(beforeWaiting, atMicroseconds: 1_060_000)
        let recorder = try #require(latch.leadUp)
        // The writer's first store of a reset: the invalid epoch.
        (recorder.words + 3 * 10).pointee.store(UnsafeLeadUpRecorder.invalidEpoch, ordering: .relaxed)
        #expect(recorder.read(endingAt: units(1_060_000)).last?.busyUnits == 0)
    }

    @Test func aPieceOlderThanTheWindowKeepsOnlyItsPartInTheWindow() throws {
        let latch = makeLatch(buckets: 5)
        latch.record(afterWaiting, atMicroseconds: 1_050_000)
        latch.record(beforeWaiting, atMicroseconds: 2_050_000)
        let buckets = try #require(latch.leadUp).read(endingAt: units(2_050_000))
        #expect(buckets.map(\.epoch) == [16, 17, 18, 19, 20])
        let busy = buckets.reduce(0) { $0 + $1.busyUnits }
        #expect(abs(milliseconds(busy) - 450) < 0.2)
    }

    @Test func aWindowOfZeroKeepsNoRecorder() {
        let latch = makeLatch(buckets: 0)
        latch.record(afterWaiting, atMicroseconds: 1_050_000)
        latch.record(beforeWaiting, atMicroseconds: 1_320_000)
        #expect(latch.leadUp == nil)
        var configuration = HangMonitor.Configuration(serviceName: "svc")
        #expect(configuration.leadUpBuckets == 50)
        configuration.leadUpWindow = .zero
        #expect(configuration.leadUpBuckets == 0)
        configuration.leadUpWindow = .milliseconds(250)
        #expect(configuration.leadUpBuckets == 3)
    }

    @Test func theWindowIsReadFromTheEnvironmentAndChecked() throws {
        let configuration = try HangMonitor.Configuration.load(
            serviceName: "svc", environment: ["HANGWATCH_LEAD_UP_WINDOW": "2s"])
        #expect(configuration.leadUpWindow == .seconds(2))
        #expect(throws: HangMonitorError.self) {
            try HangMonitor.Configuration.load(serviceName: "svc", environment: ["HANGWATCH_LEAD_UP_WINDOW": "2m"])
        }
        let off = try HangMonitor.Configuration.load(serviceName: "svc", environment: ["HANGWATCH_LEAD_UP_WINDOW": "0"])
        #expect(off.leadUpBuckets == 0)
    }
}
