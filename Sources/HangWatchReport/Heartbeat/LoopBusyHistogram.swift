/// The buckets of the loop-busy histogram a monitor publishes in its heartbeat page when
/// `HANGWATCH_LOOP_HISTOGRAM=yes`: how long each loop iteration was busy, from leaving sleep
/// (or the first busy activity) to going back to sleep. Part of the heartbeat file format.
public enum LoopBusyHistogram {
    /// Upper bounds, nanoseconds, of every bucket but the last (which is open-ended).
    public static let bounds: [UInt64] = [
        100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000, 10_000_000, 25_000_000, 50_000_000,
        100_000_000, 250_000_000, 500_000_000, 1_000_000_000, 2_500_000_000,
    ]
    public static var bucketCount: Int { bounds.count + 1 }

    /// The bucket `nanoseconds` falls in (the bounds are inclusive, as Prometheus' `le`).
    public static func bucket(_ nanoseconds: UInt64) -> Int {
        bounds.firstIndex { nanoseconds <= $0 } ?? bounds.count
    }

    /// Counts published by one monitor: iterations per bucket and their total busy time.
    public struct Counts: Sendable, Equatable {
        public var buckets: [UInt64]
        public var totalNanoseconds: UInt64
        public init(buckets: [UInt64], totalNanoseconds: UInt64) {
            self.buckets = buckets
            self.totalNanoseconds = totalNanoseconds
        }
        public var iterations: UInt64 { buckets.reduce(0, &+) }

        /// What was added since `earlier` (all of it when the counts went backwards: a new monitor).
        public func since(_ earlier: Counts?) -> Counts {
            guard let earlier, earlier.buckets.count == buckets.count,
                zip(buckets, earlier.buckets).allSatisfy({ $0 >= $1 }), totalNanoseconds >= earlier.totalNanoseconds
            else { return self }
            return Counts(buckets: zip(buckets, earlier.buckets).map { $0 - $1 }, totalNanoseconds: totalNanoseconds - earlier.totalNanoseconds)
        }
    }
}
