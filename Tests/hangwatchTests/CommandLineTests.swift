import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite(.serialized) struct CommandLineTests {
    static let subcommands = ["list", "show", "top", "export", "flamegraph", "symbolicate", "watch", "validate"]

    @Test func everyCommandHasHelpWithAnExample() throws {
        let fixture = try Fixture(withDemoReports: false)
        for command in Self.subcommands {
            let result = try Hangwatch.run([command, "--help"], cache: fixture.cache)
            #expect(result.status == 0, "\(command)")
            #expect(result.output.contains("Examples:"), "\(command)")
            #expect(result.output.contains("hangwatch \(command)"), "\(command)")
        }
        let top = try Hangwatch.run(["--help"], cache: fixture.cache)
        #expect(top.output.contains("Exit status: 0 ok, 1 nothing matched, 2 usage error, 3 bad input"))
    }

    @Test func shellCompletionsCanBeGenerated() throws {
        let fixture = try Fixture(withDemoReports: false)
        for shell in ["bash", "zsh", "fish"] {
            let result = try Hangwatch.run(["--generate-completion-script", shell], cache: fixture.cache)
            #expect(result.status == 0, "\(shell)")
            for command in Self.subcommands { #expect(result.output.contains(command), "\(shell): \(command)") }
        }
    }

    @Test func usageErrorsAreExitTwo() throws {
        let fixture = try Fixture(withDemoReports: false)
        #expect(try Hangwatch.run(["frobnicate"], cache: fixture.cache).status == 2)
        #expect(try Hangwatch.run(["show", "--frames", "x"], cache: fixture.cache).status == 2)
        #expect(try Hangwatch.run(["top", "--color", "sometimes"], cache: fixture.cache).status == 2)
    }

    /// The monitor writes while the CLI reads: files appear only whole (written aside, renamed into
    /// place), so no read ever sees half a report.
    @Test func readingWhileReportsAreBeingWritten() throws {
        let fixture = try Fixture()
        let template = try #require(try DemoReports.reports().first)
        let store = ReportStore(directory: fixture.directory)
        let writer = Thread {
            for index in 0..<300 {
                var report = template
                report.id = String(format: "20300101T%09dZ-load-1-%d", index, index)
                _ = try? store.write(report)
            }
        }
        writer.start()
        var runs = 0
        var counts: [Int] = []
        while runs < 6 {
            let result = try fixture.hangwatch("list", "--json")
            #expect(result.status == 0)
            #expect(result.errors.isEmpty, "a reader saw a partial file: \(result.errors)")
            counts.append((try? HangReport.makeDecoder().decode([ReportSummary].self, from: Data(result.output.utf8)).count) ?? -1)
            runs += 1
        }
        #expect(counts.allSatisfy { $0 >= 5 })
        #expect(counts == counts.sorted(), "\(counts)")
    }

    /// A mistyped command is named, with the one meant; it is not taken for `list`'s argument.
    @Test func aMistypedCommandGetsASuggestion() throws {
        let fixture = try Fixture(withDemoReports: false)
        let typo = try fixture.hangwatch(["lsit"])
        #expect(typo.status == 2)
        #expect(typo.errors.contains("unknown command 'lsit'. Did you mean 'list'?"), "\(typo.errors)")
        let far = try fixture.hangwatch(["frobnicate"])
        #expect(far.status == 2)
        #expect(far.errors.contains("the commands are list, show, top, export, flamegraph, symbolicate, watch, validate"), "\(far.errors)")
        let option = try fixture.hangwatch(["list", "--sinse", "1h"])
        #expect(option.status == 2)
        #expect(option.errors.contains("Did you mean '--since'?"), "\(option.errors)")
    }
}
