import Foundation
import HangWatchTestSupport
import Testing

/// The benchmark harness runs, prints its figures and judges them against its goals. (Whether a
/// goal is met is the benchmark's business, never a test's: these check that the harness measures,
/// judges what it measured, says what it could not run, and that the docs' goals are its own.)
@Suite(.serialized) struct BenchHarnessTests {
    static let bench = BuiltExecutable.path("hangwatch-bench")

    /// Runs the built bench with `arguments` (and `environment` changed); a quick run of two
    /// figures takes about a minute on a debug build.
    static func run(_ arguments: [String], environment: [String: String?] = [:]) throws -> CommandResult {
        try #require(FileManager.default.isExecutableFile(atPath: bench), "build the benchmark first: swift build")
        let result = try ExecutableRun.run(bench, arguments, environment: environment, timeout: 600)
        try #require(!result.timedOut, "hangwatch-bench \(arguments) did not finish in 10 minutes: \(result.output)")
        return result
    }

    @Test func theHarnessMeasuresJudgesAndPrintsAFigure() throws {
        let markdown = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-\(getpid()).md"
        defer { try? FileManager.default.removeItem(atPath: markdown) }
        let result = try Self.run(["--quick", "--figures", "3,6", "--markdown", markdown])
        let text = result.output
        // 0: every goal met; 1: one missed beyond its noise (a debug build, quick, on a busy
        // machine may): both are verdicts, anything else is the harness failing.
        #expect(result.status == 0 || result.status == 1, "\(result.errors)")
        let wakeups = text.split(separator: "\n").first { $0.contains("watchdog context switches") }
        #expect(wakeups?.split(separator: " ").contains { Int($0) != nil } == true, "\(text)")
        #expect(text.contains("detection delay past the threshold"))
        let table = try String(contentsOfFile: markdown, encoding: .utf8)
        #expect(table.hasPrefix("| # | figure | measured | goal |"))
        // The header, its rule, figure 3 and figure 6's four lines (the second with the pool
        // starved, the third asked for thread dumps, the fourth what they came to: every request
        // answered, served or refused).
        #expect(table.split(separator: "\n").count == 7)
        #expect(text.contains("the pool starved meanwhile"))
        let dumps = try #require(table.split(separator: "\n").first { $0.contains("those dumps: served, refused") }, "\(table)")
        let counts = dumps.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        let values = counts.count > 2 ? counts[2].split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } : []
        #expect(values.count == 3 && values.reduce(0, +) == 50 && values[2] == 0, "\(dumps)")

        // Every goal of figures 3 and 6 judged (but the minute a quick run does not wait), and the
        // summary's verdict is the exit status's: the goals it names missed are the table's.
        let summary = try #require(text.split(separator: "\n").first { $0.hasPrefix("goals: ") }, "\(text)")
        #expect(summary.hasPrefix("goals: 5 judged"), "\(summary)")
        #expect(text.contains("skipped: 6-dump-answers-left: --quick does not wait the minute"))
        let missed = text.split(separator: "\n").filter { $0.hasPrefix("  MISSED: ") }.map { String($0.dropFirst(10).prefix { $0 != " " }) }
        let marked = text.split(separator: "\n").filter { $0.hasSuffix("  MISSED") }.count
        #expect(missed.count == marked, "\(text)")
        if result.status == 0 {
            #expect(missed.isEmpty && text.contains("hangwatch-bench: every goal judged was met"), "\(text)")
        } else {
            #expect(!missed.isEmpty && text.contains("hangwatch-bench: FAILED (missed: " + missed.joined(separator: ", ")), "\(text)")
        }
    }

    /// A figure that cannot run fails the run, naming it and why, unless it is skipped by name.
    @Test func aFigureThatCannotRunFailsTheRunUnlessSkipped() throws {
        let missing: [String: String?] = ["HANGWATCH_CLI": "/nonexistent/hangwatch"]
        let failed = try Self.run(["--quick", "--figures", "9"], environment: missing)
        #expect(failed.status == 1, "\(failed.output)")
        #expect(failed.output.contains("COULD NOT RUN: 9: HANGWATCH_CLI=/nonexistent/hangwatch is not an executable"), "\(failed.output)")
        #expect(failed.output.contains("hangwatch-bench: FAILED (could not run: 9)"), "\(failed.output)")

        let skipped = try Self.run(["--quick", "--figures", "9", "--skip", "9"], environment: missing)
        #expect(skipped.status == 0, "\(skipped.output)")
        #expect(skipped.output.contains("skipped: 9: asked to (--skip)"), "\(skipped.output)")
        #expect(skipped.output.contains("hangwatch-bench: every goal judged was met"), "\(skipped.output)")
    }

    @Test func anUnknownFigureOrGoalIsAUsageError() throws {
        for (arguments, name) in [(["--quick", "--figures", "99"], "no figure 99"), (["--quick", "--skip", "1-no-such-goal"], "--skip: no figure or goal 1-no-such-goal"),
            (["--quick", "--help"], "unknown argument --help")] {
            let result = try Self.run(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.errors.contains("hangwatch-bench: " + name), "\(result.errors)")
        }
    }

    /// docs/performance.md's table of goals is the one Goals.swift prints (`make bench-goals`
    /// writes it there), marker lines included.
    @Test func theDocsGoalsAreTheBenchsGoals() throws {
        let result = try Self.run(["--goals-markdown"])
        #expect(result.status == 0)
        let printed = result.output
        let lines = printed.split(separator: "\n", omittingEmptySubsequences: false)
        let begin = try #require(lines.first.map(String.init)), end = try #require(lines.dropLast().last.map(String.init))
        #expect(begin.hasPrefix("<!-- goals:") && end.hasPrefix("<!-- end of goals"))
        #expect(lines.count > 40, "\(printed)")
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/performance.md").path
        let text = try String(contentsOfFile: docs, encoding: .utf8)
        let start = try #require(text.range(of: begin), "docs/performance.md has no goals marker: run make bench-goals")
        let stop = try #require(text.range(of: end, range: start.upperBound..<text.endIndex), "docs/performance.md's goals have no end marker")
        let block = String(text[start.lowerBound..<stop.upperBound]) + "\n"
        #expect(block == printed, "docs/performance.md's goals differ from Goals.swift's: run make bench-goals")
    }
}
