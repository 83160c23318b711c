import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

@Suite(.serialized) struct CommandLineTests {
    static let subcommands = ["list", "show", "top", "diff", "export", "flamegraph", "symbolicate", "watch", "validate"]

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

    /// Help reads well at 80 columns and at 200: prose is wrapped by the argument parser to the
    /// width (a line breaks only where the next word would not fit; no hard breaks left from the
    /// source), no line passes the width, and examples are never cut in two.
    @Test func helpIsWrappedCleanlyAtAnyWidth() throws {
        let fixture = try Fixture(withDemoReports: false)
        for command in [[]] + Self.subcommands.map({ [$0] }) {
            var examples: [String: Set<String>] = [:]
            for columns in [80, 200] {
                let result = try Hangwatch.run(command + ["--help"], cache: fixture.cache, environment: ["COLUMNS": "\(columns)"])
                #expect(result.status == 0, "\(command)")
                let lines = result.lines
                #expect(lines.allSatisfy { $0.count <= columns }, "\(command) at \(columns): \(lines.filter { $0.count > columns })")
                for (line, next) in zip(lines, lines.dropFirst()) where Self.isProse(line) && Self.isProse(next) {
                    let word = next.prefix { $0 != " " }
                    #expect(
                        line.count + 1 + word.count >= columns,
                        "\(command) at \(columns): a ragged break after \"\(line)\" (\"\(word)\" fits)")
                }
                examples[String(columns)] = Set(lines.filter { $0.hasPrefix("  hangwatch ") })
            }
            #expect(examples["80"] == examples["200"], "\(command): examples wrapped at 80 columns")
            #expect(examples["80"]?.isEmpty == false, "\(command)")
        }
    }

    /// A line of the overview's paragraphs: at the margin, not a heading or a section's first line.
    static func isProse(_ line: String) -> Bool {
        guard let first = line.first, first != " " else { return false }
        return !line.hasSuffix(":") && !line.hasPrefix("USAGE:") && !line.contains("  ")
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

    /// Every error of every command begins with `hangwatch: `, the argument parser's usage errors
    /// too (never its `Error: `); the agent's command-line errors begin with `hangwatchd: ` and are
    /// exit 2, as docs/agent.md says.
    @Test func everyErrorBeginsWithTheToolsName() throws {
        let fixture = try Fixture(withDemoReports: false)
        func expectPrefixed(_ result: CommandResult, _ tool: String, _ what: String) {
            #expect(result.errorLines.first?.hasPrefix(tool + ": ") == true, "\(what): \(result.errors)")
            #expect(!result.errorLines.contains { $0.hasPrefix("Error:") }, "\(what): \(result.errors)")
        }
        for command in [[]] + (Self.subcommands + ["dump"]).map({ [$0] }) {
            let unknown = try Hangwatch.run(command + ["--frobnicate"], cache: fixture.cache)
            #expect(unknown.status == 2, "\(command): \(unknown.status)")
            expectPrefixed(unknown, "hangwatch", "\(command) --frobnicate")
        }
        // Values the parser refuses, values a command's checks refuse, and failures while running.
        for arguments in [
            ["show", "--frames", "x"], ["list", "--limit", "0"], ["watch", "--interval", "100"], ["dump", "0"], ["diff", "1.0", "1.0"],
            ["list", "--since", "soon"], ["list", "--dir", fixture.root + "/nope"], ["show", fixture.root + "/hang-x.json"],
            ["validate", fixture.root + "/nope"],
        ] {
            let result = try Hangwatch.run(arguments, cache: fixture.cache)
            #expect(result.status != 0, "\(arguments)")
            if arguments[0] == "validate" {
                // validate reports each path on standard output, one line each, and nothing as an error.
                #expect(result.errors.isEmpty || result.errorLines.allSatisfy { $0.hasPrefix("hangwatch: ") }, "\(result.errors)")
            } else {
                expectPrefixed(result, "hangwatch", "\(arguments)")
            }
        }
        for arguments in [["--frobnicate"], ["--config"]] {
            let agent = try Hangwatch.run(arguments, cache: fixture.cache, executable: BuiltExecutable.path("hangwatchd"))
            #expect(agent.status == 2, "hangwatchd \(arguments): \(agent.status) \(agent.errors)")
            expectPrefixed(agent, "hangwatchd", "hangwatchd \(arguments)")
        }
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
        #expect(far.errors.contains("the commands are list, show, top, diff, export, flamegraph, symbolicate, watch, dump, validate"), "\(far.errors)")
        let option = try fixture.hangwatch(["list", "--sinse", "1h"])
        #expect(option.status == 2)
        #expect(option.errors.contains("Did you mean '--since'?"), "\(option.errors)")
    }
}
