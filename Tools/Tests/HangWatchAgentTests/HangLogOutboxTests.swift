import Foundation
import HangWatchReport
import Synchronization
import Testing

@testable import HangWatchAgent

/// The outbox with time that moves only when the test says, and hand-overs on the test's thread.
@Suite struct HangLogOutboxTests {
    final class Sink: Sendable {
        let emitted = Mutex<[String]>([])
        let dropped = Mutex(0)
        var ids: [String] { emitted.withLock { $0 } }
        var drops: Int { dropped.withLock { $0 } }
    }

    static func hang(_ id: String) throws -> FinishedHang {
        var hang = try #require(FinishedHangTests.hang(FinishedHangTests.report(durationMs: 300)))
        hang.reportID = id
        return hang
    }

    static func outbox(capacity: Int, maxInFlight: Int? = nil, clock: ManualClock, sink: Sink) -> HangLogOutbox {
        HangLogOutbox(
            settings: .init(capacity: capacity, maxInFlight: maxInFlight ?? capacity), clock: clock, execute: { $0() },
            emit: { hang in sink.emitted.withLock { $0.append(hang.reportID) } },
            onDrop: { count in sink.dropped.withLock { $0 += count } })
    }

    @Test func itWaitsForNamesAndHandsEachHangOver() throws {
        let sink = Sink()
        let outbox = Self.outbox(capacity: 10, clock: ManualClock(), sink: sink)
        #expect(outbox.waitsForNames)
        outbox.hangFinished(try Self.hang("a"))
        #expect(sink.ids == ["a"])
        #expect(outbox.counts.inFlight == 1)
    }

    @Test func aFullQueueDropsTheOldestWaitingAndCountsIt() throws {
        let sink = Sink()
        // Capacity 2, one in flight at a time, nothing delivered: "a" is in flight, "b" waits.
        let outbox = Self.outbox(capacity: 2, maxInFlight: 1, clock: ManualClock(), sink: sink)
        for id in ["a", "b"] { outbox.enqueue(try Self.hang(id)) }
        #expect(sink.ids == ["a"])
        outbox.enqueue(try Self.hang("c"))
        // The oldest waiting ("b") made room for "c".
        #expect(sink.drops == 1)
        #expect(outbox.counts == .init(waiting: 1, inFlight: 1, delivered: 0, dropped: 1, retries: 0))
        outbox.delivered(1)
        #expect(sink.ids == ["a", "c"])
        // Everything in flight: a new one has no room at all.
        let full = Self.outbox(capacity: 2, clock: ManualClock(), sink: Sink())
        for id in ["a", "b", "c"] { full.enqueue(try Self.hang(id)) }
        #expect(full.counts.dropped == 1 && full.counts.inFlight == 2)
    }

    @Test func aFailedBatchIsRetriedInOrderAfterABackoffThatDoubles() throws {
        let sink = Sink()
        let clock = ManualClock()
        let outbox = Self.outbox(capacity: 10, clock: clock, sink: sink)
        for id in ["a", "b", "c"] { outbox.enqueue(try Self.hang(id)) }
        #expect(sink.ids == ["a", "b", "c"])
        outbox.failed(2, permanent: false)
        // Nothing before the first back-off (1 s) is over.
        clock.advance(by: .milliseconds(999))
        #expect(sink.ids == ["a", "b", "c"])
        clock.advance(by: .milliseconds(1))
        #expect(sink.ids == ["a", "b", "c", "a", "b"])
        // In flight now: c, a, b. The oldest two (c, a) fail again: back after 2 s, in order.
        outbox.failed(2, permanent: false)
        clock.advance(by: .milliseconds(1999))
        #expect(sink.ids.count == 5)
        clock.advance(by: .milliseconds(1))
        #expect(sink.ids == ["a", "b", "c", "a", "b", "c", "a"])
        outbox.delivered(1)  // b
        outbox.delivered(2)  // c, a
        #expect(outbox.counts == .init(waiting: 0, inFlight: 0, delivered: 3, dropped: 0, retries: 4))
        #expect(sink.drops == 0)
        #expect(clock.pendingTimers == 0)
    }

    @Test func theBackoffStopsAtAMinuteAndADeliveryResetsIt() throws {
        let sink = Sink()
        let clock = ManualClock()
        let outbox = Self.outbox(capacity: 10, clock: clock, sink: sink)
        outbox.enqueue(try Self.hang("a"))
        var waits: [Duration] = []
        for _ in 0..<9 {
            let before = sink.ids.count
            outbox.failed(1, permanent: false)
            var waited: Duration = .zero
            while sink.ids.count == before {
                clock.advance(by: .seconds(1))
                waited += .seconds(1)
            }
            waits.append(waited)
        }
        #expect(waits == [1, 2, 4, 8, 16, 32, 60, 60, 60].map { .seconds($0) })
        outbox.delivered(1)
        outbox.enqueue(try Self.hang("b"))
        outbox.failed(1, permanent: false)
        clock.advance(by: .seconds(1))
        #expect(sink.ids.last == "b" && sink.ids.count == 12)
    }

    @Test func anOutageKeepsTheNewestWithinTheBound() throws {
        let sink = Sink()
        let clock = ManualClock()
        let outbox = Self.outbox(capacity: 3, clock: clock, sink: sink)
        for id in ["a", "b", "c"] { outbox.enqueue(try Self.hang(id)) }
        outbox.failed(3, permanent: false)
        // While the collector is down, new hangs push the oldest out.
        outbox.enqueue(try Self.hang("d"))
        outbox.enqueue(try Self.hang("e"))
        #expect(sink.drops == 2)
        clock.advance(by: .seconds(1))
        #expect(Array(sink.ids.suffix(3)) == ["c", "d", "e"])
    }

    @Test func aRefusedBatchIsDroppedNotRetried() throws {
        let sink = Sink()
        let clock = ManualClock()
        let outbox = Self.outbox(capacity: 10, clock: clock, sink: sink)
        outbox.enqueue(try Self.hang("a"))
        outbox.failed(1, permanent: true)
        #expect(outbox.counts.dropped == 1)
        #expect(sink.drops == 1)
        clock.advance(by: .seconds(120))
        #expect(sink.ids == ["a"])
        #expect(clock.pendingTimers == 0)
    }

    @Test func recordsLostInsideTheSDKAreCountedAsDropped() throws {
        let sink = Sink()
        let outbox = Self.outbox(capacity: 10, clock: ManualClock(), sink: sink)
        for id in ["a", "b", "c"] { outbox.enqueue(try Self.hang(id)) }
        outbox.lostInPipeline(2)
        #expect(outbox.counts == .init(waiting: 0, inFlight: 1, delivered: 0, dropped: 2, retries: 0))
        #expect(sink.drops == 2)
    }
}
