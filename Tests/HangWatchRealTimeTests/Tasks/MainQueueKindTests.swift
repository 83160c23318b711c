import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// A main-actor hang's `kind` end to end, in a child process (`hangwatch-faults mainactor`): the
/// samples of the thread draining the main queue say which task each ran, through the Swift
/// runtime's current-task word of that thread: in `dispatchMain()`, the main queue watched
/// (`QueueHangKind`), and on `RunLoop.main`, the loop watched (`RunLoopHangKind.fromTasks`).
@Suite(.serialized) struct MainQueueKindTests {
    struct ChildRun: Decodable {
        var reportsWritten: Int
        var ran: Int
    }

    /// The child's run and its reports, longest first.
    func run(mode: String, source: String = "main-queue", directory: ReportDirectory) throws -> (ChildRun, [HangReport]) {
        let result = try ExecutableRun.run(
            BuiltExecutable.path("hangwatch-faults"),
            ["mainactor", "--reports", directory.path, "--mode", mode, "--count", "2000", "--source", source], timeout: 60)
        try #require(result.status == 0 && !result.timedOut, "\(result.errors)")
        let child = try JSONDecoder().decode(ChildRun.self, from: Data(try #require(result.lines.last).utf8))
        let reports = directory.reports().sorted { $0.durationMs > $1.durationMs }
        try #require(!reports.isEmpty, "no report")
        return (child, reports)
    }

    /// The reads a kind's reason counts (`… samples (40 reads): …`).
    static func reads(in reason: String) -> Int? {
        guard let open = reason.range(of: " samples (") else { return nil }
        return Int(reason[open.upperBound...].prefix { $0.isNumber })
    }

    /// The child's one 800 ms main-actor job watched through `source`: its one report, with the
    /// job's function at the heaviest stack, and its kind, `oneJob`.
    func oneJob(source: String, reportedAs: String) throws -> (HangReport, HangReport.Kind) {
        let (child, reports) = try run(mode: "one", source: source, directory: ReportDirectory())
        try #require(child.ran == 1)
        try #require(reports.count == 1, "\(reports.map { "\($0.id): \($0.durationMs) ms" })")
        let report = reports[0]
        #expect(report.source == reportedAs)
        #expect(report.heaviestStackContains("holdMainActor"), "\(report.heaviestSymbols)")
        let kind = try #require(report.kind, "no kind: \(report.samples.count) samples")
        #expect(kind.name == "oneJob", "\(kind)")
        return (report, kind)
    }

    /// One task computing 800 ms on the main actor: every sample found that task, over more than
    /// the threshold: `oneJob`.
    @Test func oneMainActorJobPastTheThresholdIsOneJob() throws {
        let (report, kind) = try oneJob(source: "main-queue", reportedAs: "dispatch-main")
        #expect(kind.reason.hasPrefix("the same task (id "), "\(kind.reason)")
        print("main actor, one job: \(report.durationMs) ms, \(report.samples.count) samples, \(kind.name): \(kind.reason)")
    }

    /// 2,000 tasks of 0.5 ms each on the main actor at once (queued in one block, so the queue is
    /// held about a second in one hang): the reads around the samples found many tasks, so no one
    /// job held the queue; it says how many (never more than its reads), and never `oneJob`.
    /// Measured: 22 to 37 tasks at 14 to 17 samples in one hang of about a second; one run of 7
    /// gave two hangs.
    @Test func aBacklogOfShortMainActorJobsIsNeverOneJob() throws {
        let (child, reports) = try run(mode: "many", directory: ReportDirectory())
        try #require(child.ran == 2_000, "\(child.ran) of 2,000 jobs ran")
        // A ping the looks sent while the jobs were being queued may land among them: its answer
        // ends the hang, and the rest of the backlog is a second one. Neither is one job.
        #expect(reports.count <= 2 && reports.allSatisfy { $0.kind?.name != "oneJob" }, "\(reports.map { "\($0.durationMs) ms: \($0.kind?.reason ?? "no kind")" })")
        let report = reports[0]
        #expect(report.source == "dispatch-main")
        let kind = try #require(report.kind, "no kind: \(report.samples.count) samples")
        #expect(kind.name == "unknown", "\(kind)")
        let tasks = try #require(Int(kind.reason.prefix { $0.isNumber }), "\(kind.reason)")
        // Two reads a sample, and one at each look that found the queue's thread working with
        // the ping out (37 tasks at 17 samples in a clean-clone run): never more tasks than reads.
        let reads = try #require(Self.reads(in: kind.reason), "\(kind.reason)")
        #expect(tasks >= 3 && tasks <= reads && reads >= 2 * report.samples.count, "\(kind.reason)")
        #expect(kind.reason.contains("tasks ran at \(report.samples.count) samples ("), "\(kind.reason)")
        print("main actor, 2,000 jobs: \(report.durationMs) ms, \(report.samples.count) samples, \(kind.name): \(kind.reason)")
    }

    /// The same 800 ms main-actor job on `RunLoop.main` (which drains the main queue), the loop
    /// watched: every sample found that task in one turn of the loop: `oneJob`, and the lead-up
    /// (the loop idle before) under 5 % busy.
    @Test func oneMainActorJobOnTheMainRunLoopIsOneJob() throws {
        let (report, kind) = try oneJob(source: "run-loop", reportedAs: "runloop")
        #expect(kind.reason.contains("in one turn of the loop"), "\(kind.reason)")
        let before = try #require(report.before, "no lead-up")
        #expect(before.busyRatio < 0.05, "\(before.reading)")
        print("run loop, one main-actor job: \(report.durationMs) ms, \(report.samples.count) samples, busy before \(before.busyRatio), \(kind.name): \(kind.reason)")
    }

    /// 2,000 main-actor jobs of 0.5 ms queued at once on `RunLoop.main`: one drain runs them all in
    /// one piece; the reads found many tasks, so never `oneJob`; the reason says how many.
    @Test func aBacklogOfShortMainActorJobsOnTheMainRunLoopIsNeverOneJob() throws {
        let (child, reports) = try run(mode: "many", source: "run-loop", directory: ReportDirectory())
        try #require(child.ran == 2_000, "\(child.ran) of 2,000 jobs ran")
        #expect(reports.allSatisfy { $0.kind?.name != "oneJob" }, "\(reports.map { "\($0.durationMs) ms: \($0.kind?.reason ?? "no kind")" })")
        let report = reports[0]
        #expect(report.source == "runloop")
        let kind = try #require(report.kind, "no kind: \(report.samples.count) samples")
        #expect(kind.name == "unknown", "\(kind)")
        #expect(kind.reason.contains("tasks ran at \(report.samples.count) samples ("), "\(kind.reason)")
        let tasks = try #require(Int(kind.reason.components(separatedBy: "; ").last?.prefix { $0.isNumber } ?? ""), "\(kind.reason)")
        #expect(tasks >= 3 && tasks <= Self.reads(in: kind.reason) ?? 0, "\(kind.reason)")
        print("run loop, 2,000 main-actor jobs: \(report.durationMs) ms, \(report.samples.count) samples, \(kind.name): \(kind.reason)")
    }
}
