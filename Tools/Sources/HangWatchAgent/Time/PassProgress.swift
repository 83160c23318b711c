import Synchronization

/// When the worker's current pass began (`CLOCK_MONOTONIC`), nil while it is idle: written by the
/// worker, read by the time keeper to decide whether the agent is still well.
final class PassProgress: Sendable {
    private let began = Mutex<UInt64?>(nil)

    func begin(at monotonicNanoseconds: UInt64) { began.withLock { $0 = monotonicNanoseconds } }

    func end() { began.withLock { $0 = nil } }

    /// How long the current pass has been running at `now`, or nil when there is none.
    func runningFor(now monotonicNanoseconds: UInt64) -> UInt64? {
        began.withLock { $0 }.map { monotonicNanoseconds > $0 ? monotonicNanoseconds - $0 : 0 }
    }
}
