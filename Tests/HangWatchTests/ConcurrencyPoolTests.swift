import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// The pool source end to end, in a child process (`hangwatch-faults pool`) whose only monitor
/// watches scopes on its main thread: only a starved cooperative pool can make a report.
@Suite struct ConcurrencyPoolTests {
    struct ChildRun: Decodable {
        var threadIDs: [Int32]
        var spawnedMs: Double
        var firstEndMs: Double
        var lastEndMs: Double
        var poolThreadIDs: [Int32]
        var writerThreadIDs: [Int32]
        var reportsWritten: Int
        var probes: Int
        var starvations: Int
    }

    func run(_ arguments: [String], directory: ReportDirectory) throws -> ChildRun {
        let result = try ExecutableRun.run(
            BuiltExecutable.path("hangwatch-faults"), ["pool", "--reports", directory.path] + arguments, timeout: 60)
        try #require(result.status == 0 && !result.timedOut, "\(result.errors)")
        let line = try #require(result.lines.last)
        return try JSONDecoder().decode(ChildRun.self, from: Data(line.utf8))
    }

    @Test func twiceAsManyBlockingTasksAsCoresGiveOneReportHoldingEveryPoolThread() throws {
        let directory = ReportDirectory()
        let child = try run(["--mode", "block", "--seconds", "0.9"], directory: directory)
        let reports = directory.reports()
        try #require(reports.count == 1, "\(reports.map(\.id))")
        let report = reports[0]
        #expect(report.source == "concurrency-pool")
        #expect(report.outcome == .recovered)
        #expect(child.reportsWritten == 1 && child.starvations == 1)
        #expect(ReportValidator().problems(report).isEmpty, "\(ReportValidator().problems(report))")

        let threads = try #require(report.threads)
        let reported = Set(threads.map(\.tid))
        // Every worker of the pool (named like one and not started by a task) is in the report,
        // with its stack; the threads the tasks started, named like the pool, are not.
        let workers = Set(child.poolThreadIDs).subtracting(child.writerThreadIDs)
        #expect(workers.isSubset(of: reported), "workers \(workers.sorted()), reported \(reported.sorted())")
        #expect(Set(child.threadIDs).isSubset(of: reported))
        #expect(reported.isDisjoint(with: child.writerThreadIDs))
        #expect(threads.allSatisfy { $0.name == "oot.default-qos" })

        // Each thread is captured once, when first seen: the threads running the first tasks (an
        // `usleep` and a pipe `read`) were blocked in them, and their stacks show the call. (A
        // worker idle at detection may run a later task: it is reported idle, as it was.)
        let blocked = threads.filter { $0.verdict == "blocked" }
        #expect(blocked.count >= 2, "\(threads)")
        #expect(Set(blocked.compactMap(\.syscall)).isSuperset(of: ["clock_nanosleep", "read"]), "\(blocked)")
        let blocking = ["usleep", "nanosleep", "clock_nanosleep", "read"]
        for thread in blocked {
            #expect(child.threadIDs.contains(thread.tid))
            let symbols = thread.stack.flatMap(report.stack(at:)).map { report.frames(of: $0).compactMap(\.symbol) } ?? []
            #expect(symbols.contains { symbol in blocking.contains { symbol.contains($0) } }, "tid \(thread.tid): \(symbols)")
        }
        // The probe's exact wait: from its enqueue (within a threshold after the tasks began, the
        // probe period) until the pool ran it, once the last tasks were running.
        let starved = child.lastEndMs - child.spawnedMs
        #expect(report.durationMs <= starved + 100, "\(report.durationMs) ms for \(starved) ms of blocking")
        #expect(report.durationMs >= child.firstEndMs - child.spawnedMs - report.thresholdMs - 150, "\(report.durationMs) ms")
        #expect(child.probes >= 2)
    }

    @Test func aPoolKeptBusyWithShortTasksGivesNoReport() throws {
        let directory = ReportDirectory()
        let child = try run(["--mode", "healthy", "--seconds", "2"], directory: directory)
        #expect(directory.reports().isEmpty)
        #expect(child.starvations == 0 && child.reportsWritten == 0)
        // Ten probes in 2.6 s at 200 ms, give or take the scheduling of a loaded machine.
        #expect(child.probes >= 5, "\(child.probes) probes")
    }
}
