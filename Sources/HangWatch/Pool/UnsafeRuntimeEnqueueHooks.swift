import Dispatch
import Synchronization

/// The runtime's `swift_task_enqueueGlobal` hook and its two delayed forms, installed once per
/// process, chained to whatever hook was there before (C: the hooks use Swift's calling
/// convention; `hw_pool_wake.c`). Every job enqueued to the cooperative pool passes through them;
/// unarmed, that costs one relaxed load.
final class UnsafeRuntimeEnqueueHooks: PoolWakeSource, @unchecked Sendable {
    /// Nil when this runtime has no such hooks: the watch never rests.
    static let shared: UnsafeRuntimeEnqueueHooks? = UnsafeCaptureBridge.PoolHooks.install(wake: wakeArmed) ? UnsafeRuntimeEnqueueHooks() : nil

    /// What the armed hooks run and signal.
    private static let target = Mutex<(wake: WatchdogWake, ahead: @Sendable () -> Void)?>(nil)
    private static let wakeArmed: @convention(c) () -> Void = {
        guard let target = target.withLock({ $0 }) else { return }
        target.ahead()
        target.wake.signal()
    }

    private init() {}

    func canRest() -> Bool { UnsafeCaptureBridge.PoolHooks.areCurrent }

    func arm(_ wake: WatchdogWake, ahead: @escaping @Sendable () -> Void) {
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
