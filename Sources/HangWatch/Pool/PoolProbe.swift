import Synchronization

/// One probe: when its job started on the global concurrent executor (0: not yet). The pool watch
/// enqueues a fresh one each period and reads it at the period's end.
final class PoolProbeSlot: Sendable {
    private let started = Atomic<UInt64>(0)

    init() {}

    /// Called by the probe's job when it runs: `microseconds` of `CLOCK_MONOTONIC`.
    func markStarted(at microseconds: UInt64) {
        started.store(max(microseconds, 1), ordering: .releasing)
    }

    /// When the job started; nil while it has not.
    var startedMicroseconds: UInt64? {
        let value = started.load(ordering: .acquiring)
        return value == 0 ? nil : value
    }
}

/// Enqueues the probe's job on Swift's global concurrent executor, at priority `.medium` (the
/// default-QoS pool, where `Task {}` from a non-isolated context, `Task.detached`, task groups and
/// non-isolated async functions run): the job stamps its start and, once per pool thread, prepares
/// that thread for signal captures (so a pool thread later found on a CPU can be captured).
struct GlobalExecutorProbe: Sendable {
    var alternateStackSize: Int
    var signal: Int32

    /// A job that only attaches the pool thread it runs on (`PoolAttachRequests`).
    func enqueueAttach() {
        let alternateStackSize = alternateStackSize
        let signal = signal
        Task.detached(priority: .medium) {
            UnsafePoolThreadAttachments.shared.attachCurrentThreadIfNeeded(alternateStackSize: alternateStackSize, signal: signal)
        }
    }

    func enqueue(_ slot: PoolProbeSlot) {
        let alternateStackSize = alternateStackSize
        let signal = signal
        Task.detached(priority: .medium) {
            slot.markStarted(at: UnsafeCaptureBridge.monotonicNanoseconds() / 1000)
            UnsafePoolThreadAttachments.shared.attachCurrentThreadIfNeeded(alternateStackSize: alternateStackSize, signal: signal)
        }
    }
}
