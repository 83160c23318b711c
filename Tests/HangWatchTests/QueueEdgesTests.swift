@testable import HangWatch
import Testing

/// A pinged queue's decisions with looks at its draining thread, scripted: times in milliseconds
/// (as nanoseconds), threshold 250 ms, looks 50 ms apart.
@Suite struct QueueEdgesTests {
    static let threshold: UInt64 = ms(250)
    static func ms(_ value: UInt64) -> UInt64 { value * 1_000_000 }

    /// Edges that have pinged once, had the answer at 1 000 ms and looked at an idle thread since.
    func idleEdges() -> QueueEdges {
        var edges = QueueEdges(intervalNanoseconds: Self.ms(50))
        #expect(look(&edges, 990, .unknown) == [.ping])
        #expect(edges.pingAnswered(at: Self.ms(1_000)).isEmpty)
        #expect(look(&edges, 1_000, .waiting).isEmpty)
        return edges
    }

    func look(_ edges: inout QueueEdges, _ at: UInt64, _ observation: QueueEdges.Observation) -> [QueueEdges.Action] {
        edges.look(at: Self.ms(at), observation, thresholdNanoseconds: Self.threshold)
    }

    @Test func anIdleThreadCostsNoPingUntilAThresholdHasPassedSinceTheLast() {
        var edges = idleEdges()
        for at in stride(from: UInt64(1_050), to: 1_240, by: 50) {
            #expect(look(&edges, at, .waiting).isEmpty, "looked at \(at) ms")
        }
        // Once per threshold whatever the looks say (work that moved to another thread).
        #expect(look(&edges, 1_250, .waiting) == [.ping])
    }

    @Test func blockedWorkIsDatedHalfWayBetweenTheLooksAndDeclaredAThresholdAfterThat() {
        var edges = idleEdges()
        #expect(look(&edges, 1_050, .waiting).isEmpty)
        // Seen working at 1 100: began between 1 050 and 1 100, dated 1 075; a ping goes out.
        #expect(look(&edges, 1_100, .working(since: nil)) == [.ping])
        #expect(edges.busySince == Self.ms(1_075))
        // The next look comes an interval later, and then exactly when the threshold is reached.
        #expect(edges.nextLook(after: Self.ms(1_300), thresholdNanoseconds: Self.threshold) == Self.ms(1_325))
        #expect(look(&edges, 1_150, .working(since: nil)).isEmpty)
        #expect(look(&edges, 1_300, .working(since: nil)).isEmpty)
        #expect(look(&edges, 1_325, .working(since: nil)) == [.declareBusy(since: Self.ms(1_075), edges: .sampled)])
        // Declared once; the answer ends it.
        #expect(look(&edges, 1_375, .working(since: nil)).isEmpty)
        #expect(edges.pingAnswered(at: Self.ms(1_700)) == [.declareIdle])
        #expect(edges.declared == nil && edges.busySince == nil)
    }

    /// Work on a worker the looks did not see yet: they saw the queue idle, a ping stayed out, the
    /// worker was found. Its clock dates the work (not before the last answer); the idle looks do
    /// not; without a clock's proof the ping dates it.
    @Test func aWorkerFoundLateIsDatedByItsClockAloneNotByTheLooksThatMissedIt() {
        var edges = idleEdges()
        #expect(look(&edges, 1_050, .waiting).isEmpty)
        #expect(look(&edges, 1_100, .waiting).isEmpty)
        #expect(look(&edges, 1_250, .waiting) == [.ping])
        #expect(look(&edges, 1_300, .waiting).isEmpty)
        #expect(edges.pingOutstanding(at: Self.ms(1_350), longerThan: Self.ms(50)))
        edges.workersFound()
        // Begun 330 ms ago by its clock: a hang at once, since then.
        #expect(look(&edges, 1_350, .working(since: Self.ms(1_020))) == [.declareBusy(since: Self.ms(1_020), edges: .sampled)])
        #expect(edges.busySince == Self.ms(1_020))
        // A clock claiming a start before the last answer is no proof.
        var early = idleEdges()
        #expect(look(&early, 1_250, .waiting) == [.ping])
        early.workersFound()
        #expect(look(&early, 1_350, .working(since: Self.ms(900))).isEmpty)
        #expect(early.busySince == nil)
        // No clock proof: not dated by the looks; the ping declares it a threshold after it went out.
        var unproven = idleEdges()
        #expect(look(&unproven, 1_250, .waiting) == [.ping])
        unproven.workersFound()
        #expect(look(&unproven, 1_350, .working(since: nil)).isEmpty)
        #expect(unproven.busySince == nil)
        #expect(look(&unproven, 1_500, .working(since: nil)) == [.declareBusy(since: Self.ms(1_250), edges: .ping)])
        // The answer makes the looks count again.
        #expect(unproven.pingAnswered(at: Self.ms(1_700)) == [.declareIdle])
        #expect(!unproven.looksUnproven)
    }

    @Test func aComputationIsDatedByTheThreadsOwnClock() {
        var edges = idleEdges()
        #expect(look(&edges, 1_050, .waiting).isEmpty)
        #expect(look(&edges, 1_100, .working(since: Self.ms(1_058))) == [.ping])
        #expect(edges.busySince == Self.ms(1_058))
        // A clock that claims a start before the last idle look is held to it.
        var other = idleEdges()
        #expect(look(&other, 1_050, .waiting).isEmpty)
        #expect(look(&other, 1_100, .working(since: Self.ms(900))) == [.ping])
        #expect(other.busySince == Self.ms(1_050))
    }

    /// Requests served one after the other: a job follows the last one's answer at once, and the
    /// look that finds it comes in the same 4 ms tick of the coarse clock as that answer. Its
    /// worker's clock dates it (on the fine clock, a little past the look's coarse time), not the
    /// next look, which would date it half-way (1 125 here).
    @Test func aJobFoundInTheTickOfTheLastAnswerIsDatedByTheWorkersClock() {
        var edges = idleEdges()
        #expect(look(&edges, 1_050, .working(since: nil)) == [.ping])
        #expect(edges.pingAnswered(at: Self.ms(1_100)).isEmpty)
        #expect(look(&edges, 1_100, .working(since: Self.ms(1_101))) == [.ping])
        #expect(edges.busySince == Self.ms(1_101))
        #expect(look(&edges, 1_150, .working(since: nil)).isEmpty)
        #expect(edges.busySince == Self.ms(1_101))
        // A clock much further past the look than a tick is held to the look (plus 10 ms).
        var ahead = idleEdges()
        #expect(look(&ahead, 1_050, .waiting).isEmpty)
        #expect(look(&ahead, 1_100, .working(since: Self.ms(1_200))) == [.ping])
        #expect(ahead.busySince == Self.ms(1_110))
    }

    @Test func shortWorkIsAnsweredAndNeverDeclared() {
        var edges = idleEdges()
        #expect(look(&edges, 1_050, .working(since: nil)) == [.ping])
        #expect(edges.pingAnswered(at: Self.ms(1_060)).isEmpty)
        // Busy again at the next look: dated after the answer, not from the first stretch.
        #expect(look(&edges, 1_100, .working(since: nil)) == [.ping])
        #expect(edges.busySince == Self.ms(1_080))
        #expect(edges.pingAnswered(at: Self.ms(1_120)).isEmpty)
        #expect(look(&edges, 1_150, .waiting).isEmpty)
        #expect(edges.declared == nil)
    }

    @Test func workTheLooksCannotDateFallsBackToThePingsLowerBound() {
        // The thread was working at the look before too, with no answer since: the start is not
        // between the two looks.
        var edges = idleEdges()
        #expect(look(&edges, 1_050, .unknown).isEmpty)
        #expect(look(&edges, 1_100, .working(since: nil)) == [.ping])
        #expect(edges.busySince == nil)
        #expect(look(&edges, 1_300, .working(since: nil)).isEmpty)
        #expect(look(&edges, 1_350, .working(since: nil)) == [.declareBusy(since: Self.ms(1_100), edges: .ping)])
    }

    @Test func withoutLooksAPingOverdueByAThresholdIsAStallSinceItsEnqueueing() {
        var edges = QueueEdges(intervalNanoseconds: Self.ms(50))
        #expect(look(&edges, 1_000, .unknown) == [.ping])
        #expect(look(&edges, 1_200, .unknown).isEmpty)
        #expect(look(&edges, 1_250, .unknown) == [.declareBusy(since: Self.ms(1_000), edges: .ping)])
        // The thread seen in its idle wait does not end a stall the ping found: the work may be on
        // another thread; only the answer ends it.
        #expect(look(&edges, 1_300, .waiting).isEmpty)
        #expect(edges.pingAnswered(at: Self.ms(1_400)) == [.declareIdle])
    }

    @Test func aTickOncePerThresholdThatReadsTheClockALittleShortStillCounts() {
        // Ticks a threshold apart (no looks), the coarse clock 4 ms short at the second.
        var edges = QueueEdges(intervalNanoseconds: Self.threshold)
        #expect(look(&edges, 1_000, .unknown) == [.ping])
        #expect(look(&edges, 1_246, .unknown) == [.declareBusy(since: Self.ms(1_000), edges: .ping)])
        #expect(edges.pingAnswered(at: Self.ms(1_300)) == [.declareIdle])
        #expect(look(&edges, 1_496, .unknown) == [.ping])
        // Not early by more than the slack (10 ms).
        #expect(look(&edges, 1_735, .unknown).isEmpty)
    }

    @Test func aDatedStallSeenOverByALookEndsThere() {
        var edges = idleEdges()
        #expect(look(&edges, 1_050, .waiting).isEmpty)
        #expect(look(&edges, 1_100, .working(since: nil)) == [.ping])
        #expect(look(&edges, 1_325, .working(since: nil)) == [.declareBusy(since: Self.ms(1_075), edges: .sampled)])
        #expect(look(&edges, 1_375, .waiting) == [.declareIdle])
        // The answer that follows changes nothing more.
        #expect(edges.pingAnswered(at: Self.ms(1_376)).isEmpty)
    }
}
