@_spi(Internal) import HangWatchReport

/// What a run loop's thread did with the CPU while the loop was busy, for a hang's lead-up: the
/// thread's `schedstat` (on a CPU, waiting for one) and its cgroup's throttled time, read by the
/// watchdog at the wakes it makes anyway while the loop is busy (about one per half threshold:
/// each busy piece's near-miss look or its deadline) and at the idle look that ends a stretch. No
/// wake-up is added, and nothing is read while the loop sleeps (the watchdog is parked).
///
/// The watchdog's own: one lane writes it and reads it, on the watchdog's thread. Fixed size: the
/// last `capacity` readings in a ring allocated once, each at least `spacing` (100 ms) after the
/// one before it but the newest (a reading replaces the newest until that one is), so they span
/// the recorder's window and more: `buckets + 16` readings, 40 bytes each (2,640 bytes at 5 s).
///
/// A bucket's figures spread each difference between two readings of the same thread at most
/// `maximumGap` apart evenly over the time between them. Readings further apart have the watchdog
/// parked between them: the loop was idle, and that time is not covered (its figures are nil).
struct LeadUpCPULog: Sendable {
    /// (Laid out in 40 bytes.)
    struct Reading: Sendable, Equatable {
        /// When (`CLOCK_MONOTONIC`, µs).
        var microseconds: UInt64
        var onCPUNanoseconds: UInt64
        var runQueueNanoseconds: UInt64
        /// The thread's cgroup's throttled time so far (nil: no limit to throttle it, or unread).
        var throttledNanoseconds: UInt64?
        /// Whose.
        var tid: Int32
    }

    /// A bucket's (or the window's) figures, in nanoseconds.
    struct Figures: Sendable, Equatable {
        var coveredNanoseconds: UInt64 = 0
        var onCPUNanoseconds: UInt64 = 0
        var runQueueNanoseconds: UInt64 = 0
        /// Nil when a difference that covers part of it had no throttled time on both sides.
        var throttledNanoseconds: UInt64? = 0

        static func + (left: Figures, right: Figures) -> Figures {
            Figures(
                coveredNanoseconds: left.coveredNanoseconds + right.coveredNanoseconds,
                onCPUNanoseconds: left.onCPUNanoseconds + right.onCPUNanoseconds,
                runQueueNanoseconds: left.runQueueNanoseconds + right.runQueueNanoseconds,
                throttledNanoseconds: left.throttledNanoseconds.flatMap { one in right.throttledNanoseconds.map { one + $0 } })
        }
    }

    static let spacingMicroseconds: UInt64 = 100_000
    static let maximumGapMicroseconds: UInt64 = 1_000_000

    let capacity: Int
    private var ring: [Reading]
    /// Readings held (at most `capacity`), and the slot the next one goes in.
    private var count = 0
    private var next = 0

    /// A log for a recorder of `buckets` 100 ms buckets: one reading per bucket, and 16 more (the
    /// newest, unsettled, and those up to detection, a threshold after the window's end).
    init(buckets: Int) {
        capacity = buckets + 16
        ring = Array(repeating: Reading(microseconds: 0, onCPUNanoseconds: 0, runQueueNanoseconds: 0, tid: 0), count: capacity)
    }

    /// Bytes a log for `buckets` buckets holds.
    static func bytes(buckets: Int) -> Int { (buckets + 16) * MemoryLayout<Reading>.stride }

    /// Notes a probe's reading of `tid` (ignored without its `schedstat`, or older than the last).
    mutating func note(_ counters: HangContextCounters, tid: Int32) {
        guard let schedule = counters.schedule else { return }
        let reading = Reading(
            microseconds: counters.microseconds, onCPUNanoseconds: schedule.onCPUNanoseconds, runQueueNanoseconds: schedule.runQueueNanoseconds,
            throttledNanoseconds: counters.throttling?.throttledNanoseconds, tid: tid)
        if count > 0 {
            let last = (next + capacity - 1) % capacity
            guard reading.microseconds >= ring[last].microseconds else { return }
            // The newest reading is replaced until it is `spacing` after the one before it (the
            // first is kept: the difference from it would start later).
            let before = (last + capacity - 1) % capacity
            if count > 1, ring[last].tid == tid, ring[before].tid == tid,
                ring[last].microseconds - ring[before].microseconds < Self.spacingMicroseconds
            {
                ring[last] = reading
                return
            }
        }
        ring[next] = reading
        next = (next + 1) % capacity
        count = min(count + 1, capacity)
    }

    /// The readings held, oldest first.
    var readings: [Reading] {
        (0..<count).map { ring[(next + capacity - count + $0) % capacity] }
    }

    /// The figures of each span (`CLOCK_MONOTONIC` µs, start inclusive, end exclusive), nil where
    /// no difference covers any of it.
    func figures(of spans: [(start: UInt64, end: UInt64)]) -> [Figures?] {
        let readings = self.readings
        var result = [Figures?](repeating: nil, count: spans.count)
        for (earlier, later) in zip(readings, readings.dropFirst()) {
            let gap = later.microseconds - earlier.microseconds
            guard gap > 0, gap <= Self.maximumGapMicroseconds, earlier.tid == later.tid else { continue }
            // A counter that went back (a cgroup moved to, a thread restarted) tells nothing.
            guard later.onCPUNanoseconds >= earlier.onCPUNanoseconds, later.runQueueNanoseconds >= earlier.runQueueNanoseconds else {
                continue
            }
            var throttled: UInt64?
            if let from = earlier.throttledNanoseconds, let to = later.throttledNanoseconds, to >= from { throttled = to - from }
            for (index, span) in spans.enumerated() {
                let from = max(span.start, earlier.microseconds)
                let to = min(span.end, later.microseconds)
                guard to > from else { continue }
                let overlap = to - from
                func share(_ total: UInt64) -> UInt64 { UInt64((Double(total) * Double(overlap) / Double(gap)).rounded()) }
                let part = Figures(
                    coveredNanoseconds: overlap * 1000, onCPUNanoseconds: share(later.onCPUNanoseconds - earlier.onCPUNanoseconds),
                    runQueueNanoseconds: share(later.runQueueNanoseconds - earlier.runQueueNanoseconds), throttledNanoseconds: throttled.map(share))
                result[index] = result[index].map { $0 + part } ?? part
            }
        }
        return result
    }
}

/// A lane's `LeadUpCPULog`, shared with its watch's recent-window dumps (`WatchedSource`): both
/// use it on the watchdog's thread only (the lane writes and reads it, the dump reads it).
final class LeadUpCPUReadings: @unchecked Sendable {
    var log: LeadUpCPULog

    init(buckets: Int) {
        log = LeadUpCPULog(buckets: buckets)
    }
}
