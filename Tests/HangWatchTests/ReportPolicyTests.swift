import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct ReportPolicyTests {
    @Test func theRateLimiterAllowsABurstThenTheAverageRate() {
        var limiter = ReportRateLimiter(burst: 3, perMinute: 6)
        let admitted = (0..<10).filter { _ in limiter.admit(now: 1_000_000) }.count
        #expect(admitted == 3)
        // 6 per minute: one token every 10 s.
        let early = limiter.admit(now: 1_000_000 + 9_000_000)
        let onTime = limiter.admit(now: 1_000_000 + 10_100_000)
        let again = limiter.admit(now: 1_000_000 + 10_200_000)
        #expect(!early)
        #expect(onTime)
        #expect(!again)
    }

    @Test func theRateLimiterDoesNotBankMoreThanTheBurst() {
        var limiter = ReportRateLimiter(burst: 2, perMinute: 60)
        _ = limiter.admit(now: 0)
        let admitted = (0..<10).filter { _ in limiter.admit(now: 3_600_000_000) }.count
        #expect(admitted == 2)
    }

    @Test func repeatsWithinTheWindowAreFoldedAndRewrittenOnPowersOfTwo() {
        var tracker = RepeatTracker(windowMicroseconds: 600_000_000)
        #expect(tracker.record(signature: "s", durationMs: 300, endedAt: Date(), now: 0) == .newReport)
        tracker.registerReport(signature: "s", reportID: "r1", now: 0)
        var rewrites: [Int] = []
        for index in 1...9 {
            guard case .repeatOf(let id, let repeats, let rewrite) = tracker.record(
                signature: "s", durationMs: 300 + Double(index), endedAt: Date(), now: UInt64(index) * 1_000_000)
            else {
                Issue.record("repeat \(index) not folded")
                return
            }
            #expect(id == "r1")
            #expect(repeats.count == index)
            if rewrite { rewrites.append(index) }
        }
        #expect(rewrites == [1, 2, 4, 8])
        #expect(tracker.unwrittenRepeats.first?.repeats.count == 9)
        #expect(tracker.unwrittenRepeats.first?.repeats.maxDurationMs == 309)
    }

    @Test func aRepeatAfterTheWindowIsANewReport() {
        var tracker = RepeatTracker(windowMicroseconds: 10_000_000)
        tracker.registerReport(signature: "s", reportID: "r1", now: 0)
        #expect(tracker.isRepeat(signature: "s", now: 5_000_000))
        #expect(!tracker.isRepeat(signature: "s", now: 11_000_000))
        #expect(!tracker.isRepeat(signature: "other", now: 5_000_000))
    }

    @Test func aZeroWindowDisablesFolding() {
        var tracker = RepeatTracker(windowMicroseconds: 0)
        tracker.registerReport(signature: "s", reportID: "r1", now: 0)
        #expect(tracker.record(signature: "s", durationMs: 1, endedAt: Date(), now: 1) == .newReport)
    }

    @Test func rememberedSignaturesAreBounded() {
        var tracker = RepeatTracker(windowMicroseconds: 600_000_000)
        for index in 0..<1000 {
            tracker.registerReport(signature: "s\(index)", reportID: "r\(index)", now: UInt64(index))
        }
        #expect(tracker.entries.count <= tracker.capacity)
        #expect(tracker.isRepeat(signature: "s999", now: 2000))
    }

    // MARK: which hangs become files

    /// A hang's report as the policy sees it: an id, a signature, a duration (and a stack, so the
    /// signature counts).
    static func hang(_ id: Int, signature: String, durationMs: Double = 300) -> HangReport {
        let start = Date(timeIntervalSince1970: 1_795_000_000 + Double(id))
        let frame = HangReport.Frame(address: "0x10", image: nil, offset: nil)
        return HangReport(
            id: "h\(id)", service: "svc", host: "h", pid: 1, process: HangReport.Process(executable: "/srv/svc", startTimeTicks: 1),
            thread: HangReport.ThreadInfo(tid: 1, name: "main", isMain: true), startedAt: start, detectedAt: start,
            endedAt: start.addingTimeInterval(durationMs / 1000), durationMs: durationMs, thresholdMs: 250, outcome: .recovered,
            activity: "afterWaiting", mode: nil, samples: [], stacks: [HangReport.Stack(frames: [0], truncated: false)],
            heaviestStack: HangReport.HeaviestStack(stack: 0, sampleCount: 1, weightMs: durationMs, frames: [frame]),
            frames: [frame], images: [], signature: signature,
            context: HangReport.Context(
                verdict: .computing, onCpuRatio: 1, runQueueRatio: 0, blockedIn: nil, threadStates: [:], rssBytes: nil,
                loadAverage: nil, cpuCount: 1, watchdogOversleepMs: 0, debuggerAttached: false, processStopped: false),
            capture: HangReport.CaptureSummary(
                signal: 41, sampleIntervalMs: 50, samplesTaken: 1, samplesDropped: 0, maxFrames: 128, pauseMedianUs: nil,
                pauseMaxUs: nil, errors: [], reportsSuppressed: 0))
    }

    /// What a run of hangs turned into.
    struct Outcome {
        var written: [String] = []
        var folded = 0
        var removed = 0
        var suppressed = 0
        var provisionals = 0

        mutating func apply(_ actions: [ReportPolicy.Action]) {
            for action in actions {
                switch action {
                case .write(let report): written.append(report.signature)
                case .fold: folded += 1
                case .remove: removed += 1
                case .suppress: suppressed += 1
                }
            }
        }
    }

    /// One hang through the policy: detection with the first sample's signature, then the end.
    static func run(
        _ policy: inout ReportPolicy, _ outcome: inout Outcome, id: Int, start: String, final: String, at now: UInt64
    ) {
        if policy.hangStarted(hang(id, signature: start), now: now) { outcome.provisionals += 1 }
        outcome.apply(policy.hangEnded(hang(id, signature: final), startSignature: start, now: now + 300_000))
    }

    static var defaults: ReportPolicy {
        ReportPolicy(limiter: ReportRateLimiter(burst: 10, perMinute: 6), repeats: RepeatTracker(windowMicroseconds: 600_000_000))
    }

    /// A hang whose heaviest stack is one app frame named `symbol`, with address signature `address`.
    static func named(_ id: Int, address: String, symbol: String) -> HangReport {
        var report = hang(id, signature: address)
        let frame = HangReport.Frame(address: "0x10", image: 0, offset: "0x10", symbol: symbol)
        report.images = [HangReport.Image(path: "/srv/svc", buildId: "ab", base: "0x0", size: 0x1000, isMainExecutable: true)]
        report.frames = [frame]
        report.heaviestStack?.frames = [frame]
        return report
    }

    @Test func namedHangsFoldByTheirNamesAsReadersGroupThem() {
        // Two call sites of one function (their address signatures differ), named by an in-process
        // enricher: `hangwatch top` groups them as one, so the monitor folds them as one.
        var policy = Self.defaults
        var outcome = Outcome()
        for (id, report) in [
            Self.named(0, address: "site-1", symbol: "svc.flush() -> ()"), Self.named(1, address: "site-2", symbol: "svc.flush() -> ()"),
            Self.named(2, address: "site-3", symbol: "svc.render() -> ()"),
        ].enumerated() {
            let start = ReportPolicy.startSignature(of: report)
            if policy.hangStarted(report, now: UInt64(id) * 1_000_000) { outcome.provisionals += 1 }
            outcome.apply(policy.hangEnded(report, startSignature: start, now: UInt64(id) * 1_000_000 + 300_000))
        }
        #expect(outcome.written == ["site-1", "site-3"])
        #expect(outcome.folded == 1)
        #expect(outcome.removed == 0)
    }

    @Test func aRepeatRecognisedByItsFirstSampleWritesNothingAndTakesNoToken() {
        var policy = ReportPolicy(limiter: ReportRateLimiter(burst: 2, perMinute: 1), repeats: RepeatTracker(windowMicroseconds: 600_000_000))
        var outcome = Outcome()
        Self.run(&policy, &outcome, id: 0, start: "a", final: "a", at: 0)
        for id in 1...20 {
            Self.run(&policy, &outcome, id: id, start: "a", final: "a", at: UInt64(id) * 1_000_000)
        }
        // One token left for a new culprit, however many repeats came before it.
        Self.run(&policy, &outcome, id: 21, start: "b", final: "b", at: 30_000_000)
        #expect(outcome.written == ["a", "b"])
        #expect(outcome.folded == 20)
        #expect(outcome.provisionals == 2)
        #expect(outcome.suppressed == 0)
    }

    @Test func aProvisionalThatTurnsOutARepeatGivesItsTokenBack() {
        // The first sample of a computing hang may catch another leaf than the one its final stack
        // names: a provisional file is written, then removed when the hang folds.
        var policy = ReportPolicy(limiter: ReportRateLimiter(burst: 2, perMinute: 1), repeats: RepeatTracker(windowMicroseconds: 600_000_000))
        var outcome = Outcome()
        Self.run(&policy, &outcome, id: 0, start: "a", final: "a", at: 0)
        for id in 1...5 {
            Self.run(&policy, &outcome, id: id, start: "a-leaf-\(id)", final: "a", at: UInt64(id) * 1_000_000)
        }
        Self.run(&policy, &outcome, id: 6, start: "b", final: "b", at: 10_000_000)
        #expect(outcome.written == ["a", "b"])
        #expect(outcome.removed == 5)
        #expect(outcome.suppressed == 0)
    }

    @Test func aNewCulpritOverTheLimitWaitsForATokenAndIsWrittenThen() throws {
        var policy = ReportPolicy(limiter: ReportRateLimiter(burst: 1, perMinute: 6), repeats: RepeatTracker(windowMicroseconds: 600_000_000))
        var outcome = Outcome()
        Self.run(&policy, &outcome, id: 0, start: "a", final: "a", at: 0)
        Self.run(&policy, &outcome, id: 1, start: "b", final: "b", at: 1_000_000)
        #expect(outcome.written == ["a"])
        #expect(policy.pending.map(\.signature) == ["b"])
        // A repeat of the waiting report is counted into it.
        Self.run(&policy, &outcome, id: 2, start: "b", final: "b", at: 2_000_000)
        let due = try #require(policy.nextDue(now: 2_500_000))
        #expect(due > 2_500_000 && due <= 11_000_000)
        #expect(policy.due(now: due - 1_000_000).isEmpty)
        outcome.apply(policy.due(now: due))
        #expect(outcome.written == ["a", "b"])
        #expect(policy.pending.isEmpty)
    }

    @Test func waitingReportsAreWrittenWhenTheMonitorStops() {
        var policy = ReportPolicy(limiter: ReportRateLimiter(burst: 1, perMinute: 1), repeats: RepeatTracker(windowMicroseconds: 600_000_000))
        var outcome = Outcome()
        for (id, signature) in ["a", "b", "c"].enumerated() {
            Self.run(&policy, &outcome, id: id, start: signature, final: signature, at: UInt64(id) * 1_000_000)
        }
        let drained = policy.drainPending()
        #expect(drained.map(\.signature) == ["b", "c"])
    }

    @Test func onlyAFloodOfNewCulpritsBeyondTheWaitingRoomIsDroppedAndCounted() {
        var policy = ReportPolicy(limiter: ReportRateLimiter(burst: 1, perMinute: 1), repeats: RepeatTracker(windowMicroseconds: 600_000_000))
        var outcome = Outcome()
        for id in 0..<(2 + policy.pendingCapacity + 3) {
            Self.run(&policy, &outcome, id: id, start: "s\(id)", final: "s\(id)", at: UInt64(id) * 1000)
        }
        #expect(outcome.written.count == 1)
        #expect(policy.pending.count == policy.pendingCapacity)
        #expect(outcome.suppressed == 4)
        // The next report written says how many were dropped.
        let drained = policy.drainPending()
        #expect(drained.first?.capture.reportsSuppressed == 4)
    }

    /// The issue's server: 40 hangs at 4 call sites within a minute, in any order, with the default
    /// rate limit: a report for each site, the rest folded, nothing suppressed. The first sample of a
    /// computing hang names one of three leaves; only the final stack names the site.
    @Test func fortyHangsAtFourSitesInAMinuteGiveAReportPerSiteWhateverTheOrder() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var policy = Self.defaults
            var outcome = Outcome()
            let hangs = (0..<40).map { $0 % 4 }.shuffled(using: &generator)
            for (id, site) in hangs.enumerated() {
                let leaf = Int.random(in: 0..<3, using: &generator)
                Self.run(&policy, &outcome, id: id, start: "site\(site)-leaf\(leaf)", final: "site\(site)", at: UInt64(id) * 1_500_000)
            }
            #expect(Set(outcome.written) == ["site0", "site1", "site2", "site3"])
            #expect(outcome.written.count == 4)
            #expect(outcome.folded == 36)
            #expect(outcome.suppressed == 0)
            #expect(policy.pending.isEmpty)
        }
    }

    @Test func theRateLimiterSaysWhenItsNextTokenComes() {
        var limiter = ReportRateLimiter(burst: 1, perMinute: 6)
        #expect(limiter.microsecondsUntilToken(now: 0) == 0)
        let first = limiter.admit(now: 0)
        #expect(first)
        #expect(limiter.microsecondsUntilToken(now: 0) == 10_000_000)
        #expect((6_000_000...6_000_001).contains(limiter.microsecondsUntilToken(now: 4_000_000)))
        limiter.refund()
        let refunded = limiter.admit(now: 0)
        #expect(refunded)
    }
}
