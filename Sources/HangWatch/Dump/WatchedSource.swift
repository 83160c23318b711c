import HangWatchReport

/// One watch of the process as `hangwatch dump --recent` lists it: `DumpService` keeps one from the
/// watch's `begin` to its `end`. What it watches, for which service and which monitor, its latch
/// (whose flight recorder, when it keeps one, is read), the thread it watches and its threshold.
/// Read on the watchdog's thread when a recent-window dump is asked for; the loop's thread only
/// ever writes the latch, as it always does.
struct WatchedSource: Sendable {
    /// The watch (its `MonitorAssembly`): removed by it.
    var id: ObjectIdentifier
    /// The monitor that started it (the pool watch names its runner by this).
    var monitor: ObjectIdentifier
    var kind: ActivitySourceKind
    var service: String
    var latch: ActivityLatch
    var threadSlot: ThreadSlot
    var control: WatchdogControl
    /// The watchdog's CPU readings of the watched thread while the loop was busy (with a recorder).
    var cpuReadings: LeadUpCPUReadings? = nil
    /// Whether the recorder holds the window (units) before a moment (`ActivitySource.leadUpCovers`).
    var covers: @Sendable (_ windowUnits: UInt64, _ beforeUnits: UInt64) -> Bool = { _, _ in true }

    /// Why a watch keeps no recorder.
    static let onlyRunLoops = "only run loops and event loops keep a flight recorder"
    static let recorderOff = "its flight recorder is off (leadUpWindow 0)"
    static let notCovering = "its flight recorder does not cover the window yet (an event loop's edges were not exact for all of it)"

    /// Its line of the answer at `nowMicroseconds` (`CLOCK_MONOTONIC`), `pid` the process's (the
    /// main thread's tid).
    func recent(nowMicroseconds: UInt64, pid: Int32) -> HangReport.Recent.Source {
        let thread = threadSlot.thread.map { HangReport.ThreadInfo(tid: $0.tid, name: $0.name, isMain: $0.tid == pid) }
        var line = HangReport.Recent.Source(
            source: kind.rawValue, service: service, thread: thread,
            thresholdMs: ReportBuilder.milliseconds(Int64(control.thresholdMicroseconds.load(ordering: .relaxed))))
        guard let recorder = latch.leadUp else {
            line.noRecorder = kind == .runLoop || kind == .nioEventLoop ? Self.recorderOff : Self.onlyRunLoops
            return line
        }
        guard covers(UInt64(recorder.buckets) * UnsafeLeadUpRecorder.bucketUnits, nowMicroseconds * 1000 >> 10) else {
            line.noRecorder = Self.notCovering
            return line
        }
        var read = RecentWindow.read(recorder, latch: latch, nowMicroseconds: nowMicroseconds)
        if let cpuReadings { read.cpu = cpuReadings.log.figures(of: LeadUpRecord.spans(of: read.buckets, endingAt: read.nowUnits)) }
        line.window = read.window
        line.longestMs = LeadUpRecord.milliseconds(units: read.busy.longestUnits)
        line.busyNowMs = read.busyNowUnits.map { LeadUpRecord.milliseconds(units: $0) }
        // (An event loop's pieces run between the boundaries its edges learnt, not iterations:
        // no lag, as its heartbeat publishes none.)
        line.lag = kind == .runLoop ? HangReport.Recent.Lag(recorder.lag.read()) : nil
        return line
    }
}
