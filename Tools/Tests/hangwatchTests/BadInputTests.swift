import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

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
        // A field is named, with what is wrong with it, in JSON's words (not Swift's types).
        #expect(warning("wrong schema").contains("field \"durationMs\" is a string where a number is expected"), "\(warning("wrong schema"))")
        #expect(warning("not a report").contains("missing field \"schema\""), "\(warning("not a report"))")
        #expect(warning("empty").contains("not a valid hang report: not JSON"))
        #expect(warning("truncated").contains("not a valid hang report: not JSON"))
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

    @Test func hostileEntriesAreSkippedWithoutBlockingAndLeftAsTheyWere() throws {
        let fixture = try Fixture()
        let good = try DemoReports.reports()
        let report = try Data(contentsOf: URL(fileURLWithPath: try #require(fixture.reportPaths.first)))
        func path(_ sequence: Int) -> String { fixture.directory + "/hang-20000101T000000000Z-bad-1-\(sequence).json" }
        let outside = fixture.root + "/outside.json"
        #expect(FileManager.default.createFile(atPath: outside, contents: report))
        try FileManager.default.createSymbolicLink(atPath: path(1), withDestinationPath: outside)
        #expect(link(outside, path(2)) == 0)
        #expect(mkfifo(path(3), 0o600) == 0)
        #expect(mknod(path(4), S_IFSOCK | 0o600, 0) == 0)
        _ = mknod(path(5), S_IFCHR | 0o600, dev_t(1 << 8 | 3))  // 1:3, /dev/null; skipped where not allowed
        try fixture.write(report, name: "hang-20000101T000000000Z-..-1-6.json")
        let notUTF8 = Array(fixture.directory.utf8) + Array("/hang-20000101T000000000Z-".utf8) + [0xff] + Array("-1-7.json".utf8) + [0]
        let created = notUTF8.withUnsafeBufferPointer {
            $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT, 0o600) }
        }
        #expect(created >= 0)
        if created >= 0 { _ = report.withUnsafeBytes { write(created, $0.baseAddress, $0.count) }; close(created) }
        defer { _ = notUTF8.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { unlink($0.baseAddress!) } } }
        // A sparse gigabyte: refused by its size, never read into memory.
        let huge = path(8)
        let fd = open(huge, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        try #require(fd >= 0)
        #expect(ftruncate(fd, 1 << 30) == 0)
        close(fd)
        var before: [String: stat] = [:]
        for sequence in 1...8 {
            var info = stat()
            if lstat(path(sequence), &info) == 0 { before[path(sequence)] = info }
        }

        let list = try fixture.hangwatch("list", "--json")
        #expect(list.status == 0, "\(list.errors)")
        let summaries = try HangReport.makeDecoder().decode([ReportSummary].self, from: Data(list.output.utf8))
        #expect(Set(summaries.map(\.id)) == Set(good.map(\.id)))
        // Only regular files named like reports are opened: the hard link and the huge file,
        // each refused with one line naming it; the rest are not reports at all.
        #expect(list.errorLines.count == 2, "\(list.errorLines)")
        #expect(list.errorLines.contains { $0.contains(path(2)) && $0.contains("a hard link (2 names for one file") })
        #expect(list.errorLines.contains { $0.contains(huge) && $0.contains("1073741824 bytes is over the") })
        let top = try fixture.hangwatch("top")
        #expect(top.status == 0)
        #expect(top.errorLines.count == 2)
        let validate = try fixture.hangwatch("validate", fixture.directory, withDirectory: false)
        #expect(validate.status == 3)
        #expect(validate.lines.last == "\(good.count) valid, 2 invalid", "\(validate.output)")
        for blocked in [path(2), path(3), huge] {
            let show = try fixture.hangwatch("show", blocked, "--no-symbolicate")
            #expect(show.status == 3, "\(blocked): \(show.errors)")
            #expect(show.errors.contains(blocked))
        }
        // Memory stays bounded: the same commands under a 200 MiB data limit (getrusage's peak is
        // no use here: a child started with vfork inherits its parent's). Reading the huge file
        // would fail to allocate and trap.
        for arguments in [["list", "--dir", fixture.directory], ["show", huge, "--no-symbolicate"]] {
            let limited = try Hangwatch.run(
                ["--data=\(200 << 20)", Hangwatch.binary] + arguments, cache: fixture.cache, executable: "/usr/bin/prlimit")
            #expect([0, 3].contains(limited.status), "\(arguments): \(limited.errors)")
            #expect(limited.errors.contains(huge), "\(arguments): \(limited.errors)")
        }
        // Everything is where it was, as it was, and so is the file outside.
        for (entry, info) in before {
            var now = stat()
            #expect(lstat(entry, &now) == 0, "\(entry)")
            #expect(now.st_ino == info.st_ino && now.st_mode == info.st_mode && now.st_size == info.st_size, "\(entry)")
        }
        #expect(FileManager.default.contents(atPath: outside) == report)
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
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/report-parser")
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
