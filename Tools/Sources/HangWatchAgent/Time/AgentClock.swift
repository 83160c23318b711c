import Foundation

/// The agent's time: the wall clock (report times and ages, file modification times), the
/// monotonic clock (heartbeats are stamped with `CLOCK_MONOTONIC`; the age of a pass), and timers.
/// Every decision that depends on time reads it here, so a test can hold time still and move it
/// on when it likes (the model is swift-nio's `EmbeddedEventLoop`).
///
/// Contract: `now` and `monotonicNanoseconds` never go backwards between two reads on one thread
/// (the wall clock may be set, as the system's can). A timer's action runs in the clock's own
/// context (for the agent, its time keeper: the main run loop), never while the call that made
/// it is still running; after `cancel()` returns it does not run again.
protocol AgentClock: Sendable {
    /// The wall clock.
    var now: Date { get }
    /// `CLOCK_MONOTONIC`, in nanoseconds.
    var monotonicNanoseconds: UInt64 { get }
    /// Runs `action` once, `delay` from now.
    @discardableResult
    func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> any AgentTimer
    /// Runs `action` every `interval`, the first time `interval` from now, until cancelled.
    func every(_ interval: Duration, _ action: @escaping @Sendable () -> Void) -> any AgentTimer
}

/// A timer made by an `AgentClock`.
protocol AgentTimer: Sendable {
    /// Stops the timer: its action does not run again.
    func cancel()
}
