import Foundation
@testable import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct MonitorVersionTests {
    @Test func readsTheRunningBinarysBuildID_asReadelfShowsIt() throws {
        // The test bundle itself: Swift links with a GNU build-id note on Linux.
        let buildID = try #require(ExecutableBuildID.read(path: "/proc/self/exe"))
        #expect(buildID.count == 40)
        #expect(buildID.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(MonitorVersion.versionLine().contains("build-id \(buildID)"))
    }

    @Test func findsNoBuildID_inWhatIsNotAnElfFile() throws {
        let directory = ReportFixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let text = directory + "/not-elf"
        try Data("not an ELF file at all, but long enough to read a header from: 0123456789abcdef".utf8).write(to: URL(fileURLWithPath: text))
        let truncated = directory + "/truncated-elf"
        try Data([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]).write(to: URL(fileURLWithPath: truncated))
        #expect(ExecutableBuildID.read(path: text) == nil)
        #expect(ExecutableBuildID.read(path: truncated) == nil)
        #expect(ExecutableBuildID.read(path: directory + "/missing") == nil)
    }

    @Test func theVersionStartsTheVersionLine() {
        #expect(!MonitorVersion.current.version.isEmpty)
        #expect(MonitorVersion.versionLine().hasPrefix(MonitorVersion.current.version))
    }

    @Test func writesTheMonitorAndReadsReportsWithout() throws {
        var report = ReportFixtures.report()
        report.monitor = MonitorVersion(version: "0.1.0-g1a2b3c4", commit: "1a2b3c4d5e6f")
        let object = try #require(try JSONSerialization.jsonObject(with: report.encoded()) as? [String: Any])
        #expect(object["monitor"] as? [String: String] == ["version": "0.1.0-g1a2b3c4", "commit": "1a2b3c4d5e6f"])
        #expect(try HangReport.decode(report.encoded()).monitor == report.monitor)
        let without = try HangReport.decode(ReportFixtures.report().encoded())
        #expect(without.monitor == nil)
    }
}
