import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// The lead-up's near misses as a report holds them: the function named in `reading`, renamed
/// once frames get names, and stack indices that point nowhere refused by the validator.
@Suite struct NearMissNamingTests {
    /// A report whose stack 0 is `parse` under `load` and stack 1 `render`, with near misses in
    /// those stacks (and one without a stack).
    static func report(stacks missStacks: [Int?]) -> HangReport {
        var report = StackReports.report(
            durationMs: 500, samples: [(250, ["billing.Parser.parse()", "billing.load()", "main"]), (300, ["billing.render(_:)", "main"])])
        report.before = HangReport.LeadUp(
            windowMs: 5000, bucketMs: 100, buckets: [], busyRatio: 0.9, reading: "busy 90 % for 4.8 s before onset",
            nearMisses: missStacks.enumerated().map { index, stack in
                HangReport.LeadUp.NearMiss(offsetMs: Double(index) * 200 - 2_000, atLeastMs: 130, stack: stack, error: stack == nil ? "timeout" : nil)
            })
        return report
    }

    @Test func theReadingNamesTheFunctionMostNearMissesRanInOnce() throws {
        var report = Self.report(stacks: [0, 1, 1, nil])
        report.nameNearMisses()
        // Named as `show` names frames (a module before a type is dropped, not before a function).
        #expect(report.before?.nearMissesIn == "billing.render(_:)", "\(String(describing: report.before?.nearMissesIn))")
        #expect(report.before?.reading == "busy 90 % for 4.8 s before onset, 4 near misses in `billing.render(_:)`")
        // Again, after names changed: the phrase is replaced, not added to.
        report.frames = report.frames.map { frame in
            var renamed = frame
            if renamed.symbol == "billing.render(_:)" { renamed.symbol = "billing.Renderer.draw(_:)" }
            return renamed
        }
        report.nameNearMisses()
        #expect(report.before?.reading == "busy 90 % for 4.8 s before onset, 4 near misses in `Renderer.draw(_:)`")
        // A tie goes to the latest near miss's function.
        var tie = Self.report(stacks: [1, 0])
        tie.nameNearMisses()
        #expect(tie.before?.nearMissesIn == "Parser.parse()")
        // None with a stack: counted, no function.
        var none = Self.report(stacks: [nil])
        none.nameNearMisses()
        #expect(none.before?.nearMissesIn == nil)
        #expect(none.before?.reading == "busy 90 % for 4.8 s before onset, 1 near miss")
    }

    @Test func aNearMissStackThatPointsNowhereIsAProblemAndNamesNothing() throws {
        var report = Self.report(stacks: [99, -1])
        report.nameNearMisses()
        #expect(report.before?.nearMissesIn == nil)
        let problems = ReportValidator().problems(report)
        #expect(problems.contains { $0.hasPrefix("before.nearMisses[0].stack: 99 is not an index into stacks") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("before.nearMisses[1].stack: -1 is not an index into stacks") }, "\(problems)")
        #expect(ReportValidator().problems(Self.report(stacks: [0, 1])).isEmpty)
    }
}
