/// The hang decision, as a pure function of the loop's last activity, the time, and the settings.
/// No threads, no clocks: the watchdog feeds it, tests feed it numbers.
struct HangDetector: Sendable, Equatable {
    /// A busy period at least this long is a hang.
    var thresholdMicroseconds: UInt64
    /// Activities after which the loop is busy (mask of `HangMonitor.Activity` raw values).
    var busyMask: UInt8
    /// Resolution of the clock the loop's activity times come from: activity times are up to this
    /// much early, so the deadline waits this much longer to never call a shorter burst a hang.
    var clockResolutionMicroseconds: UInt64
    /// A busy piece past half the threshold is a near miss, sampled once for the lead-up
    /// (`NearMissLog`). False: none are looked for (no flight recorder).
    var looksForNearMisses = false

    enum Decision: Equatable, Sendable {
        /// The loop is idle (asleep, or has not run yet): block until it becomes busy.
        case idle
        /// The loop is busy but not for long enough yet: look again at this time.
        case waitUntil(microseconds: UInt64)
        /// The loop has been busy since `startMicroseconds` for at least the threshold.
        case hang(startMicroseconds: UInt64)
        /// The loop has been busy since `startMicroseconds` for half the threshold, and this piece
        /// has not been sampled as a near miss yet: sample it now, then decide again.
        case nearMiss(startMicroseconds: UInt64)
    }

    /// Decides for `snapshot` at time `now`. Busy time before `countFrom` does not count (start-up
    /// grace, or detection paused until then). `nearMissSampled`: this piece (its latch word) was
    /// sampled as a near miss already.
    func evaluate(_ snapshot: ActivitySnapshot, now: UInt64, countFrom: UInt64 = 0, nearMissSampled: Bool = false) -> Decision {
        let activity = snapshot.activity
        guard activity != 0, activity & busyMask != 0 else { return .idle }
        let start = max(snapshot.microseconds, countFrom)
        let deadline = start + thresholdMicroseconds + clockResolutionMicroseconds
        if now >= deadline {
            return .hang(startMicroseconds: start)
        }
        if looksForNearMisses && !nearMissSampled {
            // The same margin as the threshold's: a piece called a near miss lasted half of it.
            let halfway = start + thresholdMicroseconds / 2 + clockResolutionMicroseconds
            return now >= halfway ? .nearMiss(startMicroseconds: start) : .waitUntil(microseconds: halfway)
        }
        return .waitUntil(microseconds: deadline)
    }

    /// Whether the hang that began with `hangSnapshot` is over given the latest `snapshot`: any new
    /// activity means the loop moved. Returns the time it moved.
    static func endOfHang(started hangSnapshot: ActivitySnapshot, latest snapshot: ActivitySnapshot) -> UInt64? {
        snapshot.word == hangSnapshot.word ? nil : snapshot.microseconds
    }
}
