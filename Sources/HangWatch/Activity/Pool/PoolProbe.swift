import Dispatch
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

    /// A job that only attaches the pool thread it runs on (`PoolAttachRequests`), at `priority`:
    /// it runs on that priority's pool (`CooperativePool`).
    func enqueueAttach(priority: TaskPriority = .medium) {
        let alternateStackSize = alternateStackSize
        let signal = signal
        Task.detached(priority: priority) {
            UnsafePoolThreadAttachments.shared.attachCurrentThreadIfNeeded(alternateStackSize: alternateStackSize, signal: signal)
        }
    }

    /// `width` attach jobs that wait for each other (20 ms at most), so that they run
    /// on `width` different workers: every worker of a pool that wide, fresh ones included, is
    /// prepared before any job enqueued after these starts (the queue is first in, first out).
    /// Without the wait, one worker could run them all and a fresh one take the next job first.
    func enqueueAttachEveryWorker(width: Int) {
        let alternateStackSize = alternateStackSize
        let signal = signal
        let barrier = WorkerBarrier(count: width)
        for _ in 0..<width {
            Task.detached(priority: .medium) {
                UnsafePoolThreadAttachments.shared.attachCurrentThreadIfNeeded(alternateStackSize: alternateStackSize, signal: signal)
                barrier.arrive(timeout: .milliseconds(20))
            }
        }
    }

    func enqueue(_ slot: PoolProbeSlot) {
        let alternateStackSize = alternateStackSize
        let signal = signal
        Task.detached(priority: .medium) {
            slot.markStarted(at: UnsafeClock.monotonicNanoseconds() / 1000)
            UnsafePoolThreadAttachments.shared.attachCurrentThreadIfNeeded(alternateStackSize: alternateStackSize, signal: signal)
        }
    }
}

/// `count` jobs meeting: each waits until all have arrived or `timeout` passed, so that they hold
/// `count` different pool workers at once. `arrive` says whether all arrived in time.
final class WorkerBarrier: Sendable {
    private let count: Int
    private let arrived = Atomic<Int>(0)
    private let release = DispatchSemaphore(value: 0)

    init(count: Int) {
        self.count = count
    }

    @discardableResult
    func arrive(timeout: DispatchTimeInterval) -> Bool {
        let number = arrived.add(1, ordering: .acquiringAndReleasing).newValue
        if number == count {
            for _ in 1..<max(count, 1) { release.signal() }
            return true
        } else if number < count {
            return release.wait(timeout: .now() + timeout) == .success
        }
        return false
    }
}
