/// Something whose busy and idle stretches a monitor watches: a run loop, a queue, declared scopes,
/// an event loop. The one seam between a kind of loop and the watchdog: a source reports busy and
/// idle edges (with their times) into an `ActivityLatch` and says which thread does the work;
/// everything after that (the threshold, sampling, reports) is the same for every source.
///
/// Adding a kind of source is a folder of `Activity/` with a type conforming to this protocol (and
/// its tests; more files where it needs them: the event loop's folder holds its source, the
/// source's watch, its pure edges, its lane, the watcher thread, the epoll watch and the wake
/// ring), and a thin public `start…` on `HangMonitor` that makes one and calls
/// `start(source:handles:)`, with what the source can do beyond this protocol as typed
/// `HangMonitor.SourceHandles` (the monitor never downcasts a source).
protocol ActivitySource: AnyObject, Sendable {
    /// What reports call the source (`source`, and the `activity` of sources without run-loop
    /// activities).
    var kind: ActivitySourceKind { get }

    /// Starts feeding `edges`: `record` a busy activity when work begins and an idle one when it
    /// ends (`ActivityLatch` wakes the watchdog only when it needs waking). Arranges for `attach` to
    /// run on the thread that does the work, before its first stretch can be a hang and again on
    /// each new thread the work moves to: that thread is the one captured. Called once.
    func start(edges: ActivityLatch, attach: @escaping @Sendable () -> Void) throws

    /// Called when the latch has shown the source busy past the threshold: whether that is work.
    /// A run loop asleep in a mode it does not observe is not (it then observes that mode); sources
    /// that report exact edges always answer `.busy`.
    func confirmBusy() -> BusyConfirmation

    /// Stops feeding the latch. Safe from any thread; idempotent.
    func stop()

    /// How exact the edges it reports are now (reports say so in `edges`).
    var edges: ActivityEdges { get }

    /// What the source needs the watchdog's thread to do on a timer once it started (a queue's pings
    /// and looks, an event loop's looks and pings), run as one more lane of the monitor's watchdog;
    /// nil for sources whose edges come from the loop itself (a run loop's observers, scopes).
    var timerLane: (any WatchdogLane)? { get }

    /// Given before `start`, for a source whose work moves between threads (sources on one thread
    /// ignore it): points the capture at another thread that ran `attach` before, or at none.
    func useCaptureSelector(_ selector: CaptureSelector)
    func taskWord(of tid: Int32) -> UInt?
    /// The tasks the source's own looks found running on its working thread since the stall now
    /// declared began to count (a queue: since the ping still out was sent), for the hang's reads.
    func tasksAtLooks() -> SampledTasks?
    /// Whether the flight recorder (kept by the latch) holds the `windowUnits` before `onsetUnits`
    /// (the latch's units): a source that writes it only part of the time (an event loop, while
    /// its edges are exact) says no when the window reaches before that.
    func leadUpCovers(windowUnits: UInt64, before onsetUnits: UInt64) -> Bool
}

extension ActivitySource {
    /// The address of thread `tid`'s current-task word (the Swift runtime's thread-local word:
    /// `UnsafeCurrentTaskSlot`), where the source knows the thread and the word's place: a hang's
    /// samples then say which task each ran (`QueueHangKind`). Nil by default.
    func taskWord(of tid: Int32) -> UInt? { nil }
    func tasksAtLooks() -> SampledTasks? { nil }
    func leadUpCovers(windowUnits: UInt64, before onsetUnits: UInt64) -> Bool { true }
    func useCaptureSelector(_ selector: CaptureSelector) {}
    var timerLane: (any WatchdogLane)? { nil }
}

/// Which thread the watchdog captures, as a source may change it (`ThreadSlot`'s side).
struct CaptureSelector: Sendable {
    /// Capture the thread of this id, which ran `attach` before; false when it did not (or is gone).
    /// Called from that thread itself or from the watchdog.
    var select: @Sendable (Int32) -> Bool
    /// Capture no thread, for this reason (the work runs on one that cannot be captured).
    var vacate: @Sendable (StackSample.Failure) -> Void
    /// Capture this thread, which never ran `attach` (the sampler prepares it: `ThreadPreparer`).
    var adopt: @Sendable (MonitoredThread) -> Void = { _ in }

    /// No monitor behind the source (tests): nothing to change.
    static let none = CaptureSelector(select: { _ in true }, vacate: { _ in })
}

/// A source's answer to "is this long busy stretch work?".
enum BusyConfirmation: Equatable, Sendable {
    /// It is; `context` is what reports say about where (a run loop's mode).
    case busy(context: String?)
    /// It is not (the source was idle after all): the watchdog treats the stretch as idle.
    case idle
}
