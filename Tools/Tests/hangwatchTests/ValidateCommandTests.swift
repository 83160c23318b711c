import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

@Suite(.serialized) struct ValidateCommandTests {
    @Test func realReportsAreValid() throws {
        let fixture = try Fixture()
        let result = try Hangwatch.run(["validate", fixture.directory], cache: fixture.cache)
        #expect(result.status == 0, "\(result.output)")
        let count = fixture.reportPaths.count
        #expect(result.lines.filter { $0.hasPrefix("ok ") }.count == count)
        #expect(result.lines.last == "\(count) valid, 0 invalid")
    }

    @Test func everyBadFileIsInvalidWithAPreciseReason() throws {
        let fixture = try Fixture()
        let good = try #require(fixture.reportPaths.first)
        let bad = BadReports.all(basedOn: try Data(contentsOf: URL(fileURLWithPath: good)))
        let paths = try bad.map { try fixture.write($0.bytes, name: $0.name) }
        let result = try Hangwatch.run(["validate", good] + paths, cache: fixture.cache)
        #expect(result.status == 3)
        #expect(result.lines.last == "1 valid, \(bad.count) invalid")
        for path in paths {
            let line = try #require(result.lines.firstIndex(of: "INVALID  \(path)"), "\(path) not reported")
            #expect(result.lines[line + 1].hasPrefix("         "), "no reason for \(path)")
        }
        #expect(result.output.contains("field \"durationMs\" is a string where a number is expected"), "\(result.output)")
    }

    @Test func inconsistentReportsAreCaught() throws {
        let fixture = try Fixture()
        var report = try #require(try DemoReports.reports().first)
        report.samples[0].stack = 999
        report.frames[0].image = 999
        report.frames[1].address = "nonsense"
        report.endedAt = report.startedAt.addingTimeInterval(-1)
        let path = try ReportStore(directory: fixture.directory).write(report)
        let result = try Hangwatch.run(["validate", "--quiet", path], cache: fixture.cache)
        #expect(result.status == 3)
        #expect(result.output.contains("samples[0].stack: 999 is not an index into stacks"))
        #expect(result.output.contains("frames[0].image: 999 is not an index into images"))
        #expect(result.output.contains("frames[1].address: \"nonsense\" is not a hexadecimal address"))
        #expect(result.output.contains("endedAt: before startedAt"))
        #expect(!result.output.contains("ok "))
    }

    @Test func nothingToValidate() throws {
        let fixture = try Fixture(withDemoReports: false)
        #expect(try Hangwatch.run(["validate"], cache: fixture.cache).status == 2)
        #expect(try Hangwatch.run(["validate", fixture.directory], cache: fixture.cache).status == 1)
        let missing = try Hangwatch.run(["validate", fixture.root + "/nope.json"], cache: fixture.cache)
        #expect(missing.status == 3)
        #expect(missing.output.contains("no such report"))
    }
}
