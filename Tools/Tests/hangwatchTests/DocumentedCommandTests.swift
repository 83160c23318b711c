import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

import HangWatchReading

/// The README and docs run as printed and print what they show: every `$ hangwatch …` command in
/// them runs, as a shell would run it, from a directory where `make demo` has left its reports (no
/// --dir needed there), on the real demo's reports; the sample printed under it keeps the real
/// output's layout (columns, headers, line kinds, time formats); and the samples agree with each
/// other as real outputs do (the signature `show` prints is the one `list` and `top` print for
/// that hang, with the same time and duration).
@Suite(.serialized) struct DocumentedCommandTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized.path

    /// One documented run: a `$ hangwatch …` line in a fenced block, and the lines under it up to
    /// the next `$` line or the block's end (its sample output).
    struct Run {
        var file: String
        var command: String
        var sample: [String]
        /// `list`, `top`, `show`, … (the word after `hangwatch`).
        var subcommand: String { command.split(separator: " ").dropFirst().first.map(String.init) ?? "" }
    }

    static func documentedRuns() throws -> [Run] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: repository + "/docs").filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        var runs: [Run] = []
        for file in ["README.md"] + docs.sorted() {
            var inBlock = false
            var current: Run?
            func finish() {
                if var run = current {
                    while run.sample.last?.isEmpty == true { run.sample.removeLast() }
                    runs.append(run)
                }
                current = nil
            }
            for line in try String(contentsOfFile: repository + "/" + file, encoding: .utf8).components(separatedBy: "\n") {
                if line.hasPrefix("```") {
                    finish()
                    inBlock.toggle()
                } else if inBlock, line.hasPrefix("$ ") {
                    finish()
                    if line.hasPrefix("$ hangwatch ") { current = Run(file: file, command: String(line.dropFirst(2)), sample: []) }
                } else if inBlock {
                    current?.sample.append(line)
                }
            }
        }
        return runs
    }

    /// Runs `command` with /bin/sh (so quotes work as printed) in a directory holding a copy of
    /// the demo's reports as `./hangwatch-reports`, with `hangwatch` on the PATH.
    final class Shell {
        let fixture: Fixture
        let here: String
        let bin: String

        init() throws {
            fixture = try Fixture()
            here = fixture.root + "/here"
            bin = fixture.root + "/bin"
            try FileManager.default.createDirectory(atPath: here, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: fixture.directory, toPath: here + "/hangwatch-reports")
            try FileManager.default.createSymbolicLink(atPath: bin + "/hangwatch", withDestinationPath: Hangwatch.binary)
        }

        func run(_ command: String) throws -> CommandResult {
            let path = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            return try Hangwatch.run(["-c", command], cache: fixture.cache, environment: ["PATH": path], executable: "/bin/sh", workingDirectory: here)
        }
    }

    @Test func everyDocumentedCommandRunsAsPrintedAndKeepsItsSamplesLayout() throws {
        let runs = try Self.documentedRuns()
        #expect(runs.count >= 5, "the README's examples were not found")
        let shell = try Shell()
        for run in runs {
            let result = try shell.run(run.command)
            #expect(result.status == 0, "\(run.file): `\(run.command)` exited \(result.status): \(result.errors)")
            #expect(!result.output.isEmpty, "\(run.file): `\(run.command)` printed nothing")
            guard !run.sample.isEmpty else { continue }
            let real = result.lines
            let what = "\(run.file): `\(run.command)`"
            switch run.subcommand {
            case "list":
                let (shown, printed) = (try SampleOutput.list(run.sample), try SampleOutput.list(real))
                #expect(shown.header == printed.header, "\(what): header \(shown.header), real \(printed.header)")
                #expect(shown.rows.count == printed.rows.count, "\(what): \(shown.rows.count) rows, real \(printed.rows.count)")
                #expect(shown.dated == printed.dated, "\(what): times with their day \(shown.dated), real \(printed.dated)")
            case "top":
                let (shown, printed) = (try SampleOutput.top(run.sample), try SampleOutput.top(real))
                #expect(shown.count == printed.count, "\(what): \(shown.count) groups, real \(printed.count)")
                #expect(shown.map { $0.signature == nil } == printed.map { $0.signature == nil }, "\(what): groups by signature and by label")
                // Groups by a label: the same values (ties in time may come in either order).
                #expect(Set(shown.filter { $0.signature == nil }.map(\.key)) == Set(printed.filter { $0.signature == nil }.map(\.key)), "\(what)")
                #expect(shown.map(\.frames.count) == printed.map(\.frames.count), "\(what): frames per group")
            case "show":
                let (shown, printed) = (try SampleOutput.show(run.sample), try SampleOutput.show(real))
                #expect(shown.heads == printed.heads, "\(what): lines \(shown.heads), real \(printed.heads)")
            default:
                Issue.record("\(what): a sample of a command this test cannot read; teach SampleOutput its layout")
            }
        }
    }

    /// The README's samples were printed by one run: `show latest` is the newest row of `list`
    /// (its signature, start and duration), every group of `top` is the rows of `list` with its
    /// signature, the hangs `list --label` prints are among `list`'s, `top --by` counts every hang
    /// once and gives the label's group as many as `list --label` lists, and `show` prints the
    /// label when its hang is one of them. The real outputs of the same commands agree the same way.
    @Test func theSamplesAgreeWithEachOtherAsRealOutputsDo() throws {
        let runs = try Self.documentedRuns().filter { $0.file == "README.md" && !$0.sample.isEmpty }
        let shell = try Shell()
        let printed = try runs.map { try shell.run($0.command).lines }
        try Self.expectConsistent(runs, outputs: runs.map(\.sample), "the README's samples")
        try Self.expectConsistent(runs, outputs: printed, "the real outputs")
    }

    static func expectConsistent(_ runs: [Run], outputs: [[String]], _ which: String) throws {
        func output(_ predicate: (Run) -> Bool, _ name: String) throws -> (Run, [String]) {
            let found = runs.firstIndex(where: predicate)
            let index = try #require(found, "\(which): no `\(name)` among \(runs.map(\.command))")
            return (runs[index], outputs[index])
        }
        let all = try SampleOutput.list(try output({ $0.subcommand == "list" && !$0.command.contains("--label") }, "hangwatch list").1)
        let show = try SampleOutput.show(try output({ $0.subcommand == "show" && $0.command.contains("latest") }, "hangwatch show latest").1)
        let top = try SampleOutput.top(try output({ $0.subcommand == "top" && !$0.command.contains("--by") }, "hangwatch top").1)
        let (labelRun, labelOutput) = try output({ $0.subcommand == "list" && $0.command.contains("--label") }, "hangwatch list --label")
        let labelled = try SampleOutput.list(labelOutput)
        let byLabel = try SampleOutput.top(try output({ $0.subcommand == "top" && $0.command.contains("--by") }, "hangwatch top --by").1)

        let newest = try #require(all.rows.first, "\(which): list shows no hang")
        #expect(show.signature.hasPrefix(newest.signature), "\(which): show latest's signature \(show.signature), list's newest \(newest.signature)")
        #expect(show.started.contains(" \(newest.time.suffix(8))."), "\(which): show latest started \(show.started), list's newest \(newest.time)")
        #expect(show.lasted == newest.duration, "\(which): show latest lasted \(show.lasted), list's newest \(newest.duration)")
        for group in top {
            let signature = try #require(group.signature, "\(which): a top group without a signature: \(group.key)")
            let rows = all.rows.filter { $0.signature == signature }
            #expect(rows.count == group.count, "\(which): top's sig \(signature) has \(group.count) hangs, list \(rows.count)")
            if group.count == 1, let row = rows.first {
                #expect(row.duration == group.max, "\(which): sig \(signature): top's max \(group.max), list's \(row.duration)")
                #expect(group.first.hasSuffix(row.time.suffix(8)), "\(which): sig \(signature): top's first \(group.first), list's \(row.time)")
            }
        }
        let key = (labelRun.command.components(separatedBy: "--label ").last ?? "").trimmingCharacters(in: CharacterSet(charactersIn: "' "))
        #expect(!labelled.rows.isEmpty, "\(which): `\(labelRun.command)` lists nothing")
        for row in labelled.rows {
            #expect(all.rows.contains { ($0.time, $0.pid, $0.duration, $0.signature) == (row.time, row.pid, row.duration, row.signature) }, "\(which): \(row) is not in list")
        }
        #expect(byLabel.map(\.count).reduce(0, +) == all.rows.count, "\(which): top --by counts \(byLabel.map(\.count)), list \(all.rows.count) hangs")
        #expect(byLabel.first { $0.key == key }?.count == labelled.rows.count, "\(which): top --by's group \(key), list --label \(labelled.rows.count) hangs")
        let latestLabelled = labelled.rows.contains { $0.signature == newest.signature && $0.time == newest.time }
        #expect((show.fields["labels"]?.contains(key) ?? false) == latestLabelled, "\(which): show latest's labels \(show.fields["labels"] ?? "(none)")")
    }

    /// Every table in the README and docs is whole: a header, its `|---|` line, then rows (a
    /// paragraph that lands between a table's header and its rows breaks it: the README's
    /// Repository table once had one).
    @Test func everyTableHasItsHeaderThenRows() throws {
        let docs = try FileManager.default.contentsOfDirectory(atPath: Self.repository + "/docs").filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        for file in ["README.md", "CHANGELOG.md"] + docs.sorted() {
            let lines = try String(contentsOfFile: Self.repository + "/" + file, encoding: .utf8).components(separatedBy: "\n")
            for (index, line) in lines.enumerated() where line.hasPrefix("|---") || line.hasPrefix("| ---") {
                let header = index > 0 ? lines[index - 1] : ""
                let next = index + 1 < lines.count ? lines[index + 1] : ""
                #expect(header.hasPrefix("|"), "\(file):\(index): a table without its header")
                #expect(next.hasPrefix("|"), "\(file):\(index + 2): a table's header followed by \"\(next.prefix(60))\", not a row")
            }
        }
    }

    /// Where the reports are read from is said once, in the same words, by `--help` (the tool's and
    /// every reading command's --dir), the README and docs/cli.md.
    @Test func theDefaultDirectoryIsStatedOnceAndTheSameEverywhere() throws {
        let statement = ReportDirectoryChoice.statement
        #expect(statement.contains(ReportDirectoryChoice.defaultDirectory) && statement.contains(ReportDirectoryChoice.demoDirectory))
        func prose(_ text: String) -> String {
            text.replacingOccurrences(of: "`", with: "").split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
        }
        for file in ["README.md", "docs/cli.md"] {
            let text = try String(contentsOfFile: Self.repository + "/" + file, encoding: .utf8)
            #expect(prose(text).contains(statement), "\(file) does not say: \(statement)")
        }
        let fixture = try Fixture(withDemoReports: false)
        for command in [[], ["list"], ["show"], ["top"], ["watch"], ["dump"]] {
            let help = try Hangwatch.run(command + ["--help"], cache: fixture.cache, environment: ["COLUMNS": "100"])
            #expect(prose(help.output).contains(statement), "hangwatch \(command) --help does not say: \(statement)")
        }
    }

    /// The version is set in one place, the VERSION file: the code's `MonitorVersion.release` is
    /// it, and `--version` of both tools says it (`0.1.0-dev` unstamped, `0.1.0-g1a2b3c4` or a
    /// tag when make stamped the build), as does the README's example.
    @Test func theVersionIsTheVersionFiles() throws {
        let file = try String(contentsOfFile: Self.repository + "/VERSION", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(MonitorVersion.release == file, "VERSION says \(file), MonitorVersion+Release.swift \(MonitorVersion.release): run scripts/stamp-version")
        let fixture = try Fixture(withDemoReports: false)
        for tool in [Hangwatch.binary, BuiltExecutable.path("hangwatchd")] {
            let result = try Hangwatch.run(["--version"], cache: fixture.cache, executable: tool)
            #expect(result.status == 0, "\(tool): \(result.errors)")
            let version = String(result.output.prefix { $0 != " " && $0 != "\n" })
            #expect(version == file + "-dev" || version.hasPrefix(file), "\(tool) --version: \(result.output)")
            #expect(version == MonitorVersion.current.version)
        }
        let readme = try String(contentsOfFile: Self.repository + "/README.md", encoding: .utf8)
        let example = try #require(readme.components(separatedBy: "\n").first { $0.hasPrefix("hangwatch --version") })
        #expect(example.contains("# \(file)"), "\(example)")
    }

    /// `make demo` ends by saying where the CLI it built is and how to type `hangwatch` as the
    /// README does; the alias it prints runs that CLI, and the README says the same path.
    @Test func makeDemoSaysHowToRunTheCLIItBuilt() throws {
        let result = try ExecutableRun.run("/usr/bin/make", ["-s", "-C", Self.repository, "demo-hint"], timeout: 120)
        #expect(result.status == 0, "\(result.errors)")
        let alias = try #require(result.lines.first { $0.contains("alias hangwatch=") }, "\(result.output)")
        let path = try #require(alias.split(separator: "\"").dropFirst().first.map(String.init), "\(alias)")
        #expect(path.hasSuffix("/hangwatch") && path.hasPrefix(Self.repository + "/.build/"), "\(path)")
        let help = try ExecutableRun.run(path, ["--help"], timeout: 30)
        #expect(help.status == 0 && help.output.contains("USAGE: hangwatch"), "\(help.output)\(help.errors)")
        let readme = try String(contentsOfFile: Self.repository + "/README.md", encoding: .utf8)
        #expect(readme.contains("alias hangwatch=$PWD/.build/debug/hangwatch"))
        #expect(FileManager.default.isExecutableFile(atPath: Self.repository + "/.build/debug/hangwatch"))
    }
}
