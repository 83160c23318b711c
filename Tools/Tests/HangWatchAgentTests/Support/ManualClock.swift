import Foundation
import HangWatchReport
import Synchronization

@testable import HangWatchAgent

/// An `AgentClock` whose time moves only when the test calls `advance(by:)`, firing the timers that
/// fall due on the way, in order, on the caller's thread (swift-nio's `EmbeddedEventLoop` model).
/// Both clocks start from now (wall) and an arbitrary monotonic time, and move together.
final class ManualClock: AgentClock, @unchecked Sendable {
    private struct Timer {
        var id: Int
        var deadline: UInt64
        var interval: UInt64?
        var action: @Sendable () -> Void
    }

    private struct State {
        var wall: Date
        var monotonic: UInt64
        var timers: [Timer] = []
        var nextID = 0
    }

    private let state: Mutex<State>

    init(now: Date = Date(), monotonicNanoseconds: UInt64 = 1_000 * 1_000_000_000) {
        state = Mutex(State(wall: now, monotonic: monotonicNanoseconds))
    }

    var now: Date { state.withLock { $0.wall } }
    var monotonicNanoseconds: UInt64 { state.withLock { $0.monotonic } }
    /// Timers that would still fire.
    var pendingTimers: Int { state.withLock { $0.timers.count } }

    func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> any AgentTimer {
        schedule(delay, repeating: false, action)
    }

    func every(_ interval: Duration, _ action: @escaping @Sendable () -> Void) -> any AgentTimer {
        schedule(interval, repeating: true, action)
    }

    private func schedule(_ delay: Duration, repeating: Bool, _ action: @escaping @Sendable () -> Void) -> any AgentTimer {
        let nanoseconds = UInt64(max(0, DurationText.nanoseconds(delay)))
        let id = state.withLock { state -> Int in
            state.nextID += 1
            state.timers.append(Timer(id: state.nextID, deadline: state.monotonic + nanoseconds, interval: repeating ? max(1, nanoseconds) : nil, action: action))
            return state.nextID
        }
        return Handle(clock: self, id: id)
    }

    private struct Handle: AgentTimer {
        let clock: ManualClock
        let id: Int
        func cancel() { clock.state.withLock { $0.timers.removeAll { $0.id == id } } }
    }

    /// Moves both clocks on by `duration`, running each timer that falls due, at its time.
    func advance(by duration: Duration) {
        let target = state.withLock { $0.monotonic } + UInt64(max(0, DurationText.nanoseconds(duration)))
        while true {
            let due = state.withLock { state -> Timer? in
                guard let next = state.timers.filter({ $0.deadline <= target }).min(by: { ($0.deadline, $0.id) < ($1.deadline, $1.id) })
                else { return nil }
                moveTo(next.deadline, &state)
                if let interval = next.interval, let index = state.timers.firstIndex(where: { $0.id == next.id }) {
                    state.timers[index].deadline += interval
                } else {
                    state.timers.removeAll { $0.id == next.id }
                }
                return next
            }
            guard let due else { break }
            due.action()
        }
        state.withLock { moveTo(target, &$0) }
    }

    /// Moves both clocks on until the wall clock reads `date` plus `atLeast` (or on by `atLeast`
    /// when it reads later already):
    /// past files just written, whose times come from the real clock, however long the test took
    /// to get there on a busy machine.
    func advance(past date: Date, by atLeast: Duration = .seconds(1)) {
        let gap = date.timeIntervalSince(now)
        advance(by: max(atLeast, .nanoseconds(Int64(max(0, gap) * 1e9)) + atLeast))
    }

    /// Sets the wall clock (as an administrator or NTP might) without moving the monotonic one.
    func setWallClock(_ date: Date) {
        state.withLock { $0.wall = date }
    }

    private func moveTo(_ monotonic: UInt64, _ state: inout State) {
        guard monotonic > state.monotonic else { return }
        state.wall = state.wall.addingTimeInterval(Double(monotonic - state.monotonic) / 1e9)
        state.monotonic = monotonic
    }
}
