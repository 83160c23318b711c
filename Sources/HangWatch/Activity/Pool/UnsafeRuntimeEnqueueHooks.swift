import Dispatch
import Synchronization

/// The runtime's `swift_task_enqueueGlobal` hook and its two delayed forms, installed once per
/// process, chained to whatever hook was there before (C: the hooks use Swift's calling
/// convention; `hw_pool_wake.c`). Every job enqueued to the cooperative pool passes through them;
/// unarmed, that costs one relaxed load.
final class UnsafeRuntimeEnqueueHooks: PoolWakeSource, @unchecked Sendable {
    /// Nil when this runtime has no such hooks: the watch never rests.
    static let shared: UnsafeRuntimeEnqueueHooks? = UnsafePoolHooks.install(wake: wakeArmed) ? UnsafeRuntimeEnqueueHooks() : nil

    /// What the armed hooks run and signal.
    private static let target = Mutex<(wake: WatchdogWake, ahead: @Sendable () -> Void)?>(nil)
    private static let wakeArmed: @convention(c) () -> Void = {
        guard let target = target.withLock({ $0 }) else { return }
        target.ahead()
        target.wake.signal()
    }

    private init() {}

    func canRest() -> Bool { UnsafePoolHooks.areCurrent }

    func arm(_ wake: WatchdogWake, ahead: @escaping @Sendable () -> Void) {
        Self.target.withLock { $0 = (wake, ahead) }
        UnsafePoolHooks.arm()
    }

    func disarm() -> UInt64? {
        let woken = UnsafePoolHooks.disarm()
        Self.target.withLock { $0 = nil }
        return woken == 0 ? nil : woken / 1000
    }

    func ownEnqueues(_ body: () -> Void) {
        UnsafePoolHooks.ownEnqueues(true)
        defer { UnsafePoolHooks.ownEnqueues(false) }
        body()
    }

    func nextDelayed(after now: UInt64) -> PoolDelayedJobs {
        let next = UnsafePoolHooks.nextDelayed(afterNanoseconds: now &* 1000)
        return next < 0 ? .unknown : next == 0 ? .none : .due(UInt64(next) / 1000)
    }
}
