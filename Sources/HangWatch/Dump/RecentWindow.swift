import HangWatchReport

/// A run loop's flight recorder read now, for `hangwatch dump --recent` (in the latch's units of
/// 1024 ns), and what the answer makes of it: the window as a hang's `before` holds one
/// (`HangReport.LeadUp`), the longest piece and how long the loop has been busy. Pure: tests build
/// one from numbers.
///
/// The window is the heartbeat's (`RecorderBusyWindow`): from the start of the oldest bucket to
/// now, the bucket in progress counted for its elapsed part, and the piece in progress (the loop
/// busy since its last busy activity, which the ring holds only once it ends) counted too. Unlike a
/// hang's `before`, which ends at the onset of the piece that hung, the window ends inside that
/// piece when the loop is busy now: it is added to the buckets it covers, so that the blocks drawn
/// show what the ratio counts. A bucket's `longestMs` stays the longest piece that ended in it.
struct RecentWindow: Equatable, Sendable {
    /// The recorder's buckets read ending at `nowUnits`, oldest first.
    var buckets: [UnsafeLeadUpRecorder.Bucket]
    var nowUnits: UInt64
    /// When the piece in progress began, when the loop is busy; nil: idle.
    var openPieceStartUnits: UInt64?
    /// The watched thread's CPU figures of each bucket, up to the watchdog's last reading while
    /// the loop was busy (`LeadUpCPULog`); empty where none were read.
    var cpu: [LeadUpCPULog.Figures?] = []

    /// Reads `recorder` and `latch` (the loop's last activity) at `nowMicroseconds`
    /// (`CLOCK_MONOTONIC`): on the watchdog's thread; nothing is written to either.
    static func read(_ recorder: UnsafeLeadUpRecorder, latch: ActivityLatch, nowMicroseconds: UInt64) -> RecentWindow {
        let nowUnits = RecorderBusyWindow.units(microseconds: nowMicroseconds)
        return RecentWindow(
            buckets: recorder.read(endingAt: nowUnits), nowUnits: nowUnits, openPieceStartUnits: RecorderBusyWindow.openPieceStart(latch))
    }

    /// The busy time, the time covered and the longest piece, as the heartbeat counts them.
    var busy: RecorderBusyWindow {
        RecorderBusyWindow(buckets: buckets, nowUnits: nowUnits, openPieceStartUnits: openPieceStartUnits)
    }

    /// How long the piece in progress has lasted (units); nil when the loop is idle.
    var busyNowUnits: UInt64? {
        openPieceStartUnits.map { nowUnits > $0 ? nowUnits - $0 : 0 }
    }

    /// The buckets with the piece in progress added to the ones it covers up to now (each at most
    /// the part of its bucket that has elapsed).
    var bucketsWithOpenPiece: [UnsafeLeadUpRecorder.Bucket] {
        guard let start = openPieceStartUnits, nowUnits > start else { return buckets }
        let size = UnsafeLeadUpRecorder.bucketUnits
        return buckets.map { bucket in
            var bucket = bucket
            let from = bucket.epoch * size
            let to = min(from + size, nowUnits)
            let overlap = to > max(from, start) ? to - max(from, start) : 0
            let elapsed = to > from ? to - from : 0
            bucket.busyUnits = min(bucket.busyUnits + overlap, elapsed)
            return bucket
        }
    }

    /// The answer's window: `before`'s shape, ending now. The reading says the ratio the answer
    /// carries (rounded to a thousandth), so that it and what the CLI draws from it agree.
    var window: HangReport.LeadUp {
        let ratio = ReportBuilder.ratio(busy.ratio)
        return LeadUpRecord.window(buckets, drawn: bucketsWithOpenPiece, ratio: ratio, reading: reading(ratio: ratio), cpu: cpu)
    }

    /// `busy 52 % in the last 5 s`, or `idle in the last 5 s (busy 3 %)` under 10 %.
    func reading(ratio: Double) -> String {
        let percent = Int((ratio * 100).rounded())
        let window = LeadUpRecord.seconds(units: UInt64(buckets.count) * UnsafeLeadUpRecorder.bucketUnits)
        return ratio < 0.1 ? "idle in the last \(window) s (busy \(percent) %)" : "busy \(percent) % in the last \(window) s"
    }
}
