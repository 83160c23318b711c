import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// A hang report's `queuedTasks` end to end, in a child process (`hangwatch-faults queued`): the
/// tasks that waited to run behind a starved pool or a hung main queue, read once at detection,
/// counted and folded with where they start.
@Suite(.serialized) struct QueuedTaskCensusTests {
    struct ChildRun: Decodable {
        var reportsWritten: Int
        var ran: Int
    }

    func run(mode: String, count: Int, directory: ReportDirectory) throws -> (ChildRun, HangReport) {
        let result = try ExecutableRun.run(
            BuiltExecutable.path("hangwatch-faults"),
            ["queued", "--reports", directory.path, "--mode", mode, "--count", "\(count)", "--seconds", "1.5"], timeout: 60)
        try #require(result.status == 0 && !result.timedOut, "\(result.errors)")
        let child = try JSONDecoder().decode(ChildRun.self, from: Data(try #require(result.lines.last).utf8))
        // The scenario's premise: every queued task ran once the hang was over.
        try #require(child.ran == count, "\(child.ran) of \(count) queued tasks ran")
        let reports = directory.reports()
        try #require(reports.count == 1, "\(reports.map { "\($0.id): \($0.source), \($0.durationMs) ms" })")
        return (child, reports[0])
    }

    /// 300 tasks made in `spawnQueuedOrders(count:)` parked in `queuedOrder(_:)` →
    /// `waitForRestock()`, resumed once every pool thread is blocked: the starvation's report
    /// counts about 300 waiting for a pool thread (the blocking tasks beyond the pool's width wait
    /// too), their largest fold with that chain.
    @Test func aStarvedPoolsReportCountsTheTasksThatCouldNotStartAndWhereTheyStart() throws {
        let (_, report) = try run(mode: "pool", count: 300, directory: ReportDirectory())
        #expect(report.source == "concurrency-pool")
        #expect(ReportValidator().problems(report).isEmpty, "\(ReportValidator().problems(report))")
        let queued = try #require(report.queuedTasks, "no queuedTasks in the report")
        let folds = queued.folds.map { "\($0.count) \($0.state) \($0.awaits ?? "") \(report.chainNames($0.chain))" }
        #expect(queued.unavailable == nil, "\(queued.unavailable ?? "")")
        #expect(queued.count >= 300 && queued.count <= 300 + 2 * ProcessInfo.processInfo.activeProcessorCount + 8, "\(queued.count): \(folds)")
        let orders = try #require(queued.folds.first)
        #expect(orders.count == 300 && orders.state == "enqueued" && orders.awaits == "pool thread", "\(folds)")
        let chain = report.chainNames(orders.chain)
        // (`withCheckedContinuation` first where it is not inlined: a debug build.)
        let restock = try #require(chain.firstIndex(of: "waitForRestock()"), "\(chain)")
        #expect(Array(chain[restock...].prefix(3)) == ["waitForRestock()", "queuedOrder(_:)", "closure #1 in spawnQueuedOrders(count:)"], "\(chain)")
        #expect(orders.ids.count == HangReport.QueuedTasks.maxIDsPerFold)
        #expect(queued.tookMs > 0 && queued.tookMs < 10_000)
    }

    /// A job on the main queue makes 200 tasks for the main actor (100 not yet started, 100 hopping
    /// to it from the pool), then blocks the queue: its report says about 200 were queued behind
    /// it; the 100 that hopped with their chain, from the function that made them. (A task not yet
    /// started names only the runtime's thunk its closure is called through.)
    @Test func aMainQueueHangsReportSaysHowManyTasksWereQueuedBehindIt() throws {
        let (_, report) = try run(mode: "main", count: 200, directory: ReportDirectory())
        #expect(report.source == "dispatch-main")
        #expect(ReportValidator().problems(report).isEmpty, "\(ReportValidator().problems(report))")
        let queued = try #require(report.queuedTasks, "no queuedTasks in the report")
        let folds = queued.folds.map { "\($0.count) \($0.state) \($0.awaits ?? "") \(report.chainNames($0.entry.map { [$0] } ?? $0.chain)) \(report.chainNames($0.chain))" }
        #expect(queued.unavailable == nil, "\(queued.unavailable ?? "")")
        #expect(queued.count >= 200 && queued.count <= 210, "\(queued.count): \(folds)")
        let named = queued.folds.filter { fold in
            (report.chainNames(fold.chain) + report.chainNames(fold.entry.map { [$0] } ?? [])).contains { $0.contains("spawnMainActorOrders(count:)") }
        }
        #expect(named.reduce(0) { $0 + $1.count } == 100, "\(folds)")
    }
}
