@testable import HangWatch
import Testing

/// The event-loop source's decisions, scripted: times in milliseconds (as nanoseconds), threshold
/// 250 ms, looks 50 ms apart.
@Suite struct EventLoopEdgesTests {
    static let threshold: UInt64 = ms(250)
    static func ms(_ value: UInt64) -> UInt64 { value * 1_000_000 }
    func edges() -> EventLoopEdges { EventLoopEdges(intervalNanoseconds: Self.ms(50)) }

    @Test func anIdleLoopIsNeverLookedAtAndShortWorkCostsOneLook() {
        var edges = edges()
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == nil)
        edges.loopWoke(at: Self.ms(1_000))
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(1_010))
        #expect(edges.look(at: Self.ms(1_010), waiting: true, thresholdNanoseconds: Self.threshold).isEmpty)
        #expect(edges.phase == .idle)
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == nil)
    }

    @Test func workPastTheThresholdIsBusyFromTheWakeToThePingsAnswer() {
        var edges = edges()
        edges.loopWoke(at: Self.ms(1_000))
        // Later wakes while busy change nothing: the work began at the first.
        edges.loopWoke(at: Self.ms(1_020))
        #expect(edges.look(at: Self.ms(1_050), waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
        // The decision falls a threshold after the wake, not a threshold after the ping.
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(1_250))
        #expect(edges.look(at: Self.ms(1_250), waiting: false, thresholdNanoseconds: Self.threshold) == [.declareBusy(since: Self.ms(1_000))])
        // Declared: nothing to look at until the answer.
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == nil)
        #expect(edges.pingAnswered(at: Self.ms(1_300)) == [.declareIdle])
        // The loop may go on working (load): looked at a look interval after the answer.
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(1_310))
        #expect(edges.look(at: Self.ms(1_310), waiting: true, thresholdNanoseconds: Self.threshold).isEmpty)
        #expect(edges.phase == .idle)
    }

    @Test func workThatEndsJustBeforeTheThresholdIsNoHang() {
        var edges = edges()
        edges.loopWoke(at: 0)
        #expect(edges.look(at: Self.ms(50), waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
        #expect(edges.pingAnswered(at: Self.ms(249)).isEmpty)
        #expect(edges.look(at: Self.ms(299), waiting: true, thresholdNanoseconds: Self.threshold).isEmpty)
    }

    /// Under steady load the loop never waits at a look; each answered ping is a boundary, so a
    /// block that begins after one is busy since that answer at most.
    @Test func underLoadEachAnswerIsABoundary() {
        var edges = edges()
        edges.loopWoke(at: 0)
        var now: UInt64 = 0
        for _ in 0..<5 {
            now += Self.ms(50)
            #expect(edges.look(at: now, waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
            #expect(edges.pingAnswered(at: now + Self.ms(2)).isEmpty)
            now += Self.ms(2)
        }
        // The last answer at 260 ms; a handler blocks from 265 ms.
        #expect(edges.look(at: Self.ms(310), waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(510))
        #expect(edges.look(at: Self.ms(510), waiting: false, thresholdNanoseconds: Self.threshold) == [.declareBusy(since: Self.ms(260))])
    }

    /// Under load, a loop found blocked in a call the watcher could date is busy since that call
    /// began, not since the last answer (the work in between was other, short work).
    @Test func underLoadABlockingCallIsDatedByItsOwnStart() {
        var edges = edges()
        edges.loopWoke(at: 0)
        #expect(edges.look(at: Self.ms(50), waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
        #expect(edges.pingAnswered(at: Self.ms(52)).isEmpty)
        // Blocked since 90 ms (the last answer was at 52 ms).
        #expect(edges.look(at: Self.ms(102), waiting: false, thresholdNanoseconds: Self.threshold, blockedSince: Self.ms(90)) == [.ping])
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(340))
        #expect(edges.look(at: Self.ms(340), waiting: false, thresholdNanoseconds: Self.threshold, blockedSince: Self.ms(90)) == [.declareBusy(since: Self.ms(90))])
        // A date before the last boundary, or in the future, is no better than the boundary.
        var other = self.edges()
        other.loopWoke(at: Self.ms(100))
        _ = other.look(at: Self.ms(150), waiting: false, thresholdNanoseconds: Self.threshold, blockedSince: Self.ms(20))
        _ = other.look(at: Self.ms(160), waiting: false, thresholdNanoseconds: Self.threshold, blockedSince: Self.ms(900))
        #expect(other.look(at: Self.ms(350), waiting: false, thresholdNanoseconds: Self.threshold) == [.declareBusy(since: Self.ms(100))])
    }

    @Test func aDeclaredHangWhoseLoopWaitsAgainEndsThere() {
        var edges = edges()
        edges.loopWoke(at: 0)
        _ = edges.look(at: Self.ms(50), waiting: false, thresholdNanoseconds: Self.threshold)
        #expect(edges.look(at: Self.ms(250), waiting: false, thresholdNanoseconds: Self.threshold) == [.declareBusy(since: 0)])
        #expect(edges.look(at: Self.ms(400), waiting: true, thresholdNanoseconds: Self.threshold) == [.declareIdle])
        #expect(edges.pingAnswered(at: Self.ms(401)).isEmpty)
    }

    /// Looks come a 25th of the threshold after a wake or an answer (so a start known only from
    /// the last answer is off by at most 4 % of the threshold), between 5 ms and the sample interval.
    @Test func theLookIntervalFollowsTheThreshold() {
        let edges = edges()
        #expect(edges.lookInterval(thresholdNanoseconds: Self.ms(250)) == Self.ms(10))
        #expect(edges.lookInterval(thresholdNanoseconds: Self.ms(100)) == Self.ms(5))
        #expect(edges.lookInterval(thresholdNanoseconds: Self.ms(5_000)) == Self.ms(50))
    }

    @Test func aThresholdShorterThanTheIntervalWaitsForTheFirstLook() {
        var edges = edges()
        edges.loopWoke(at: 0)
        #expect(edges.look(at: Self.ms(50), waiting: false, thresholdNanoseconds: Self.ms(20)) == [.ping, .declareBusy(since: 0)])
    }
}
