import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

#if canImport(FoundationXML)
import FoundationXML
#endif

@Suite(.serialized) struct ExportCommandTests {
    /// Checks the folded format line by line (frames joined by `;`, a space, a whole count) and
    /// returns the lines as (frames, count).
    static func folded(_ text: String) -> [(frames: [String], count: Int)] {
        var result: [(frames: [String], count: Int)] = []
        #expect(text.hasSuffix("\n"))
        for line in text.split(separator: "\n") {
            guard let space = line.lastIndex(of: " "), let count = Int(line[line.index(after: space)...]), count > 0 else {
                Issue.record("not a folded line: \(line)")
                continue
            }
            let frames = line[..<space].split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            #expect(frames.allSatisfy { !$0.isEmpty }, "\(line)")
            result.append((frames, count))
        }
        return result
    }

    @Test func foldedStacksOfOneHangWeighItsSampledTime() throws {
        let fixture = try Fixture()
        let newest = try #require(try DemoReports.reports().max { $0.startedAt < $1.startedAt })
        let result = try fixture.hangwatch("export", "latest", "--format", "folded")
        #expect(result.status == 0, "\(result.errors)")
        let lines = Self.folded(result.output)
        #expect(!lines.isEmpty)
        // Root first: the process entry point, down to the sleep.
        #expect(lines.allSatisfy { $0.frames.first == "_start" }, "\(lines.map(\.frames.first))")
        #expect(lines.contains { $0.frames.last == "clock_nanosleep" && $0.frames.contains { $0.contains("flushAuditLogSynchronously") } })
        // Sampled time: from the first sample to the end of the hang (each line rounded to a whole ms).
        let sampled = newest.durationMs - (newest.samples.first?.offsetMs ?? 0)
        let total = lines.map(\.count).reduce(0, +)
        #expect(abs(Double(total) - sampled) <= Double(lines.count) * 0.5 + 0.001, "\(total) vs \(sampled)")
    }

    @Test func allMatchingHangsAsSpeedscopeAndJSON() throws {
        let fixture = try Fixture()
        let reports = try DemoReports.reports()
        let output = fixture.root + "/all.speedscope.json"
        let result = try fixture.hangwatch("export", "--all", "--format", "speedscope", "-o", output)
        #expect(result.status == 0, "\(result.errors)")
        let file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: output))) as? [String: Any])
        let profiles = try #require(file["profiles"] as? [[String: Any]])
        #expect(profiles.count == reports.count)
        let frames = try #require((file["shared"] as? [String: Any])?["frames"] as? [[String: Any]])
        #expect(frames.contains { ($0["name"] as? String)?.contains("busyCompute") == true })

        let json = try fixture.hangwatch("export", "--all", "--format", "json", "--min-duration", "550ms")
        #expect(json.status == 0)
        let exported = try HangReport.makeDecoder().decode([HangReport].self, from: Data(json.output.utf8))
        #expect(Set(exported.map(\.id)) == Set(reports.filter { $0.durationMs >= 550 }.map(\.id)))
        #expect(exported.allSatisfy { $0.frames.contains { $0.symbol != nil } })
    }

    @Test func aGroupBySignature() throws {
        let fixture = try Fixture()
        let report = try #require(try DemoReports.reports().first { $0.context.blockedIn == "futex" })
        // The group's signature as `top` and `list` give it (by names: named on the fly).
        let summaries = try HangReport.makeDecoder().decode([ReportSummary].self, from: Data(try fixture.hangwatch("list", "--json").output.utf8))
        let signature = try #require(summaries.first { $0.id == report.id }?.signature)
        let result = try fixture.hangwatch("export", "--signature", String(signature.prefix(8)))
        #expect(result.status == 0)
        let lines = Self.folded(result.output)
        #expect(lines.contains { $0.frames.contains { $0.contains("waitForCacheLock") } })
        #expect(!lines.contains { $0.frames.contains { $0.contains("busyCompute") } })
        let none = try fixture.hangwatch("export", "--signature", "ffffffffffff")
        #expect(none.status == 1)
    }

    @Test func selectionMustBeExactlyOneThing() throws {
        let fixture = try Fixture()
        #expect(try fixture.hangwatch("export").status == 2)
        #expect(try fixture.hangwatch("export", "latest", "--all").status == 2)
        #expect(try fixture.hangwatch("export", "latest", "--format", "pdf").status == 2)
    }

    @Test func flamegraphIsAnSVGNamingTheFrames() throws {
        let fixture = try Fixture()
        let output = fixture.root + "/hangs.svg"
        let result = try fixture.hangwatch("flamegraph", "--all", "-o", output)
        #expect(result.status == 0, "\(result.errors)")
        let data = try Data(contentsOf: URL(fileURLWithPath: output))
        let titles = try XMLTitles.read(data)
        #expect(titles.root == "svg")
        for culprit in ["recomputePricing", "waitForCacheLock", "flushAuditLogSynchronously", "renderModalFrame", "parseInventorySnapshot"] {
            #expect(titles.titles.contains { $0.contains(culprit) && $0.contains(" ms, ") }, "\(culprit)")
        }
        #expect(titles.titles.contains { $0.hasPrefix("all (") && $0.hasSuffix("100.0%)") })
        let one = try fixture.hangwatch("flamegraph", "latest")
        #expect(one.output.hasPrefix("<?xml"))
        #expect(try XMLTitles.read(Data(one.output.utf8)).titles.contains { $0.contains("clock_nanosleep") })
    }
}

/// Titles (the hover texts) of an SVG, read with a real XML parser: a file that is not
/// well-formed XML fails the test.
final class XMLTitles: NSObject, XMLParserDelegate {
    var titles: [String] = []
    var root: String?
    private var current: String?

    static func read(_ data: Data) throws -> XMLTitles {
        let parser = XMLParser(data: data)
        let reader = XMLTitles()
        parser.delegate = reader
        let parsed = parser.parse()
        #expect(parsed, "not well-formed: \(parser.parserError.map { "\($0)" } ?? "?")")
        try #require(parsed)
        return reader
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        if root == nil { root = name }
        if name == "title" { current = "" }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        current? += string
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if name == "title", let current { titles.append(current) }
        if name == "title" { current = nil }
    }

    /// `--format pprof -o FILE` writes a gzip'd profile (what is in it: PprofExportTests).
    @Test func pprofGoesToAFileGzipped() throws {
        let fixture = try Fixture()
        let path = fixture.root + "/hangs.pb.gz"
        let result = try fixture.hangwatch(["export", "--all", "--format", "pprof", "-o", path])
        #expect(result.status == 0, "\(result.errors)")
        let bytes = try #require(FileManager.default.contents(atPath: path))
        #expect(bytes.prefix(2) == Data([0x1f, 0x8b]))
    }
}
