import Dispatch
import Synchronization

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
    func arm(_ wake: DispatchSemaphore, ahead: @escaping @Sendable () -> Void)
    /// Stops waking; when the enqueue that woke the watch happened (monotonic microseconds), if one did.
    func disarm() -> UInt64?
    /// Runs `body`, which enqueues the watch's own jobs (its probe, attach jobs): never a wake.
    func ownEnqueues(_ body: () -> Void)
    /// The earliest delayed job due after `now` (monotonic microseconds).
    func nextDelayed(after now: UInt64) -> PoolDelayedJobs
}

/// The runtime's `swift_task_enqueueGlobal` hook and its two delayed forms, installed once per
/// process, chained to whatever hook was there before (C: the hooks use Swift's calling
/// convention; `hw_pool_wake.c`). Every job enqueued to the cooperative pool passes through them;
/// unarmed, that costs one relaxed load.
final class UnsafeRuntimeEnqueueHooks: PoolWakeSource, @unchecked Sendable {
    /// Nil when this runtime has no such hooks: the watch never rests.
    static let shared: UnsafeRuntimeEnqueueHooks? = UnsafeCaptureBridge.PoolHooks.install(wake: wakeArmed) ? UnsafeRuntimeEnqueueHooks() : nil

    /// What the armed hooks run and signal.
    private static let target = Mutex<(wake: DispatchSemaphore, ahead: @Sendable () -> Void)?>(nil)
    private static let wakeArmed: @convention(c) () -> Void = {
        guard let target = target.withLock({ $0 }) else { return }
        target.ahead()
        target.wake.signal()
    }

    private init() {}

    func canRest() -> Bool { UnsafeCaptureBridge.PoolHooks.areCurrent }

    func arm(_ wake: DispatchSemaphore, ahead: @escaping @Sendable () -> Void) {
        Self.target.withLock { $0 = (wake, ahead) }
        UnsafeCaptureBridge.PoolHooks.arm()
    }

    func disarm() -> UInt64? {
        let woken = UnsafeCaptureBridge.PoolHooks.disarm()
        Self.target.withLock { $0 = nil }
        return woken == 0 ? nil : woken / 1000
    }

    func ownEnqueues(_ body: () -> Void) {
        UnsafeCaptureBridge.PoolHooks.ownEnqueues(true)
        defer { UnsafeCaptureBridge.PoolHooks.ownEnqueues(false) }
        body()
    }

    func nextDelayed(after now: UInt64) -> PoolDelayedJobs {
        let next = UnsafeCaptureBridge.PoolHooks.nextDelayed(afterNanoseconds: now &* 1000)
        return next < 0 ? .unknown : next == 0 ? .none : .due(UInt64(next) / 1000)
    }
}
