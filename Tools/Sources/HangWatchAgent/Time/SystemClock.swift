import Dispatch
import Foundation
import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// The host's clocks, with timers on the main run loop (the agent's time keeper, watched by its
/// own `HangMonitor`) or on a dispatch queue.
struct SystemClock: AgentClock {
    enum Context: Sendable {
        /// `RunLoop.main`: make repeating timers from the main thread.
        case mainRunLoop
        case queue(DispatchQueue)
    }

    let context: Context

    init(_ context: Context = .mainRunLoop) {
        self.context = context
    }

    var now: Date { Date() }

    var monotonicNanoseconds: UInt64 { Self.monotonicNanoseconds() }

    /// `CLOCK_MONOTONIC` now, in nanoseconds: the clock heartbeats are stamped with.
    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    func after(_ delay: Duration, _ action: @escaping @Sendable () -> Void) -> any AgentTimer {
        let item = DispatchWorkItem(block: action)
        let deadline = DispatchTime.now() + .nanoseconds(Int(clamping: max(0, DurationText.nanoseconds(delay))))
        switch context {
        case .mainRunLoop: DispatchQueue.main.asyncAfter(deadline: deadline, execute: item)
        case .queue(let queue): queue.asyncAfter(deadline: deadline, execute: item)
        }
        return WorkItemTimer(item: item)
    }

    func every(_ interval: Duration, _ action: @escaping @Sendable () -> Void) -> any AgentTimer {
        let seconds = Double(DurationText.nanoseconds(interval)) / 1e9
        switch context {
        case .mainRunLoop:
            // Not Timer(timeInterval:): on Linux (swift-corelibs-foundation) it fires at once.
            let timer = Timer(fire: Date(timeIntervalSinceNow: seconds), interval: seconds, repeats: true) { _ in action() }
            timer.tolerance = seconds / 10
            RunLoop.main.add(timer, forMode: .common)
            return RunLoopTimer(timer: timer)
        case .queue(let queue):
            let source = DispatchSource.makeTimerSource(queue: queue)
            let nanoseconds = Int(clamping: max(1, DurationText.nanoseconds(interval)))
            source.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds), leeway: .nanoseconds(nanoseconds / 10))
            source.setEventHandler(handler: action)
            source.resume()
            return SourceTimer(source: source)
        }
    }

    private struct WorkItemTimer: AgentTimer, @unchecked Sendable {
        let item: DispatchWorkItem
        func cancel() { item.cancel() }
    }

    private struct RunLoopTimer: AgentTimer, @unchecked Sendable {
        let timer: Timer
        func cancel() { timer.invalidate() }
    }

    private struct SourceTimer: AgentTimer, @unchecked Sendable {
        let source: any DispatchSourceTimer
        func cancel() { source.cancel() }
    }
}
