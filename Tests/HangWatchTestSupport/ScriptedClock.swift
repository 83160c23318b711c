import Dispatch
import Foundation
import HangWatch
import Testing

/// Time that moves only when something waits on it, with a script of events at given instants
/// (SwiftNIO's EmbeddedEventLoop, for the watchdog): `wait(_:until:)` runs the events due before
/// the deadline in order, moving the time to each, and returns as soon as one of them signals the
/// semaphore waited on; when none does, the time moves to the deadline. Deterministic, single
/// threaded: a test drives the real watchdog logic on its own thread, without sleeping.
package final class ScriptedClock: @unchecked Sendable {
    /// Microseconds of a monotonic clock.
    package private(set) var now: UInt64
    private var events: [(at: UInt64, order: Int, action: () -> Void)] = []
    private var added = 0
    /// Called when a wait without a deadline finds nothing left to happen (the script is over):
    /// it must make the waiter stop (set a stop flag); the wait then returns as woken.
    package var whenScriptEnds: () -> Void = { Issue.record("the script ended while something waited forever") }
    /// Called before the time moves: work other threads do at once in a real process (the report
    /// writer's queue) is done before the script goes on, so what it decides (the time a held
    /// report is due) is known at the scripted instant it was decided at.
    package var beforeTimeMoves: () -> Void = {}
    /// Every wait, as (time it began, its deadline): what a test can assert about the cadence.
    package private(set) var waits: [(at: UInt64, deadline: UInt64?)] = []
    /// Stretches in which nothing of the process runs (stopped by SIGSTOP, or starved of a CPU).
    private var stalls: [(start: UInt64, end: UInt64)] = []

    package init(start: UInt64 = 1_000_000_000) {
        now = start
    }

    /// Runs `action` when the time reaches `time` (events at the same time run in the order added).
    package func at(_ time: UInt64, _ action: @escaping () -> Void) {
        events.append((time, added, action))
        added += 1
        events.sort { ($0.at, $0.order) < ($1.at, $1.order) }
    }

    /// Runs `action` `delay` microseconds from now.
    package func after(_ delay: UInt64, _ action: @escaping () -> Void) {
        at(now + delay, action)
    }

    /// Nothing runs from `start` for `duration` microseconds (the process is stopped or starved):
    /// a wait whose deadline falls in the stretch returns at its end, late; events due in it happen
    /// at its end.
    package func stall(at start: UInt64, for duration: UInt64) {
        stalls.append((start, start + duration))
    }

    /// The watchdog's own work takes `duration` microseconds: the time moves without a wait (what
    /// falls due meanwhile runs at the next wait, at once).
    package func spend(_ duration: UInt64) {
        now += duration
    }

    /// How much of the time up to now was stalled.
    package var stalledMicroseconds: UInt64 {
        stalls.reduce(0) { $0 + (min(now, $1.end) - min(now, $1.start)) }
    }

    /// When something due at `time` actually happens: after any stall it falls in.
    private func effective(_ time: UInt64) -> UInt64 {
        stalls.first { $0.start <= time && time < $0.end }?.end ?? time
    }

    /// Whether events are still to come.
    package var hasEvents: Bool { !events.isEmpty }

    /// Waits on `semaphore` until `deadline` (nil: none), by running the script: true when an event
    /// signalled it, false when the deadline came first.
    package func wait(_ semaphore: WatchdogWake, until deadline: UInt64?) -> Bool {
        waits.append((now, deadline))
        while true {
            beforeTimeMoves()
            if semaphore.tryWait() { return true }
            guard let next = events.first, deadline.map({ effective(next.at) <= effective($0) }) ?? true else {
                if let deadline {
                    now = max(now, effective(deadline))
                    return false
                }
                whenScriptEnds()
                return true
            }
            events.removeFirst()
            now = max(now, effective(next.at))
            next.action()
        }
    }
}
