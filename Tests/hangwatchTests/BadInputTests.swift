import Foundation
import HangWatchReport
import Testing

/// Truncated, empty, huge, deeply nested, wrong-schema, future-schema, non-UTF-8 and foreign
/// files among good reports: every command skips each with one warning line naming it, reports
/// everything else, and never crashes.
@Suite(.serialized) struct BadInputTests {
    static func fixtureWithBadFiles(_ name: String = #function) throws -> (Fixture, [(name: String, bytes: Data, reason: String)]) {
        let fixture = try Fixture(name)
        let good = try Data(contentsOf: URL(fileURLWithPath: try #require(fixture.reportPaths.first)))
        let bad = BadReports.all(basedOn: good)
        for file in bad { try fixture.write(file.bytes, name: file.name) }
        return (fixture, bad)
    }

    @Test func listWarnsOncePerBadFileAndListsTheRest() throws {
        let (fixture, bad) = try Self.fixtureWithBadFiles()
        let reports = try DemoReports.reports()
        // Twice: the second run answers from the index, and must warn just the same.
        for run in 1...2 {
            let result = try fixture.hangwatch("list", "--json")
            #expect(result.status == 0, "run \(run): \(result.errors)")
            let summaries = try HangReport.makeDecoder().decode([ReportSummary].self, from: Data(result.output.utf8))
            #expect(Set(summaries.map(\.id)) == Set(reports.map(\.id)), "run \(run)")
            let warnings = result.errorLines
            #expect(warnings.count == bad.count, "run \(run): \(warnings)")
            for file in bad {
                let lines = warnings.filter { $0.contains(file.name) }
                #expect(lines.count == 1, "run \(run), \(file.reason): \(warnings)")
                #expect(lines.first?.hasPrefix("hangwatch: warning: skipped ") == true)
            }
        }
    }

    @Test func eachWarningSaysWhatIsWrong() throws {
        let (fixture, bad) = try Self.fixtureWithBadFiles()
        let result = try fixture.hangwatch("list")
        func warning(_ reason: String) -> String {
            let name = bad.first { $0.reason == reason }!.name
            return result.errorLines.first { $0.contains(name) } ?? ""
        }
        #expect(warning("huge").contains("over the \(ReportReader.defaultMaxBytes)-byte limit"))
        #expect(warning("future schema").contains("unsupported report schema \"hangwatch.hang/9\""))
        #expect(warning("wrong schema").contains("durationMs"))
        #expect(warning("not a report").contains("schema: missing field"))
        #expect(warning("empty").contains("not a valid hang report"))
        #expect(warning("truncated").contains("not a valid hang report"))
        #expect(warning("deeply nested").contains("not a valid hang report"))
        #expect(warning("not UTF-8").contains("is not UTF-8 text"))
    }

    @Test func everyReadingCommandSurvives() throws {
        let (fixture, bad) = try Self.fixtureWithBadFiles()
        let output = fixture.root + "/out"
        for arguments in [
            ["top"], ["top", "--json"], ["show", "latest"], ["export", "--all", "--format", "folded"],
            ["export", "--all", "--format", "speedscope"], ["flamegraph", "--all", "-o", output + ".svg"],
            ["watch", "--timeout", "0.2", "--from-start"],
        ] {
            let result = try fixture.hangwatch(arguments)
            #expect(result.status == 0, "\(arguments): \(result.errors)")
            #expect(!result.output.isEmpty || arguments.contains("-o"), "\(arguments)")
            if arguments[0] != "watch" {
                #expect(result.errorLines.count == bad.count, "\(arguments): \(result.errorLines)")
            }
        }
    }

    @Test func showAndSymbolicateOfABadFileAreExitThree() throws {
        let (fixture, bad) = try Self.fixtureWithBadFiles()
        for file in bad {
            let path = fixture.directory + "/" + file.name
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            for command in ["show", "symbolicate"] {
                let result = try fixture.hangwatch(command, path)
                #expect(result.status == 3, "\(command) \(file.reason): \(result.errors)")
                #expect(result.errors.contains(path), "\(command) \(file.reason)")
                #expect(result.errorLines.count == 1)
            }
            // Nothing already written is lost or changed.
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "\(file.reason)")
        }
    }

    @Test func symlinksAndDirectoriesNamedLikeReportsAreNotFollowed() throws {
        let fixture = try Fixture()
        let outside = fixture.root + "/secret.json"
        try Data("{}".utf8).write(to: URL(fileURLWithPath: outside))
        try FileManager.default.createSymbolicLink(atPath: fixture.directory + "/hang-20000101T000000000Z-link-1-1.json", withDestinationPath: outside)
        try FileManager.default.createDirectory(atPath: fixture.directory + "/hang-20000101T000000000Z-dir-1-1.json", withIntermediateDirectories: true)
        let result = try fixture.hangwatch("list", "--json")
        #expect(result.status == 0)
        #expect(result.errors.isEmpty, "\(result.errors)")
        let show = try fixture.hangwatch("show", fixture.directory + "/hang-20000101T000000000Z-link-1-1.json")
        #expect(show.status == 3)
        #expect(show.errors.contains("not a regular file"))
    }

    /// Reports that read but hold absurd values (indices below zero or past the end, numbers of
    /// 1e308, Int.max repeats; files of the fuzz corpus) next to the demo's: every command lists,
    /// groups, shows, exports and symbolicates them without trapping.
    @Test func reportsWithAbsurdValuesAreHandledByEveryCommand() throws {
        let fixture = try Fixture()
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/report-parser")
        var paths: [String] = []
        for (index, name) in ["negative-indices.json", "huge-numbers.json", "indices-out-of-range.json", "negative-duration.json"].enumerated() {
            let bytes = try Data(contentsOf: corpus.appendingPathComponent(name))
            paths.append(try fixture.write(bytes, name: "hang-20000101T000000000Z-absurd-1-\(index + 1).json"))
        }
        for arguments in [
            ["list"], ["list", "--json"], ["top"], ["top", "--json"], ["export", "--all", "--format", "folded"],
            ["export", "--all", "--format", "speedscope"], ["flamegraph", "--all", "-o", fixture.root + "/all.svg"],
        ] {
            let result = try fixture.hangwatch(arguments)
            #expect(result.status == 0, "\(arguments): \(result.errors)")
            #expect(result.errorLines.isEmpty, "\(arguments): \(result.errorLines)")
        }
        for path in paths {
            let show = try fixture.hangwatch("show", path)
            #expect(show.status == 0, "show \(path): \(show.errors)")
            // The corpus names binaries of the machine it was made on: symbolicate may refuse them
            // (exit 3, binary missing or build-id mismatch); it must not trap.
            let symbolicate = try fixture.hangwatch("symbolicate", path)
            #expect([0, 3].contains(symbolicate.status), "symbolicate \(path): \(symbolicate.errors)")
            #expect(!symbolicate.errors.contains("Fatal error"), "symbolicate \(path): \(symbolicate.errors)")
        }
    }
}
