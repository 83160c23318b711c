@testable import HangWatch
import Testing

/// Which dump requests are served: one at a time, a few a minute.
@Suite struct DumpAdmissionTests {
    static let second: UInt64 = 1_000_000

    @Test func ofRequestsThatArriveTogetherTheFirstIsServedAndTheOthersAreToldItIsBusy() {
        var admission = DumpAdmission()
        let decisions = admission.admit(4, at: 10 * Self.second)
        #expect(decisions.first == .serve)
        #expect(decisions.dropFirst().allSatisfy { $0 == .refuse("busy: another dump is being taken; try again") }, "\(decisions)")
    }

    @Test func aBurstIsServedThenTheRateLimitRefusesSayingWhenToTryAgain() {
        var admission = DumpAdmission(burst: 3, perMinute: 6)
        let start = 100 * Self.second
        for step in 0..<3 { #expect(admission.admit(1, at: start + UInt64(step) * Self.second) == [.serve]) }
        #expect(admission.admit(1, at: start + 3 * Self.second) == [.refuse("rate limit: at most 6 dumps a minute (3 at once); try again in 7 s")])
        // A token comes back every 10 s (0.3 of one came back during the three served).
        #expect(admission.admit(1, at: start + 11 * Self.second) == [.serve])
        #expect(admission.admit(1, at: start + 12 * Self.second).first != .serve)
        // Idle for long: the burst again, never more.
        var fresh = DumpAdmission(burst: 3, perMinute: 6)
        _ = fresh.admit(1, at: 0)
        let served = (1...10).map { fresh.admit(1, at: 3600 * Self.second + UInt64($0)) }.filter { $0 == [.serve] }.count
        #expect(served == 3)
    }

    /// 50 requests, 4 at a time, a second apart: each gets an answer, and at most the burst plus
    /// one per 10 s are dumps.
    @Test func fiftyRequestsFourAtATimeAreEachAnsweredAndFewAreServed() {
        var admission = DumpAdmission()
        var decisions: [DumpAdmission.Decision] = []
        for round in 0..<13 {
            let count = min(4, 50 - round * 4)
            decisions += admission.admit(count, at: UInt64(round) * Self.second)
        }
        #expect(decisions.count == 50)
        let served = decisions.filter { $0 == .serve }.count
        #expect(served >= 3 && served <= 3 + 2, "\(served)")
    }
}
