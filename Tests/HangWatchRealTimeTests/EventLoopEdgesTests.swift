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
        // One more look a look interval later, for a quick answer; the ping is still out there.
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(1_060))
        #expect(edges.look(at: Self.ms(1_060), waiting: false, thresholdNanoseconds: Self.threshold).isEmpty)
        #expect(edges.awaitingAnswer)
        // The decision falls a threshold after the wake, not a threshold after the ping.
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(1_250))
        #expect(edges.look(at: Self.ms(1_250), waiting: false, thresholdNanoseconds: Self.threshold) == [.declareBusy(since: Self.ms(1_000))])
        // Declared: nothing to look at until the answer, which wakes the watcher.
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == nil)
        #expect(edges.pingAnswered(at: Self.ms(1_300)) == [.declareIdle, .wakeWatcher])
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
    /// block that begins after one is busy since that answer at most. Quick answers do not wake the
    /// watcher: the looks keep one look interval (10 ms) apart, one wake-up each.
    @Test func underLoadEachAnswerIsABoundaryAndLooksKeepTheirCadence() {
        var edges = edges()
        edges.loopWoke(at: 0)
        var now: UInt64 = Self.ms(10)
        for _ in 0..<5 {
            #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == now)
            #expect(edges.look(at: now, waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
            #expect(edges.pingAnswered(at: now + Self.ms(2)).isEmpty)
            now += Self.ms(10)
        }
        // The last answer at 52 ms; a handler blocks from 55 ms.
        #expect(edges.look(at: Self.ms(60), waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
        #expect(edges.look(at: Self.ms(70), waiting: false, thresholdNanoseconds: Self.threshold).isEmpty)
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(302))
        #expect(edges.look(at: Self.ms(302), waiting: false, thresholdNanoseconds: Self.threshold) == [.declareBusy(since: Self.ms(52))])
    }

    /// An answer the watcher waits for (a look found the ping out) wakes it, and the next look
    /// comes at the grid's next instant after that answer; one that came before the next look does not.
    @Test func onlyAnAwaitedAnswerWakesTheWatcher() {
        var edges = edges()
        edges.loopWoke(at: 0)
        #expect(edges.look(at: Self.ms(10), waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
        #expect(!edges.awaitingAnswer)
        #expect(edges.pingAnswered(at: Self.ms(12)).isEmpty)
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(20))
        #expect(edges.look(at: Self.ms(20), waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
        #expect(edges.look(at: Self.ms(30), waiting: false, thresholdNanoseconds: Self.threshold).isEmpty)
        #expect(edges.pingAnswered(at: Self.ms(95)) == [.wakeWatcher])
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(100))
        // A wake from idle: the grid's next instant.
        #expect(edges.look(at: Self.ms(100), waiting: true, thresholdNanoseconds: Self.threshold).isEmpty)
        edges.loopWoke(at: Self.ms(400))
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(410))
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
        #expect(edges.look(at: Self.ms(112), waiting: false, thresholdNanoseconds: Self.threshold, blockedSince: Self.ms(90)).isEmpty)
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
        #expect(!edges.awaitingAnswer)
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

    /// Ticked (the loop reports each iteration's end), under steady load each look reads the last
    /// iteration's end and the stretch is busy since then: no ping goes out and no timer fires on
    /// the loop. A block that begins after an iteration ended at 497 ms is declared at the first
    /// look a threshold after that end, busy since it exactly; the declared hang's one ping ends it.
    @Test func tickedTheLoopsIterationsAreTheBoundariesAndNoPingGoesOutBeforeAHang() {
        var edges = EventLoopEdges(intervalNanoseconds: Self.ms(50))
        edges.loopWoke(at: Self.ms(3))
        var now: UInt64 = Self.ms(10)
        while now < Self.ms(500) {
            #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == now)
            #expect(edges.look(at: now, waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: now - Self.ms(1)).isEmpty)
            #expect(edges.phase == .busy(since: now - Self.ms(1), pinged: false, declared: false, steady: true))
            now += Self.ms(10)
        }
        // Blocked from just after 497 ms: no iteration ends any more.
        while now < Self.ms(750) {
            #expect(edges.look(at: now, waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(497)).isEmpty)
            now += Self.ms(10)
        }
        #expect(edges.look(at: now, waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(497))
            == [.ping, .declareBusy(since: Self.ms(497))])
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == nil)
        #expect(edges.pingAnswered(at: Self.ms(800)) == [.declareIdle, .wakeWatcher])
        // Busy again from the answer, looked at on the grid; still no ping.
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(810))
        #expect(edges.look(at: Self.ms(810), waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(805)).isEmpty)
        #expect(edges.look(at: Self.ms(820), waiting: true, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(805)).isEmpty)
        #expect(edges.phase == .idle)
    }

    /// Ticked, an iteration that ended before the wake is not a boundary of the stretch the wake
    /// began, and an end the fine clock puts after the coarse `now` counts as now until the coarse
    /// clock has passed it.
    @Test func tickedOnlyAnIterationEndInsideTheStretchMovesItsStart() {
        var edges = EventLoopEdges(intervalNanoseconds: Self.ms(50))
        edges.loopWoke(at: Self.ms(1_000))
        #expect(edges.look(at: Self.ms(1_010), waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(990)).isEmpty)
        #expect(edges.phase == .busy(since: Self.ms(1_000), pinged: false, declared: false))
        #expect(edges.look(at: Self.ms(1_020), waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(1_023)).isEmpty)
        #expect(edges.phase == .busy(since: Self.ms(1_020), pinged: false, declared: false, steady: true))
        // Read again once the coarse clock is past it, the end is taken as it is.
        #expect(edges.look(at: Self.ms(1_270), waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(1_023)).isEmpty)
        #expect(edges.look(at: Self.ms(1_280), waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(1_023))
            == [.ping, .declareBusy(since: Self.ms(1_023))])
    }

    /// Ticked looks fall on multiples of the look interval: loops woken at different moments are
    /// looked at in one wake-up of the watcher.
    @Test func tickedLooksOfEveryLoopFallOnTheSameInstants() {
        var first = EventLoopEdges(intervalNanoseconds: Self.ms(50))
        var second = EventLoopEdges(intervalNanoseconds: Self.ms(50))
        first.loopWoke(at: Self.ms(1_001))
        second.loopWoke(at: Self.ms(1_007))
        #expect(first.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(1_010))
        #expect(second.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(1_010))
        _ = first.look(at: Self.ms(1_010), waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(1_004))
        _ = second.look(at: Self.ms(1_010), waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(1_009))
        #expect(first.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(1_020))
        #expect(second.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(1_020))
    }

    /// Ticked, a look skips the loop's thread only when an iteration ended since the look before
    /// and within a millisecond of it (the loop is working); otherwise it reads whether the loop
    /// is in its wait.
    @Test func tickedALookReadsTheThreadUnlessAnIterationJustEnded() {
        #expect(EventLoopEdges.readsThread(lastIterationEnd: nil, endSeenBefore: 0, fineNow: Self.ms(10)))
        #expect(EventLoopEdges.readsThread(lastIterationEnd: Self.ms(9), endSeenBefore: Self.ms(9), fineNow: Self.ms(9)))
        #expect(!EventLoopEdges.readsThread(lastIterationEnd: Self.ms(9), endSeenBefore: Self.ms(5), fineNow: Self.ms(10)))
        #expect(EventLoopEdges.readsThread(lastIterationEnd: Self.ms(9), endSeenBefore: Self.ms(5), fineNow: Self.ms(10) + 1))
    }

    /// Ticked, a loop that iterated since the look before and is in its wait at this look slept
    /// after that iteration: a block after the sleep is busy from that look, not from the
    /// iteration's end (the look before would have dated it from 503 ms, 12 ms early), and the
    /// loop is not taken for idle (no declareIdle, no wait for its wake).
    @Test func tickedALoopFoundInItsWaitAfterAnIterationIsBusyFromThatLookAtTheEarliest() {
        var edges = EventLoopEdges(intervalNanoseconds: Self.ms(50))
        edges.loopWoke(at: Self.ms(480))
        #expect(edges.look(at: Self.ms(490), waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(489)).isEmpty)
        // An iteration ended at 503 ms; at 510 ms the loop is in its wait.
        #expect(edges.look(
            at: Self.ms(510), waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(503),
            inWaitAfterIteration: true).isEmpty)
        #expect(edges.phase == .busy(since: Self.ms(510), pinged: false, declared: false, steady: true))
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(520))
        // It woke at 515 ms and blocked: no iteration ends any more.
        var now = Self.ms(520)
        while now < Self.ms(760) {
            #expect(edges.look(at: now, waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(503)).isEmpty)
            now += Self.ms(10)
        }
        #expect(edges.look(at: now, waiting: false, thresholdNanoseconds: Self.threshold, lastIterationEnd: Self.ms(503))
            == [.ping, .declareBusy(since: Self.ms(510))])
    }

    /// Ticked, but the loop reports no iteration (its group was made without the delegate: the
    /// default set-up): it is pinged at each look on the shared grid, and each answer is a
    /// boundary that wakes no one, rather than declared a threshold after its wake under load. A
    /// block after an answer is declared a threshold after that answer, busy since it, and the
    /// declared hang's answer ends it and wakes the watcher.
    @Test func tickedALoopThatReportsNoIterationIsPingedAtItsLooks() {
        var edges = EventLoopEdges(intervalNanoseconds: Self.ms(50))
        edges.loopWoke(at: 0)
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(10))
        #expect(edges.look(at: Self.ms(10), waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
        #expect(edges.pingAnswered(at: Self.ms(12)).isEmpty)
        #expect(edges.phase == .busy(since: Self.ms(12), pinged: false, declared: false, steady: true))
        // The next look is the grid's next instant, not a look interval after the answer.
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(20))
        #expect(edges.look(at: Self.ms(20), waiting: false, thresholdNanoseconds: Self.threshold) == [.ping])
        // The loop blocks before it runs that ping: the next look finds it out and waits for it
        // until a threshold after the last answer.
        #expect(edges.look(at: Self.ms(30), waiting: false, thresholdNanoseconds: Self.threshold).isEmpty)
        #expect(edges.awaitingAnswer)
        #expect(edges.nextLook(thresholdNanoseconds: Self.threshold) == Self.ms(262))
        #expect(edges.look(at: Self.ms(262), waiting: false, thresholdNanoseconds: Self.threshold) == [.declareBusy(since: Self.ms(12))])
        #expect(edges.pingAnswered(at: Self.ms(400)) == [.declareIdle, .wakeWatcher])
    }
}
