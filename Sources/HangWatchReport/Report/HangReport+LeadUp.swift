extension HangReport {
    /// What the watched loop did in the seconds before the hang began (`before`, schema 1.7), from
    /// its flight recorder: the window, its buckets oldest first, the busy ratio and a one-line
    /// reading. Only sources that keep a recorder write it (today: `runloop`).
    public struct LeadUp: Codable, Sendable, Equatable {
        /// The window's length: `buckets.count` buckets of `bucketMs`, the last of them holding the onset.
        public var windowMs: Double
        public var bucketMs: Double
        /// Oldest first; the last is the bucket the hang began in, counted up to the onset.
        public var buckets: [Bucket]
        /// Busy time over the time the window covers before the onset, 0 ... 1.
        public var busyRatio: Double
        /// One line: `busy 92 % for 4.8 s before onset`, `idle before onset (busy 1 %)`.
        public var reading: String
        /// Buckets the loop rewrote while they were read: counted as idle. Absent when none.
        public var tornBuckets: Int?

        public init(windowMs: Double, bucketMs: Double, buckets: [Bucket], busyRatio: Double, reading: String, tornBuckets: Int? = nil) {
            self.windowMs = windowMs
            self.bucketMs = bucketMs
            self.buckets = buckets
            self.busyRatio = busyRatio
            self.reading = reading
            self.tornBuckets = tornBuckets
        }

        /// One bucket of the window.
        public struct Bucket: Codable, Sendable, Equatable {
            /// Time the loop was busy in the bucket.
            public var busyMs: Double
            /// Busy stretches (from a wake to the next sleep) that ended in it.
            public var stretches: Int
            /// Iterations of the loop begun in it.
            public var iterations: Int
            /// The longest busy piece (between two observed activities: what the threshold is
            /// compared with) that ended in it.
            public var longestMs: Double

            public init(busyMs: Double, stretches: Int, iterations: Int, longestMs: Double) {
                self.busyMs = busyMs
                self.stretches = stretches
                self.iterations = iterations
                self.longestMs = longestMs
            }
        }
    }

    /// What held the loop, as far as the source can prove it (`kind`, schema 1.7).
    public struct Kind: Codable, Sendable, Equatable {
        /// `oneJob`, `backlog`, `mixed` or `unknown` (`Name`).
        public var name: String
        /// Why, in one line.
        public var reason: String
        /// Iterations the loop began in the same busy stretch before the piece that hung (run loop).
        public var iterationsBefore: Int?
        /// How long the loop had been busy without sleeping when that piece began (run loop).
        public var busyBeforeMs: Double?

        public init(name: Name, reason: String, iterationsBefore: Int? = nil, busyBeforeMs: Double? = nil) {
            self.name = name.rawValue
            self.reason = reason
            self.iterationsBefore = iterationsBefore
            self.busyBeforeMs = busyBeforeMs
        }

        public enum Name: String, Sendable, CaseIterable {
            /// One job held the loop past the threshold.
            case oneJob
            /// Many short jobs, none past the threshold, kept the loop busy past it.
            case backlog
            /// Many short jobs, then a piece past the threshold.
            case mixed
            /// The source cannot prove which.
            case unknown
        }
    }
}
