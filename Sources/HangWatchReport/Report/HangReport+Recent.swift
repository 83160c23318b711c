extension HangReport {
    /// `hangwatch dump --recent`'s answer (`source` `recent`; optional, since schema 1.8): every
    /// watch of the process when it was asked, each with the current window of its
    /// flight recorder (what a hang's `before` holds, ending now instead of at an onset), or why it
    /// keeps none. No hang needs to have happened.
    public struct Recent: Codable, Sendable, Equatable {
        /// Every watch of the process, in the order they started; the cooperative pool's watch
        /// last, while one runs.
        public var sources: [Source]

        public init(sources: [Source]) {
            self.sources = sources
        }

        /// One watch, now.
        public struct Source: Codable, Sendable, Equatable {
            /// What it watches, as a report names its `source`: `runloop`, `dispatch-main`,
            /// `dispatch-queue`, `nio-eventloop`, `scope`, `concurrency-pool`.
            public var source: String
            /// The service it reports for (its configuration's `serviceName`).
            public var service: String
            /// The thread it watches, as it last attached; absent before one did (and for the pool).
            public var thread: ThreadInfo?
            /// Its threshold now.
            public var thresholdMs: Double
            /// The recorder's window ending now: the buckets oldest first, the last counted up to
            /// now, the piece in progress counted in the buckets it covers; `busyRatio` is busy time
            /// over the time the window covers; `reading` says it in one line (`busy 52 % in the
            /// last 5 s`). Absent for a watch without a recorder (`noRecorder` says why).
            public var window: LeadUp?
            /// The longest piece in the window: the longest that ended in it, or the one in
            /// progress if longer. Absent without a recorder.
            public var longestMs: Double?
            /// How long the loop has been in the piece in progress: busy now. Absent when it is
            /// idle, and without a recorder.
            public var busyNowMs: Double?
            /// Why there is no window: `only run loops and event loops keep a flight recorder`, `its flight
            /// recorder is off (leadUpWindow 0)`. Absent when there is one.
            public var noRecorder: String?
            /// Every busy piece the recorder counted since it began, by length: what the heartbeat
            /// publishes for `hangwatch_loop_lag_seconds`. Absent without a recorder.
            public var lag: Lag?

            public init(
                source: String, service: String, thread: ThreadInfo?, thresholdMs: Double, window: LeadUp? = nil,
                longestMs: Double? = nil, busyNowMs: Double? = nil, noRecorder: String? = nil
            ) {
                self.source = source
                self.service = service
                self.thread = thread
                self.thresholdMs = thresholdMs
                self.window = window
                self.longestMs = longestMs
                self.busyNowMs = busyNowMs
                self.noRecorder = noRecorder
            }
        }

        /// A recorder's lag histogram: busy pieces per bucket of length, on the coarse clock (4 ms
        /// ticks: most pieces read 0).
        public struct Lag: Codable, Sendable, Equatable {
            /// The buckets' upper bounds (inclusive), ms; the last bucket, past the last bound, has none.
            public var boundsMs: [Double]
            /// Pieces per bucket: one more than `boundsMs`.
            public var counts: [UInt64]
            /// Their lengths in all, ms.
            public var totalMs: Double

            public init(boundsMs: [Double], counts: [UInt64], totalMs: Double) {
                self.boundsMs = boundsMs
                self.counts = counts
                self.totalMs = totalMs
            }

            /// The counts of a heartbeat-shaped histogram (`LoopBusyHistogram`).
            public init(_ counts: LoopBusyHistogram.Counts) {
                self.init(
                    boundsMs: LoopBusyHistogram.bounds.map { Double($0) / 1e6 }, counts: counts.buckets,
                    totalMs: Double(counts.totalNanoseconds) / 1e6)
            }

            public var pieces: UInt64 { counts.reduce(0, &+) }

            /// The upper bound (ms) of the bucket the `quantile`th piece falls in (0 < quantile
            /// ≤ 1): at least that share of the pieces were at most this long. Nil when there is no
            /// piece, or it falls in the last bucket (longer than every bound).
            public func atMostMs(_ quantile: Double) -> Double? {
                let total = pieces
                guard total > 0 else { return nil }
                let rank = UInt64((Double(total) * quantile).rounded(.up))
                var seen: UInt64 = 0
                for (index, count) in counts.enumerated() {
                    seen &+= count
                    if seen >= rank { return index < boundsMs.count ? boundsMs[index] : nil }
                }
                return nil
            }

            /// The bucket of the longest piece: its index, and its count.
            public var longest: (index: Int, count: UInt64)? {
                counts.indices.last { counts[$0] > 0 }.map { ($0, counts[$0]) }
            }
        }
    }
}
