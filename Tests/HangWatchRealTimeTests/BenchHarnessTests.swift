import Foundation
import HangWatchTestSupport
import Testing

/// The benchmark harness runs and prints its figures. (Timing goals are the benchmark's business,
/// never a test's: this only checks the harness works.)
@Suite(.serialized) struct BenchHarnessTests {
    @Test func theHarnessMeasuresAndPrintsAFigure() throws {
        let bench = BuiltExecutable.path("hangwatch-bench")
        try #require(FileManager.default.isExecutableFile(atPath: bench), "build the benchmark first: swift build")
        let markdown = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-\(getpid()).md"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: bench)
        process.arguments = ["--quick", "--figures", "3,6", "--markdown", markdown]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
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
    }
}
