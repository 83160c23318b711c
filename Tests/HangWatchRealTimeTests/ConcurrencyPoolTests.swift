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
        /// From the probe the tasks were spawned after to the last spawn (the next probe is a
        /// threshold, 200 ms, after that one).
        var spawnWindowMs: Double?
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
        // The scenario's premise, not the monitor's behaviour: every task was queued before the
        // next probe (one between them would rightly cut the starvation in two).
        try #require((child.spawnWindowMs ?? .infinity) < 150, "the tasks took \(child.spawnWindowMs ?? -1) ms to spawn")
        let reports = directory.reports()
        try #require(reports.count == 1, "\(reports.map { "\($0.id): \($0.source), \($0.durationMs) ms" })")
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
        // A thread a task started is left out by its complete stack (no frame in libdispatch). One
        // whose stack could not be read whole when it was captured proves nothing and is kept, as
        // the report's rule says (`isStartedByPoolCode`): a writer a queued task starts mid-hang
        // can be caught at its first instant (seen once, in an idle clean-clone run). Never one
        // with a complete stack.
        for writer in threads where child.writerThreadIDs.contains(writer.tid) {
            let stack = writer.stack.flatMap(report.stack(at:))
            #expect(stack == nil || stack?.truncated == true, "a thread a task started, its stack complete, was reported: \(writer)")
        }
        #expect(reported.intersection(child.writerThreadIDs).count < child.writerThreadIDs.count, "every writer kept: \(threads)")
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
            // Each names what it waits on: the pipe (whose write end this process holds) or the
            // sleep of 0.9 s.
            if thread.syscall == "read" {
                #expect(thread.waitsFor?.kind == "pipe" && thread.waitsFor?.endpoints?.first?.peers?.first?.pid != nil, "\(thread)")
            } else if thread.syscall == "clock_nanosleep" {
                #expect(thread.waitsFor?.kind == "sleep" && thread.waitsFor?.sleep?.requestedMs == 900, "\(thread)")
            }
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

    struct HoldRun: Decodable {
        struct Step: Decodable {
            var startUnixMs: Double
            var endUnixMs: Double
            /// How long the step's thread ran on a CPU (its own CPU clock).
            var onCPUMs: Double
        }
        var holds: [Step]
        var reportsWritten: Int
        var starvations: Int
        var threadName: String?
    }

    /// One task holds its pool thread 0.8 s in `usleep`, then 0.8 s computing, while the rest of
    /// the pool is free: a `pool-job` report of that thread for each step, naming its function and
    /// its async caller, lasting what the step measured (the edges are looks 50 ms apart: each
    /// within half of that, plus a margin for a loaded machine).
    @Test func oneJobBlockingOrComputingOnAPoolThreadGetsAReportOfThatThread() throws {
        let directory = ReportDirectory()
        let child = try runStepping(HoldRun.self, mode: "hold", seconds: "0.8", directory: directory)
        #expect(child.starvations == 0)
        let reports = directory.reports().sorted { $0.startedAt < $1.startedAt }
        try #require(reports.count == 2, "\(reports.map(\.id))")
        try #require(child.holds.count == 2)
        for (report, (step, function)) in zip(reports, zip(child.holds, ["holdPoolThreadSleeping", "holdPoolThreadComputing"])) {
            try expectReport(report, of: step, naming: function, calledBy: "poolJobRoute")
        }
        #expect(reports[0].context.verdict == .blocked && reports[0].context.blockedIn == "clock_nanosleep")
        expectComputingVerdict(reports[1], of: child.holds[1])
    }

    /// The same task at priority `.high`: it runs on the user-initiated pool's workers, which the
    /// probe never measures; each step gets its report all the same, of that thread.
    @Test func aHighPriorityTaskHoldingItsPoolThreadGetsTheSameReports() throws {
        let directory = ReportDirectory()
        let child = try runStepping(HoldRun.self, mode: "hold", seconds: "0.8", directory: directory, ["--priority", "high"])
        #expect(child.threadName == "r-initiated-qos", "\(child.threadName ?? "")")
        #expect(child.starvations == 0)
        let reports = directory.reports().sorted { $0.startedAt < $1.startedAt }
        try #require(reports.count == 2, "\(reports.map(\.id))")
        try #require(child.holds.count == 2)
        for (report, (step, function)) in zip(reports, zip(child.holds, ["holdPoolThreadSleeping", "holdPoolThreadComputing"])) {
            try expectReport(report, of: step, naming: function, calledBy: "poolJobRoute", threadName: "r-initiated-qos")
        }
        #expect(reports[0].context.verdict == .blocked && reports[0].context.blockedIn == "clock_nanosleep")
        expectComputingVerdict(reports[1], of: child.holds[1])
    }

    /// Runs `hangwatch-faults pool --mode <mode>`, whose last line is what it measured.
    func runStepping<Run: Decodable>(
        _ type: Run.Type, mode: String, seconds: String, directory: ReportDirectory, _ extra: [String] = []
    ) throws -> Run {
        let result = try ExecutableRun.run(
            BuiltExecutable.path("hangwatch-faults"), ["pool", "--reports", directory.path, "--mode", mode, "--seconds", seconds] + extra,
            timeout: 60)
        try #require(result.status == 0 && !result.timedOut, "\(result.errors)")
        return try JSONDecoder().decode(Run.self, from: Data(try #require(result.lines.last).utf8))
    }

    /// A `pool-job` report of one step that held its pool thread: the step's thread, lasting what
    /// the step measured (the edges are looks 50 ms apart: each within half of that, plus a margin
    /// for a loaded machine), naming `function` and, after it, its async caller read from the
    /// task's chain.
    func expectReport(
        _ report: HangReport, of step: HoldRun.Step, naming function: String, calledBy asyncCaller: String,
        threadName: String = "oot.default-qos"
    ) throws {
        #expect(report.source == "pool-job")
        #expect(report.outcome == .recovered)
        // One job, proven by the task's id at every look.
        #expect(report.kind?.name == "oneJob" && report.kind?.reason.contains("the same task (id ") == true, "\(String(describing: report.kind))")
        #expect(report.thread.name == threadName)
        #expect(ReportValidator().problems(report).isEmpty, "\(ReportValidator().problems(report))")
        let measured = step.endUnixMs - step.startUnixMs
        // An edge is known to the looks around it. On a busy machine the watch's looks come late
        // (the CI run beside the tools' build once read 675 ms for 800): the margin is then the
        // widest gap the report's own samples show, plus the same 25 ms.
        let offsets = [0] + report.samples.map(\.offsetMs).sorted() + [report.durationMs]
        let widestGap = zip(offsets, offsets.dropFirst()).map { $1 - $0 }.max() ?? 0
        let margin = max(75, widestGap + 25)
        #expect(abs(report.durationMs - measured) <= margin, "\(function): \(report.durationMs) ms reported, \(measured) ms measured, looks up to \(widestGap) ms apart")
        #expect(abs(report.startedAt.timeIntervalSince1970 * 1000 - step.startUnixMs) <= margin, "\(function) start")
        let frames = try #require(report.heaviestStack?.frames)
        let symbols = frames.map { $0.symbol ?? "" }
        let own = try #require(symbols.firstIndex { $0.contains(function) }, "\(symbols)")
        let caller = try #require(symbols.firstIndex { $0.contains(asyncCaller) }, "\(symbols)")
        #expect(caller > own && frames[caller].async == true, "\(function): \(asyncCaller) at \(caller), \(symbols)")
    }

    /// The verdict of a step that spins, read against its thread's own CPU clock. A spin never
    /// sleeps: it is on a CPU or waiting for one the whole step, so the report says computing when
    /// it ran most of the time, and starved (the machine's fault, not the code's: beside a busy CPU)
    /// when it waited at least as long as it ran. The report measures from its detection, a
    /// threshold (200 ms) into the 800 ms step: over the whole step, at least 70 % on a CPU leaves
    /// more than half of the report's part, at most 30 % less than half; between, either.
    func expectComputingVerdict(_ report: HangReport, of step: HoldRun.Step) {
        let share = step.onCPUMs / (step.endUnixMs - step.startUnixMs)
        let verdict = report.context.verdict
        let said = "\(String(describing: verdict)): on a CPU \(Int(step.onCPUMs)) ms of \(Int(step.endUnixMs - step.startUnixMs)), "
            + "the report's ratios \(report.context.onCpuRatio ?? -1) on a CPU, \(report.context.runQueueRatio ?? -1) waiting for one"
        if share >= 0.7 {
            #expect(verdict == .computing, "\(said)")
        } else if share <= 0.3 {
            #expect(verdict == .starved, "\(said)")
        } else {
            #expect(verdict == .computing || verdict == .starved, "\(said)")
        }
    }

    struct RestRun: Decodable {
        var holds: [HoldRun.Step]
        var restedAtUnixMs: [Double]
        var workersLeft: Int
        var workersBeforeFirstTask: Int
        var rests: Int
        var reportsWritten: Int
        var starvations: Int
    }

    /// The pool watch rests while every pool thread is idle (no probes, no looks) and the
    /// runtime's enqueue hooks wake it: a task started on a pool never used (the watch dormant), a task resumed from
    /// `Task.sleep` after the watch went back to rest, and a task computing on a fresh worker once
    /// libdispatch let the idle ones exit, each hold their pool thread 0.6 s, and each step gets
    /// its report as on a watch that never rested. (Without the attach jobs queued ahead of the
    /// waking job, the last one got none: its worker could not be signalled.)
    @Test func aRestingPoolWatchIsWokenByAJobEnqueuedAndByASleepThatEnds() throws {
        let directory = ReportDirectory()
        let child = try runStepping(RestRun.self, mode: "rest", seconds: "0.6", directory: directory)
        // It rested before the first task, again before the sleeping task, and again while it slept.
        try #require(child.holds.count == 4 && child.restedAtUnixMs.count == 4)
        #expect(child.workersLeft == 0, "the idle workers did not exit: \(child.workersLeft) left")
        // The first rest was the dormant start: no probe, so no pool worker (and no libdispatch
        // worker-pool monitor) before the first task.
        #expect(child.workersBeforeFirstTask == 0, "\(child.workersBeforeFirstTask) pool workers before the first task")
        #expect(child.restedAtUnixMs.allSatisfy { $0 > 0 }, "\(child.restedAtUnixMs)")
        #expect(child.restedAtUnixMs[0] <= child.holds[0].startUnixMs)
        #expect(child.restedAtUnixMs[2] < child.holds[2].startUnixMs, "rested at \(child.restedAtUnixMs[2]), woke for \(child.holds[2].startUnixMs)")
        #expect(child.rests >= 3 && child.starvations == 0)

        let reports = directory.reports().sorted { $0.startedAt < $1.startedAt }
        try #require(reports.count == 4, "\(reports.map(\.id))")
        let functions = ["holdPoolThreadSleeping", "holdPoolThreadComputing", "holdPoolThreadSleeping", "holdPoolThreadComputing"]
        let callers = ["poolJobRoute", "poolJobRoute", "holdPoolThreadAfterSleeping", "runPoolRest"]
        for (index, report) in reports.enumerated() {
            try expectReport(report, of: child.holds[index], naming: functions[index], calledBy: callers[index])
        }
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
