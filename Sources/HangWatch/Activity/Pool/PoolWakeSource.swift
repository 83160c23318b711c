import Dispatch

/// When a delayed job (a `Task.sleep` resumption) is next due: it reaches the pool at that time
/// without being enqueued again, so a resting watch must be awake by then.
enum PoolDelayedJobs: Equatable, Sendable {
    case none
    /// Monotonic microseconds.
    case due(UInt64)
    /// Too many pending, or on a clock the hooks cannot read: the watch does not rest.
    case unknown
}

/// What lets the pool watch rest while no pool thread runs a job, and wakes it when a job comes:
/// the Swift runtime's global-enqueue hooks (`UnsafeRuntimeEnqueueHooks`), scripted in tests.
protocol PoolWakeSource: AnyObject, Sendable {
    /// The watch may rest: the hooks are in place and still the runtime's (a hook set after ours
    /// would take the enqueues away from it).
    func canRest() -> Bool
    /// From now, the first job enqueued to the pool, immediately or delayed, that is not the
    /// watch's own (`ownEnqueues`) signals `wake`, once; `ahead` runs first, on the enqueueing
    /// thread, before that job is handed to the pool (jobs it enqueues are queued ahead of it).
    func arm(_ wake: WatchdogWake, ahead: @escaping @Sendable () -> Void)
    /// Stops waking; when the enqueue that woke the watch happened (monotonic microseconds), if one did.
    func disarm() -> UInt64?
    /// Runs `body`, which enqueues the watch's own jobs (its probe, attach jobs): never a wake.
    func ownEnqueues(_ body: () -> Void)
    /// The earliest delayed job due after `now` (monotonic microseconds).
    func nextDelayed(after now: UInt64) -> PoolDelayedJobs
}
