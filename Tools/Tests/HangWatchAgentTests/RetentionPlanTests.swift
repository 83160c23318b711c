import Foundation
import Testing

@testable import HangWatchAgent

@Suite struct RetentionPlanTests {
    let now = Date(timeIntervalSince1970: 1_795_000_000)

    func candidate(_ service: String, _ minutesAgo: Double, size: UInt64 = 1000, protected: Bool = false) -> RetentionPlan.Candidate {
        RetentionPlan.Candidate(
            file: Spool.File(service: service, name: "hang-\(service)-\(minutesAgo).json", size: size, modifiedNanoseconds: 0, inode: 1),
            startedAt: now.addingTimeInterval(-minutesAgo * 60), isProtected: protected)
    }

    func limits(maxUse: UInt64 = 1 << 40, keepFree: UInt64 = 0, maxAge: Duration = .zero, perService: Int = 1000) -> RetentionPlan.Limits {
        RetentionPlan.Limits(maxUse: maxUse, keepFree: keepFree, maxAge: maxAge, maxPerService: perService)
    }

    func deleted(_ plan: RetentionPlan) -> [String] { plan.deletions.map(\.file.name) }

    @Test func withinEveryLimitNothingIsDeleted() {
        let plan = RetentionPlan(candidates: (1...20).map { candidate("a", Double($0)) }, limits: limits(), freeBytes: 1 << 40, now: now)
        #expect(plan.deletions.isEmpty)
    }

    @Test func reportsPastTheMaximumAgeGo() {
        let plan = RetentionPlan(
            candidates: [candidate("a", 10), candidate("a", 90), candidate("b", 200), candidate("b", 300, protected: true)],
            limits: limits(maxAge: .seconds(3600)), freeBytes: nil, now: now)
        #expect(deleted(plan) == ["hang-b-200.0.json", "hang-a-90.0.json"])
        #expect(plan.deletions.allSatisfy { $0.reason == .age })
    }

    @Test func eachServiceKeepsItsNewest() {
        let candidates = (1...10).map { candidate("busy", Double($0)) } + (1...3).map { candidate("quiet", Double($0) + 100) }
        let plan = RetentionPlan(candidates: candidates, limits: limits(perService: 4), freeBytes: nil, now: now)
        // The quiet service's old reports stay: the count is per service.
        #expect(Set(deleted(plan)) == Set((5...10).map { "hang-busy-\(Double($0)).json" }))
        #expect(plan.deletions.allSatisfy { $0.reason == .count })
    }

    @Test func maxUseDeletesTheOldestAcrossServices() {
        let candidates = [candidate("a", 1), candidate("b", 2), candidate("a", 3), candidate("c", 4), candidate("b", 5)]
        let plan = RetentionPlan(candidates: candidates, limits: limits(maxUse: 2500), freeBytes: nil, now: now)
        #expect(deleted(plan) == ["hang-b-5.0.json", "hang-c-4.0.json", "hang-a-3.0.json"])
        #expect(plan.deletions.allSatisfy { $0.reason == .maxUse })
    }

    @Test func keepFreeDeletesUntilTheFileSystemHasRoom() {
        let candidates = (1...6).map { candidate("a", Double($0), size: 10_000) }
        let plan = RetentionPlan(candidates: candidates, limits: limits(keepFree: 100_000), freeBytes: 75_000, now: now)
        #expect(deleted(plan) == ["hang-a-6.0.json", "hang-a-5.0.json", "hang-a-4.0.json"])
        #expect(plan.deletions.allSatisfy { $0.reason == .keepFree })
    }

    @Test func aHangStillGoingOnIsNeverDeleted() {
        let candidates = [candidate("a", 100, size: 5000, protected: true), candidate("a", 1, size: 5000)]
        let plan = RetentionPlan(candidates: candidates, limits: limits(maxUse: 1000, perService: 1), freeBytes: 0, now: now)
        #expect(deleted(plan) == ["hang-a-1.0.json"])
    }

    @Test func manyServicesAtScale() {
        var candidates: [RetentionPlan.Candidate] = []
        for service in 0..<50 {
            for report in 0..<100 { candidates.append(candidate("s\(service)", Double(report * 50 + service), size: 1000)) }
        }
        let plan = RetentionPlan(candidates: candidates, limits: limits(maxUse: 1_000_000, perService: 40), freeBytes: nil, now: now)
        let deleted = Set(plan.deletions.map(\.file))
        #expect(deleted.count == plan.deletions.count, "nothing deleted twice")
        let kept = candidates.filter { !deleted.contains($0.file) }
        #expect(kept.count == 1000)
        #expect(Dictionary(grouping: kept, by: \.file.service).values.allSatisfy { $0.count <= 40 })
        // What is kept is newer than everything deleted for size.
        let oldestKept = kept.map(\.startedAt).min()!
        let sized = Set(plan.deletions.filter { $0.reason == .maxUse }.map(\.file))
        #expect(!sized.isEmpty)
        #expect(candidates.filter { sized.contains($0.file) }.allSatisfy { $0.startedAt <= oldestKept })
    }
}
