import Foundation
@testable import HangWatch
import HangWatchReport
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
}
