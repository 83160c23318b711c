import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

@Suite(.serialized) struct SymbolicateCommandTests {
    /// A copy of the lock-wait report, edited by `change`, written into the fixture.
    static func reportFile(_ fixture: Fixture, _ change: (inout HangReport) -> Void = { _ in }) throws -> (path: String, report: HangReport) {
        var report = try #require(try DemoReports.reports().first { $0.context.blockedIn == "futex" })
        report.id = "20300101T000000000Z-demo-1-1"
        change(&report)
        return (try ReportStore(directory: fixture.directory).write(report), report)
    }

    static func mainImage(_ report: HangReport) throws -> Int {
        try #require(report.images.firstIndex { $0.isMainExecutable })
    }

    @Test func writesNamesIntoTheReportWhenTheBuildIDMatches() throws {
        let fixture = try Fixture(withDemoReports: false)
        let (path, original) = try Self.reportFile(fixture)
        #expect(original.frames.allSatisfy { $0.symbol == nil })
        let result = try fixture.hangwatch("symbolicate", path)
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors.isEmpty || !result.errors.contains("hangwatch-demo"), "\(result.errors)")
        #expect(result.output.contains(" frames named"))
        let named = try ReportReader().read(path: path)
        let main = try Self.mainImage(named)
        let appFrames = named.frames.filter { $0.image == main }
        #expect(!appFrames.isEmpty && appFrames.allSatisfy { $0.symbol != nil }, "\(appFrames)")
        #expect(named.heaviestStack?.frames.contains { $0.symbol?.contains("waitForCacheLock") == true } == true)
        #expect(named.frames.contains { $0.file?.hasSuffix("DemoService.swift") == true && $0.line != nil })
        #expect(named.symbolication?.by == "hangwatch symbolicate")
        #expect((named.symbolication?.framesNamed ?? 0) > 0)
        // Everything else is as it was; the file is still private and valid.
        #expect(named.samples == original.samples && named.durationMs == original.durationMs && named.signature == original.signature)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0)
        #expect(try Hangwatch.run(["validate", path], cache: fixture.cache).status == 0)
        // No temporary file is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.directory) == [(path as NSString).lastPathComponent])
    }

    @Test func refusesABinaryWhoseBuildIDDoesNotMatch() throws {
        let fixture = try Fixture(withDemoReports: false)
        var main = 0
        let (path, _) = try Self.reportFile(fixture) { report in
            main = report.images.firstIndex { $0.isMainExecutable } ?? 0
            report.images[main].buildId = String(repeating: "ab", count: 20)
        }
        let result = try fixture.hangwatch("symbolicate", path)
        #expect(result.errors.contains("does not match the report's \(String(repeating: "ab", count: 20)); refusing to use it"), "\(result.errors)")
        #expect(result.output.contains("images refused or missing"))
        let after = try ReportReader().read(path: path)
        let appFrames = after.frames.filter { $0.image == main }
        #expect(!appFrames.isEmpty && appFrames.allSatisfy { $0.symbol == nil })
    }

    @Test func findsAMovedBinaryByBuildIDInADebugDirectory() throws {
        let fixture = try Fixture(withDemoReports: false)
        var buildID = ""
        let (path, _) = try Self.reportFile(fixture) { report in
            let main = report.images.firstIndex { $0.isMainExecutable } ?? 0
            buildID = report.images[main].buildId ?? ""
            report.images[main].path = "/nonexistent/release/hangwatch-demo"
        }
        try #require(buildID.count > 8)
        // Without a debug directory: the binary is missing, and the message says what to do.
        let output = fixture.root + "/named.json"
        let missing = try fixture.hangwatch("symbolicate", path, "-o", output)
        #expect(missing.errors.contains("/nonexistent/release/hangwatch-demo: not found (give --debug-dir"))

        let debug = fixture.root + "/debug/.build-id/" + buildID.prefix(2)
        try FileManager.default.createDirectory(atPath: debug, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: debug + "/" + buildID.dropFirst(2), withDestinationPath: BuiltExecutable.path("hangwatch-demo"))
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let found = try fixture.hangwatch("symbolicate", path, "--debug-dir", fixture.root + "/debug", "-o", output)
        #expect(found.status == 0, "\(found.errors)")
        #expect(!found.errors.contains("hangwatch-demo"), "\(found.errors)")
        let named = try ReportReader().read(path: output)
        #expect(named.frames.contains { $0.symbol?.contains("waitForCacheLock") == true })
        // --output leaves the original alone.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)

        // A different binary filed under that build-id is refused.
        let wrong = fixture.root + "/wrong/.build-id/" + buildID.prefix(2)
        try FileManager.default.createDirectory(atPath: wrong, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: wrong + "/" + buildID.dropFirst(2), withDestinationPath: "/bin/sh")
        let refused = try fixture.hangwatch("symbolicate", path, "--debug-dir", fixture.root + "/wrong", "-o", output)
        #expect(refused.errors.contains("refusing to use it"), "\(refused.errors)")
        let unnamed = try ReportReader().read(path: output)
        #expect(!unnamed.frames.contains { $0.symbol?.contains("waitForCacheLock") == true })
    }
}
