import Foundation
@testable import HangWatchReading
import HangWatchReport
import HangWatchTestSupport
import Testing

@Suite struct ReportCatalogTests {
    /// A report directory with `count` reports (two services, one in a subdirectory) and an index
    /// directory beside it.
    func directory(reports count: Int) throws -> (reports: String, index: String) {
        let root = ReportFixtures.temporaryDirectory()
        let reports = root + "/reports"
        try FileManager.default.createDirectory(atPath: reports + "/cart", withIntermediateDirectories: true)
        for number in 0..<count {
            let service = number.isMultiple(of: 2) ? "billing" : "cart"
            let report = ReportFixtures.report(
                id: "20261122T0102\(String(format: "%02d", number))123Z-\(service)-42-\(number)", service: service,
                durationMs: 300 + Double(number))
            _ = try ReportStore(directory: service == "cart" ? reports + "/cart" : reports).write(report)
        }
        return (reports, root + "/index")
    }

    @Test func findsReportsInTheDirectoryAndOneLevelDown() throws {
        let (reports, index) = try directory(reports: 4)
        let scan = try ReportCatalog(directory: reports, indexPath: index).summaries()
        #expect(scan.summaries.count == 4)
        #expect(Set(scan.summaries.map(\.service)) == ["billing", "cart"])
        #expect(scan.problems.isEmpty)
    }

    /// An unchanged file (same size, modification time and inode) is answered from the index:
    /// proven by changing its bytes behind the catalog's back and getting the old summary.
    @Test func anUnchangedReportIsNotReadAgain() throws {
        let (reports, index) = try directory(reports: 3)
        let catalog = ReportCatalog(directory: reports, indexPath: index)
        let first = try catalog.summaries()
        let victim = try #require(first.summaries.first { $0.service == "billing" })
        var info = stat()
        #expect(stat(victim.path, &info) == 0)
        let size = Int(info.st_size)
        // Same size, same inode, same time: garbage the catalog must not notice.
        let handle = try #require(FileHandle(forWritingAtPath: victim.path))
        try handle.write(contentsOf: Data(repeating: UInt8(ascii: "x"), count: size))
        try handle.close()
        var times = [info.st_atim, info.st_mtim]
        #expect(utimensat(AT_FDCWD, victim.path, &times, 0) == 0)
        let second = try catalog.summaries()
        #expect(second.summaries == first.summaries)
        #expect(second.problems.isEmpty)

        // Once its time changes, it is read again, and found wanting.
        times[1].tv_sec += 1
        #expect(utimensat(AT_FDCWD, victim.path, &times, 0) == 0)
        let third = try catalog.summaries()
        #expect(third.summaries.count == 2)
        #expect(third.problems.map(\.path) == [victim.path])
        #expect(third.problems.first?.reason.hasPrefix("not a valid hang report") == true)
    }

    @Test func aDamagedIndexIsIgnoredAndRewritten() throws {
        let (reports, index) = try directory(reports: 3)
        let catalog = ReportCatalog(directory: reports, indexPath: index)
        let expected = try catalog.summaries().summaries
        let indexFile = try #require(catalog.indexPath)
        var damaged = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: indexFile))) as? [String: Any])
        // Columns that do not add up, and strings that point nowhere.
        damaged["durationMs"] = [1.0]
        damaged["service"] = [99, 99, 99]
        try JSONSerialization.data(withJSONObject: damaged).write(to: URL(fileURLWithPath: indexFile))
        #expect(catalog.loadIndex().isEmpty)
        #expect(try catalog.summaries().summaries == expected)
        #expect(catalog.loadIndex().count == 3)
        for garbage in [Data(), Data("not json".utf8), Data("{\"version\": 3}".utf8)] {
            try garbage.write(to: URL(fileURLWithPath: indexFile))
            #expect(try catalog.summaries().summaries == expected)
        }
    }

    @Test func theIndexFileRoundTripsEveryField() throws {
        var report = ReportFixtures.report()
        report.context.blockedIn = "futex"
        report.context.onCpuRatio = nil
        report.thread.name = nil
        report.labels = ["route": "GET /checkout", "tenant": "acme", "": "x"]
        var entry = ReportCatalog.IndexEntry(size: 10, modified: 20, inode: 30)
        entry.summary = ReportSummary(report: report, path: "/r/a.json")
        var named = ReportFixtures.report()
        named.frames[0].symbol = "read"
        named.frames[2].symbol = "billing.g() -> ()"
        named.heaviestStack?.frames = named.frames
        named.serviceVersion = ServiceVersion(version: "1.5.0", source: .openTelemetry)
        named.resource = WorkloadIdentity(
            containerID: String(repeating: "3f2a1b4c", count: 8), podName: "billing-a", namespaceName: "shop", podUID: "u-1", containerName: "app",
            nodeName: "node-3")
        var namedEntry = ReportCatalog.IndexEntry(size: 11, modified: 21, inode: 31)
        namedEntry.summary = ReportSummary(report: named, path: "/r/c.json")
        #expect(namedEntry.summary?.signatureKind == .names && entry.summary?.signatureKind == .addresses)
        #expect(namedEntry.summary?.serviceVersion == "1.5.0" && entry.summary?.serviceVersion == nil)
        var skipped = ReportCatalog.IndexEntry(size: 1, modified: 2, inode: 3)
        skipped.problem = "not a valid hang report: top level"
        let entries = ["/r/a.json": entry, "/r/b.json": skipped, "/r/c.json": namedEntry]
        let file = ReportIndexFile(version: 3, directory: "/r", entries: entries)
        let decoded = try JSONDecoder().decode(ReportIndexFile.self, from: JSONEncoder().encode(file))
        #expect(decoded.entries() == entries)
        #expect(decoded.entries()?["/r/c.json"]?.summary?.serviceVersion == "1.5.0")
        #expect(decoded.entries()?["/r/c.json"]?.summary?.resource == named.resource)
        #expect(decoded.entries()?["/r/a.json"]?.summary?.resource == nil)
    }

    /// Where a report says its process ran is bounded as the monitor bounds it; a resource with
    /// nothing left is none.
    @Test func aSummarysResourceIsBounded() {
        var report = ReportFixtures.report()
        report.resource = WorkloadIdentity(podName: "  billing-a\u{1b}[31m " + String(repeating: "x", count: 400), nodeName: "\n")
        let summary = ReportSummary(report: report, path: "/r/a.json")
        #expect(summary.resource == WorkloadIdentity(podName: "billing-a[31m " + String(repeating: "x", count: WorkloadIdentity.maxBytes - 14)))
        report.resource = WorkloadIdentity(nodeName: " \t")
        #expect(ReportSummary(report: report, path: "/r/a.json").resource == nil)
    }

    /// An index written before summaries had a service version is not read as one without it: it
    /// is rebuilt.
    @Test func anIndexOfAnEarlierVersionIsRebuilt() throws {
        let (reports, index) = try directory(reports: 1)
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: reports).deletingLastPathComponent().path) }
        let catalog = ReportCatalog(directory: reports, indexPath: index)
        _ = try catalog.summaries()
        let indexFile = try #require(catalog.indexPath)
        #expect(catalog.loadIndex().count == 1)
        var old = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: indexFile))) as? [String: Any])
        old["version"] = ReportCatalog.indexVersion - 1
        old["serviceVersion"] = nil
        try JSONSerialization.data(withJSONObject: old).write(to: URL(fileURLWithPath: indexFile))
        #expect(catalog.loadIndex().isEmpty)
    }

    /// A report file may say anything: its version is bounded as the monitor bounds it, and an
    /// empty one is none.
    @Test func aSummarysServiceVersionIsBounded() throws {
        var report = ReportFixtures.report()
        report.serviceVersion = ServiceVersion(version: "x", source: .configuration)
        report.serviceVersion?.version = "  1.5.0\u{1b}[31m" + String(repeating: "9", count: 100)
        let summary = ReportSummary(report: report, path: "/r/a.json")
        #expect(summary.serviceVersion == "1.5.0[31m" + String(repeating: "9", count: ServiceVersion.maxBytes - 9))
        report.serviceVersion?.version = " \t"
        #expect(ReportSummary(report: report, path: "/r/a.json").serviceVersion == nil)
    }

    @Test func ongoingReportsAreListedButNotRemembered() throws {
        let (reports, index) = try directory(reports: 1)
        _ = try ReportStore(directory: reports).write(ReportFixtures.report(id: "20261122T020000000Z-billing-42-9", outcome: .ongoing))
        let catalog = ReportCatalog(directory: reports, indexPath: index)
        #expect(try catalog.summaries().summaries.count == 2)
        #expect(catalog.loadIndex().count == 1)
    }
}
