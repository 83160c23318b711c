/// A run loop's busy time over its flight recorder's window ending now, as the heartbeat publishes
/// it (`MonitorHeartbeat.BusyWindow`). Pure: tests build one from buckets.
///
/// The window runs from the start of the oldest bucket read to now, so the bucket in progress
/// counts for the part of it that has elapsed (a window of 4.9 to 5 s at the default 5 s). The ring
/// holds the pieces that ended; the piece in progress (a busy loop, from its last busy activity to
/// now) is added, so a loop busy in a piece of 150 ms reads busy now, not when the piece ends.
struct RecorderBusyWindow: Equatable, Sendable {
    /// In the latch's units of 1024 ns.
    var windowUnits: UInt64
    var busyUnits: UInt64
    var longestUnits: UInt64

    /// - Parameters:
    ///   - buckets: the recorder's buckets read ending at `nowUnits`, oldest first.
    ///   - nowUnits: now, in units.
    ///   - openPieceStartUnits: when the piece in progress began, when the loop is busy; nil: idle.
    init(buckets: [UnsafeLeadUpRecorder.Bucket], nowUnits: UInt64, openPieceStartUnits: UInt64?) {
        let firstStart = (buckets.first?.epoch ?? nowUnits / UnsafeLeadUpRecorder.bucketUnits) * UnsafeLeadUpRecorder.bucketUnits
        windowUnits = nowUnits > firstStart ? nowUnits - firstStart : 0
        var busy = buckets.reduce(UInt64(0)) { $0 + $1.busyUnits }
        var longest = buckets.map(\.longestUnits).max() ?? 0
        if let start = openPieceStartUnits, nowUnits > start {
            busy += nowUnits - max(start, firstStart)
            longest = max(longest, nowUnits - start)
        }
        busyUnits = min(busy, windowUnits)
        longestUnits = longest
    }

    init(windowUnits: UInt64, busyUnits: UInt64, longestUnits: UInt64) {
        self.windowUnits = windowUnits
        self.busyUnits = busyUnits
        self.longestUnits = longestUnits
    }

    /// Reads `recorder` and `latch` (the loop's last activity) at `nowMicroseconds` (`CLOCK_MONOTONIC`).
    static func read(_ recorder: UnsafeLeadUpRecorder, latch: ActivityLatch, nowMicroseconds: UInt64) -> RecorderBusyWindow {
        let nowUnits = units(microseconds: nowMicroseconds)
        return RecorderBusyWindow(buckets: recorder.read(endingAt: nowUnits), nowUnits: nowUnits, openPieceStartUnits: openPieceStart(latch))
    }

    /// When the piece in progress began (units): the loop's last activity, when it is a busy one;
    /// nil when the loop is idle (or has recorded nothing yet).
    static func openPieceStart(_ latch: ActivityLatch) -> UInt64? {
        let snapshot = latch.snapshot()
        let busy = snapshot.word != 0 && !ActivityLatch.isIdle(snapshot.activity, idleMask: latch.storage.pointee.idleMask)
        return busy ? snapshot.word >> 8 : nil
    }

    /// `CLOCK_MONOTONIC` microseconds in the latch's units of 1024 ns.
    static func units(microseconds: UInt64) -> UInt64 { (microseconds * 1000) >> 10 }

    /// Busy time over the window, 0 to 1.
    var ratio: Double { windowUnits > 0 ? Double(busyUnits) / Double(windowUnits) : 0 }

    static func nanoseconds(units: UInt64) -> UInt64 { units << 10 }
}
