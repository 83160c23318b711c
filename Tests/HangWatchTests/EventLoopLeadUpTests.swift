@testable import HangWatch
import Testing

/// An event loop's flight recorder, written from its edges' changes of phase (`EventLoopLeadUp`).
struct EventLoopLeadUpTests {
    typealias Piece = EventLoopLeadUp.Piece
    static let ms: UInt64 = 1_000_000

    @Test func aWakeBeginsAStretchAndALookInTheWaitEndsIt() {
        let woke = EventLoopEdges.Phase.busy(since: 100 * Self.ms, pinged: false, declared: false)
        #expect(EventLoopLeadUp.pieces(from: .idle, to: woke, at: 100 * Self.ms) == [.began(at: 100 * Self.ms)])
        // Found waiting at the look 10 ms later: ended then, the look's bound.
        #expect(
            EventLoopLeadUp.pieces(from: woke, to: .idle, at: 110 * Self.ms) == [.ended(from: 100 * Self.ms, to: 110 * Self.ms, endsStretch: true)])
        // The loop reports its iterations: ended at the last one's end, exactly.
        #expect(
            EventLoopLeadUp.pieces(from: woke, to: .idle, at: 110 * Self.ms, finishedAt: 101 * Self.ms)
                == [.ended(from: 100 * Self.ms, to: 101 * Self.ms, endsStretch: true)])
        // An end from before the stretch is another stretch's: the look's bound again.
        #expect(
            EventLoopLeadUp.pieces(from: woke, to: .idle, at: 110 * Self.ms, finishedAt: 90 * Self.ms)
                == [.ended(from: 100 * Self.ms, to: 110 * Self.ms, endsStretch: true)])
    }

    @Test func aBoundaryUnderLoadEndsAPieceAndASleepBetweenEndsTheStretch() {
        let busy = EventLoopEdges.Phase.busy(since: 100 * Self.ms, pinged: true, declared: false)
        let answered = EventLoopEdges.Phase.busy(since: 130 * Self.ms, pinged: false, declared: false, steady: true)
        // A ping's answer (or an iteration's end): one piece ends, the next begins there.
        #expect(
            EventLoopLeadUp.pieces(from: busy, to: answered, at: 130 * Self.ms)
                == [.ended(from: 100 * Self.ms, to: 130 * Self.ms, endsStretch: false)])
        // Found in its wait after an iteration that ended at 112 ms, busy from the look (130 ms):
        // it slept in between.
        #expect(
            EventLoopLeadUp.pieces(from: busy, to: answered, at: 130 * Self.ms, sleptSince: 112 * Self.ms)
                == [.ended(from: 100 * Self.ms, to: 112 * Self.ms, endsStretch: true), .began(at: 130 * Self.ms)])
        // No change, a change back in time (a fine-clock answer before a coarse wake), idle to
        // idle: nothing.
        #expect(EventLoopLeadUp.pieces(from: busy, to: busy, at: 130 * Self.ms).isEmpty)
        let earlier = EventLoopEdges.Phase.busy(since: 99 * Self.ms, pinged: false, declared: false, steady: true)
        #expect(EventLoopLeadUp.pieces(from: busy, to: earlier, at: 130 * Self.ms).isEmpty)
        #expect(EventLoopLeadUp.pieces(from: .idle, to: .idle, at: 130 * Self.ms).isEmpty)
    }

    /// The pieces, written, read back: 30 ms busy in the bucket, one stretch ended, the longest 15.
    @Test func thePiecesReachTheRecorder() {
        let recorder = UnsafeLeadUpRecorder.allocate(buckets: 10)
        defer { recorder.deallocate() }
        let leadUp = EventLoopLeadUp(recorder: recorder)
        let base = 1_000 * UnsafeLeadUpRecorder.bucketUnits << 10
        leadUp.record([.began(at: base + 10 * Self.ms)])
        leadUp.record([.ended(from: base + 10 * Self.ms, to: base + 25 * Self.ms, endsStretch: false)])
        leadUp.record([.ended(from: base + 25 * Self.ms, to: base + 40 * Self.ms, endsStretch: true)])
        let buckets = recorder.read(endingAt: (base + 90 * Self.ms) >> 10)
        let last = buckets.last
        #expect(last.map { abs(LeadUpRecord.milliseconds(units: $0.busyUnits) - 30) < 0.01 } == true)
        #expect(last?.stretches == 1 && last?.iterations == 0)
        #expect(last.map { abs(LeadUpRecord.milliseconds(units: $0.longestUnits) - 15) < 0.01 } == true)
    }
}
