/// What is truly one per process, whatever the number of monitors, owned in one place: the report
/// ids' sequence, the pool watch and its delays, who answers thread dumps, the run loops reached,
/// and how a thread is looked at. A monitor reaches it through its world (`MonitorWorld.runtime`):
/// the system world's is `process`; a scripted world makes its own, so tests share nothing.
///
/// What each monitor controls itself (its source, latch, threshold, lanes, stop, report writer
/// unless it shares one) is in `MonitorAssembly`; docs/architecture.md says which monitor's
/// settings a per-process part follows.
final class ProcessRuntime: Sendable {
    /// This process's.
    static let process = ProcessRuntime(
        dumps: DumpRegistry { wake, leaving in
            if let wake {
                UnsafeCaptureBridge.DumpRequests.register(wake.semaphore)
            } else if let leaving {
                UnsafeCaptureBridge.DumpRequests.unregister(leaving.semaphore)
            }
        })

    /// Numbers the reports of every monitor, so ids (and file names) never collide.
    let reportNaming = ReportNaming()
    /// The one pool watch, run by one monitor at a time.
    let poolWatch = PoolWatchSeat()
    /// The pool's probe delays, rests and starvations (the heartbeat and `HangMonitor.statistics`).
    let poolDelays = PoolProbeHistogram()
    /// Who answers `hangwatch dump PID`.
    let dumps: DumpRegistry
    /// The CFRunLoops behind RunLoops reached from another thread.
    let runLoops = ReachedRunLoops()
    /// The one way a thread of this process is looked at.
    let threads = ThreadInspection()

    /// `dumps`: whose registration the capture signal's handler posts (a scripted world's goes nowhere).
    init(dumps: DumpRegistry = DumpRegistry()) {
        self.dumps = dumps
    }
}
