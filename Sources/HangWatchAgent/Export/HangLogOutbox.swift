import Foundation
import HangWatchReport
import Synchronization

/// The hang log records on their way to the collector: a bounded queue in front of swift-otel's
/// batch processor that knows which records were delivered, so a collector that is down costs
/// retries, not records.
///
/// swift-otel exports log batches one at a time, in the order records were emitted, and reports
/// each batch's fate (`Exported batch.` / `Failed to export batch.`, with its size) to its
/// diagnostic logger; `OTelDiagnostics` turns those lines into `delivered`/`failed` calls. The
/// outbox hands over at most `maxInFlight` records (no more than swift-otel's own queue holds, so
/// swift-otel never drops silently), takes failed batches back to the front of the queue and
/// tries again after an exponential back-off (1 s doubling to 60 s). It never blocks: `enqueue`
/// on a full queue drops the oldest waiting record and counts it. A batch the collector refuses
/// outright (HTTP 4xx other than 429) is dropped and counted rather than retried forever.
public final class HangLogOutbox: Sendable {
    public struct Settings: Sendable {
        public var capacity: Int
        public var maxInFlight: Int
        public var firstBackoff: Duration = .seconds(1)
        public var maxBackoff: Duration = .seconds(60)
        public init(capacity: Int, maxInFlight: Int) {
            self.capacity = capacity
            self.maxInFlight = maxInFlight
        }
    }

    /// What the outbox did, for tests and the status line.
    public struct Counts: Sendable, Equatable {
        public var waiting = 0
        public var inFlight = 0
        public var delivered = 0
        public var dropped = 0
        public var retries = 0
    }

    private struct State {
        var waiting = [FinishedHang]()
        var inFlight = [FinishedHang]()
        var counts = Counts()
        var backoff: Duration = .zero
        var notBefore: ContinuousClock.Instant?
        var retryScheduled = false
    }

    private let settings: Settings
    private let state = Mutex(State())
    private let emit: @Sendable (FinishedHang) -> Void
    private let onDrop: @Sendable (Int) -> Void
    private let queue = DispatchQueue(label: "hangwatchd.otlp-outbox")

    /// `emit` hands one record to the OTLP pipeline; `onDrop` counts records given up.
    public init(settings: Settings, emit: @escaping @Sendable (FinishedHang) -> Void, onDrop: @escaping @Sendable (Int) -> Void) {
        self.settings = settings
        self.emit = emit
        self.onDrop = onDrop
    }

    public var counts: Counts {
        state.withLock { state in
            var counts = state.counts
            counts.waiting = state.waiting.count
            counts.inFlight = state.inFlight.count
            return counts
        }
    }

    public func enqueue(_ hang: FinishedHang) {
        let dropped = state.withLock { state -> Int in
            var dropped = 0
            while state.waiting.count + state.inFlight.count >= settings.capacity, !state.waiting.isEmpty {
                state.waiting.removeFirst()
                dropped += 1
            }
            if state.waiting.count + state.inFlight.count >= settings.capacity {
                dropped += 1  // everything is in flight: the new one has no room
            } else {
                state.waiting.append(hang)
            }
            state.counts.dropped += dropped
            return dropped
        }
        if dropped > 0 { onDrop(dropped) }
        pump()
    }

    /// swift-otel delivered the oldest `count` records in flight.
    func delivered(_ count: Int) {
        state.withLock { state in
            let taken = min(count, state.inFlight.count)
            state.inFlight.removeFirst(taken)
            state.counts.delivered += taken
            state.backoff = .zero
            state.notBefore = nil
        }
        pump()
    }

    /// swift-otel could not deliver the oldest `count` records in flight; `permanent`: the
    /// collector refused them (retrying would not help).
    func failed(_ count: Int, permanent: Bool) {
        let dropped = state.withLock { state -> Int in
            let taken = min(count, state.inFlight.count)
            let batch = state.inFlight.prefix(taken)
            state.inFlight.removeFirst(taken)
            if permanent {
                state.counts.dropped += taken
                return taken
            }
            // Back to the front, in their order, ahead of anything newer.
            state.waiting.insert(contentsOf: batch, at: 0)
            state.counts.retries += taken
            state.backoff = state.backoff == .zero ? settings.firstBackoff : min(state.backoff * 2, settings.maxBackoff)
            state.notBefore = .now + state.backoff
            // A long outage fills the queue: keep the newest.
            var overflow = 0
            while state.waiting.count + state.inFlight.count > settings.capacity, !state.waiting.isEmpty {
                state.waiting.removeFirst()
                overflow += 1
            }
            state.counts.dropped += overflow
            return overflow
        }
        if dropped > 0 { onDrop(dropped) }
        pump()
    }

    /// swift-otel's own queue overflowed and dropped the newest `count` records (the outbox keeps
    /// below its size, so this means another emitter shares the pipeline).
    func lostInPipeline(_ count: Int) {
        let taken = state.withLock { state -> Int in
            let taken = min(count, state.inFlight.count)
            state.inFlight.removeLast(taken)
            state.counts.dropped += taken
            return taken
        }
        if taken > 0 { onDrop(taken) }
    }

    /// Hands waiting records over while there is room and no back-off in force.
    private func pump() {
        queue.async { [self] in
            var toEmit: [FinishedHang] = []
            var retryAfter: Duration?
            state.withLock { state in
                if let notBefore = state.notBefore, notBefore > .now {
                    if !state.retryScheduled {
                        state.retryScheduled = true
                        retryAfter = notBefore - .now
                    }
                    return
                }
                state.notBefore = nil
                while state.inFlight.count < settings.maxInFlight, !state.waiting.isEmpty {
                    let next = state.waiting.removeFirst()
                    state.inFlight.append(next)
                    toEmit.append(next)
                }
            }
            for hang in toEmit { emit(hang) }
            if let retryAfter {
                let nanoseconds = Int(max(0, DurationText.nanoseconds(retryAfter)))
                queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
                    state.withLock { $0.retryScheduled = false }
                    pump()
                }
            }
        }
    }
}
