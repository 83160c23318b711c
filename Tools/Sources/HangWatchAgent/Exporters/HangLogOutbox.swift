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
final class HangLogOutbox: HangExporter {
    struct Settings: Sendable {
        var capacity: Int
        var maxInFlight: Int
        var firstBackoff: Duration = .seconds(1)
        var maxBackoff: Duration = .seconds(60)
        init(capacity: Int, maxInFlight: Int) {
            self.capacity = capacity
            self.maxInFlight = maxInFlight
        }
    }

    /// What the outbox did, for tests and the status line.
    struct Counts: Sendable, Equatable {
        var waiting = 0
        var inFlight = 0
        var delivered = 0
        var dropped = 0
        var retries = 0
    }

    private struct State {
        var waiting = [FinishedHang]()
        var inFlight = [FinishedHang]()
        var counts = Counts()
        var backoff: Duration = .zero
        /// No hand-over before this (`CLOCK_MONOTONIC`, ns): a back-off is in force.
        var notBefore: UInt64?
        var retryScheduled = false
    }

    private let settings: Settings
    private let state = Mutex(State())
    private let emit: @Sendable (FinishedHang) -> Void
    private let onDrop: @Sendable (Int) -> Void
    private let clock: any AgentClock
    private let execute: @Sendable (@escaping @Sendable () -> Void) -> Void

    /// `emit` hands one record to the OTLP pipeline; `onDrop` counts records given up. Hand-overs
    /// run on a queue of the outbox's own, retries wait on its clock.
    convenience init(settings: Settings, emit: @escaping @Sendable (FinishedHang) -> Void, onDrop: @escaping @Sendable (Int) -> Void) {
        let queue = DispatchQueue(label: "hangwatchd.otlp-outbox")
        self.init(settings: settings, clock: SystemClock(.queue(queue)), execute: { queue.async(execute: $0) }, emit: emit, onDrop: onDrop)
    }

    /// `execute` runs a hand-over off the caller's stack (in order); `clock` times the back-off.
    init(
        settings: Settings, clock: any AgentClock, execute: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        emit: @escaping @Sendable (FinishedHang) -> Void, onDrop: @escaping @Sendable (Int) -> Void
    ) {
        self.settings = settings
        self.clock = clock
        self.execute = execute
        self.emit = emit
        self.onDrop = onDrop
    }

    // MARK: HangExporter

    /// Log records carry the frames' names: the agent hands a hang over once it named them.
    var waitsForNames: Bool { true }

    func hangFinished(_ hang: FinishedHang) { enqueue(hang) }

    /// The outbox counts its own drops (through `onDrop`); the others' are not its business.
    func reportsDropped(_ reason: DropReason, count: Int) {}

    func publish(_ gauges: SpoolGauges) {}

    /// What was handed to swift-otel is flushed by its services as the group stops them.
    func shutdown() async {}

    // MARK: The queue

    var counts: Counts {
        state.withLock { state in
            var counts = state.counts
            counts.waiting = state.waiting.count
            counts.inFlight = state.inFlight.count
            return counts
        }
    }

    func enqueue(_ hang: FinishedHang) {
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
            state.notBefore = clock.monotonicNanoseconds + UInt64(max(0, DurationText.nanoseconds(state.backoff)))
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
        execute { [self] in
            var toEmit: [FinishedHang] = []
            var retryAfter: UInt64?
            let now = clock.monotonicNanoseconds
            state.withLock { state in
                if let notBefore = state.notBefore, notBefore > now {
                    if !state.retryScheduled {
                        state.retryScheduled = true
                        retryAfter = notBefore - now
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
                clock.after(.nanoseconds(Int64(clamping: retryAfter))) { [self] in
                    state.withLock { $0.retryScheduled = false }
                    pump()
                }
            }
        }
    }
}
