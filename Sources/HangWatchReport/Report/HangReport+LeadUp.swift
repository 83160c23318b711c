extension HangReport {
    /// What the watched loop did in the seconds before the hang began (`before`, schema 1.7; near misses 1.8), from
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
        /// Schema 1.8: the busy pieces past half the threshold in the window, oldest first, one
        /// sample each, taken half-way (at most the watchdog's last 32). Absent when none.
        public var nearMisses: [NearMiss]?
        /// Schema 1.8: the function most near misses were in (their stacks' first frame of the
        /// service's own code), as `reading` names it. Absent without near misses with stacks.
        public var nearMissesIn: String?
        /// The loop thread's CPU figures over the window (the sum of the buckets'), from the
        /// watchdog's readings while the loop was busy (additive within 1.8). Absent where none
        /// was read (no `schedstat`, the recorder off).
        public var cpu: CPU?

        public init(
            windowMs: Double, bucketMs: Double, buckets: [Bucket], busyRatio: Double, reading: String, tornBuckets: Int? = nil,
            nearMisses: [NearMiss]? = nil
        ) {
            self.windowMs = windowMs
            self.bucketMs = bucketMs
            self.buckets = buckets
            self.busyRatio = busyRatio
            self.reading = reading
            self.tornBuckets = tornBuckets
            self.nearMisses = nearMisses
        }

        /// A busy piece that passed half the threshold and ended before it: what ran half-way.
        public struct NearMiss: Codable, Sendable, Equatable {
            /// When the piece began, from the onset (negative: before it).
            public var offsetMs: Double
            /// How long it had run when sampled: it lasted at least this long (and under the
            /// threshold, or it would have been a hang).
            public var atLeastMs: Double
            /// Index into the report's `stacks`; absent when no stack was taken (`error` says why).
            public var stack: Int?
            /// Why there is no stack (`samples[].error`'s words).
            public var error: String?

            public init(offsetMs: Double, atLeastMs: Double, stack: Int?, error: String?) {
                self.offsetMs = offsetMs
                self.atLeastMs = atLeastMs
                self.stack = stack
                self.error = error
            }
        }

        /// What the loop's thread did with the CPU over part of the window, from the `schedstat`
        /// and the cgroup's `cpu.stat` the watchdog read at its wakes while the loop was busy
        /// (about one per half threshold), each difference between two readings at most 1 s apart
        /// spread evenly over the time between them. Time between readings further apart (the
        /// watchdog parked: the loop was idle) is not covered.
        public struct CPU: Codable, Sendable, Equatable {
            /// The part of the bucket (or window) the readings cover.
            public var coveredMs: Double
            /// The thread on a CPU.
            public var onCpuMs: Double
            /// The thread runnable but waiting for a CPU (throttled time included: a throttled
            /// thread waits on its run queue).
            public var runQueueMs: Double
            /// The thread's CPU cgroup's throttled time (summed over the CPUs it was throttled
            /// on; every thread of the cgroup, the monitor's own included). Absent without a
            /// limit on the thread's cgroup path (nothing can throttle it) or its counter.
            public var throttledMs: Double?

            public init(coveredMs: Double, onCpuMs: Double, runQueueMs: Double, throttledMs: Double?) {
                self.coveredMs = coveredMs
                self.onCpuMs = onCpuMs
                self.runQueueMs = runQueueMs
                self.throttledMs = throttledMs
            }
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
            /// The loop thread's CPU figures in the bucket (additive within 1.8); absent where the
            /// watchdog's readings do not cover it (the loop idle).
            public var cpu: CPU?

            public init(busyMs: Double, stretches: Int, iterations: Int, longestMs: Double, cpu: CPU? = nil) {
                self.busyMs = busyMs
                self.stretches = stretches
                self.iterations = iterations
                self.longestMs = longestMs
                self.cpu = cpu
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

extension HangReport {
    /// Names the function most of the lead-up's near misses ran in (`before.nearMissesIn`: their
    /// stacks' first frame of the service's own code, else their first frame) and ends
    /// `before.reading` with them: `busy 92 % for 4.8 s before onset, 3 near misses in
    /// `Pricing.price(cart:)``. The monitor runs it as it builds the report and again once its
    /// enricher named the frames; run again, it only renames. Ties go to the latest near miss.
    public mutating func nameNearMisses() {
        guard var before, let misses = before.nearMisses, !misses.isEmpty else { return }
        let old = LeadUp.nearMissPhrase(count: misses.count, in: before.nearMissesIn)
        if before.reading.hasSuffix(old) { before.reading.removeLast(old.count) }
        var seen: [String: (count: Int, latest: Int, name: String)] = [:]
        for (index, miss) in misses.enumerated() {
            guard let stack = miss.stack, stacks.indices.contains(stack) else { continue }
            let frames = stacks[stack].frames.compactMap { self.frames.indices.contains($0) ? self.frames[$0] : nil }
            let app = StackSignature.appFrames(frames, images: images).first { !($0.symbol.map(SymbolName.isLinkerStub) ?? false) }
            guard let frame = app ?? frames.first else { continue }
            let (key, name) = Self.function(of: frame, images: images)
            let count = (seen[key]?.count ?? 0) + 1
            seen[key] = (count, index, name)
        }
        before.nearMissesIn = seen.values.max { ($0.count, $0.latest) < ($1.count, $1.latest) }?.name
        before.reading += LeadUp.nearMissPhrase(count: misses.count, in: before.nearMissesIn)
        self.before = before
    }

    /// What makes two frames one function (their symbol, else their function's start in their
    /// image, else their address) and the name it is shown by.
    static func function(of frame: Frame, images: [Image]) -> (key: String, name: String) {
        if frame.symbol != nil {
            let name = FrameNaming.displayName(frame, images: images)
            return (name, name)
        }
        if let image = frame.image(in: images), let start = frame.functionOffset ?? frame.offset {
            let name = StackSignature.baseName(image.path) + "+" + start
            return (name, name)
        }
        return (frame.address, frame.address)
    }
}

extension HangReport.LeadUp {
    /// `, 3 near misses in `f``, `, 1 near miss`: how `reading` ends when the window had near misses.
    static func nearMissPhrase(count: Int, in function: String?) -> String {
        let noun = count == 1 ? "near miss" : "near misses"
        return ", \(count) \(noun)" + (function.map { " in `\($0)`" } ?? "")
    }
}
