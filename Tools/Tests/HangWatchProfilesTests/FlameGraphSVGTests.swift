import Foundation
import HangWatchProfiles
import HangWatchReport
import HangWatchTestSupport
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Collects the `title` texts and `rect` widths of an SVG while checking it is well-formed XML.
final class SVGReader: NSObject, XMLParserDelegate {
    var titles: [String] = []
    var rectangles: [(x: Double, width: Double)] = []
    var root: String?
    private var inTitle = false
    private var text = ""

    static func read(_ svg: String) throws -> SVGReader {
        let parser = XMLParser(data: Data(svg.utf8))
        let reader = SVGReader()
        parser.delegate = reader
        let parsed = parser.parse()
        #expect(parsed, "not well-formed XML: \(parser.parserError.map { "\($0)" } ?? "?")")
        try #require(parsed)
        return reader
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        if root == nil { root = name }
        if name == "title" {
            inTitle = true
            text = ""
        }
        if name == "rect", let x = attributes["x"].flatMap(Double.init), let width = attributes["width"].flatMap(Double.init) {
            rectangles.append((x, width))
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if inTitle { text += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if name == "title" {
            titles.append(text)
            inTitle = false
        }
    }
}

@Suite struct FlameGraphSVGTests {
    @Test func aWellFormedSVGWithAHoverTitlePerFrame() throws {
        let svg = FlameGraphSVG.render([StackReports.twoStacks], title: "billing hangs")
        let reader = try SVGReader.read(svg)
        #expect(reader.root == "svg")
        #expect(reader.titles.contains("all (200 ms, 100.0%)"))
        #expect(reader.titles.contains("Parser.parse() (150 ms, 75.0%)"))
        #expect(reader.titles.contains("billing.render(_:) (50 ms, 25.0%)"))
        #expect(reader.titles.contains("main (200 ms, 100.0%)"))
        // Nothing outside the drawing area (1200 wide, 10 margin).
        #expect(reader.rectangles.dropFirst().allSatisfy { $0.x >= 10 && $0.x + $0.width <= 1190.01 })
        // Self-contained: one inline script, nothing fetched.
        #expect(svg.components(separatedBy: "<script").count == 2)
        #expect(!svg.contains("href") && !svg.contains("src=") && !svg.contains("import("))
    }

    /// With `--near-misses`, each near miss of the lead-up is drawn beside the hang under its
    /// marker, weighing the time it is proven to have run; without it, only the hang is drawn.
    @Test func nearMissesAreDrawnBesideTheHangOnlyWhenAskedFor() throws {
        var report = StackReports.twoStacks
        // Stack 1 is `render` under `main`; a near miss without a stack is left out.
        let renderStack = try #require(report.samples[2].stack)
        report.before = HangReport.LeadUp(
            windowMs: 5000, bucketMs: 100, buckets: [], busyRatio: 0.9, reading: "busy 90 % for 4.8 s before onset",
            nearMisses: [
                HangReport.LeadUp.NearMiss(offsetMs: -900, atLeastMs: 120, stack: renderStack, error: nil),
                HangReport.LeadUp.NearMiss(offsetMs: -400, atLeastMs: 130, stack: renderStack, error: nil),
                HangReport.LeadUp.NearMiss(offsetMs: -200, atLeastMs: 110, stack: nil, error: "endedDuringCapture"),
            ])
        let plain = try SVGReader.read(FlameGraphSVG.render([report], title: "t"))
        #expect(!plain.titles.contains { $0.contains("near miss") }, "\(plain.titles)")
        let drawn = try SVGReader.read(FlameGraphSVG.render([report], title: "t", nearMisses: true))
        #expect(drawn.titles.contains("all (450 ms, 100.0%)"), "\(drawn.titles)")
        #expect(drawn.titles.contains("[near miss before the hang] (250 ms, 55.6%)"), "\(drawn.titles)")
        #expect(drawn.titles.contains("billing.render(_:) (250 ms, 55.6%)"), "\(drawn.titles)")
        let stacks = SampledStacks.nearMisses(of: report)
        #expect(stacks.map(\.weightMs) == [120, 130])
        #expect(stacks.allSatisfy { $0.frames == ["[near miss before the hang]", "main", "billing.render(_:)"] }, "\(stacks.map(\.frames))")
    }

    @Test func markupInNamesIsEscaped() throws {
        let hostile = "Box<T>.op&\"x\"'y </title><script>"
        let report = StackReports.report(durationMs: 100, samples: [(0, [hostile, "main"]), (50, ["bell\u{07}", "main"])])
        let reader = try SVGReader.read(FlameGraphSVG.render([report], title: "<&>"))
        #expect(reader.titles.contains { $0.hasPrefix(hostile + " (") })
        #expect(reader.titles.contains { $0.hasPrefix("bell ") })
    }

    @Test func noSamplesStillMakesAValidPicture() throws {
        let report = StackReports.report(durationMs: 300, samples: [(250, [])])
        let reader = try SVGReader.read(FlameGraphSVG.render([report], title: "empty"))
        #expect(reader.root == "svg")
    }

    /// A report file's weights may be 1e300: the hover titles say so instead of trapping.
    @Test func aWeightTooLargeForAnIntIsShownNotTrappedOn() throws {
        let report = StackReports.report(durationMs: 1e300, samples: [(0, ["main", "f"])])
        let svg = FlameGraphSVG.render([report], title: "t")
        #expect(svg.contains("<title>f (1000000000000000052504760"), "\(svg.prefix(2_000))")
    }

    /// A report file may hold a stack of 300,000 frames (600 KB, well under the reader's limit);
    /// drawn whole, its recursion overflowed the stack of `hangwatch flamegraph`.
    @Test func aStackDeeperThanTheLimitIsDrawnToTheLimit() throws {
        let deep = Array(repeating: "f", count: 300_000) + ["main"]
        let report = StackReports.report(durationMs: 100, samples: [(0, deep)])
        let reader = try SVGReader.read(FlameGraphSVG.render([report], title: "deep"))
        #expect(reader.titles.contains { $0.hasPrefix("main (") })
        #expect(reader.rectangles.count == FlameGraphSVG.maxDepth + 1, "the root's and one per level")
    }

    /// Colours say what the time was: the service's code apart from the system's, waiting apart
    /// from running, and a stopped stack's root grey.
    @Test func coloursFollowMeaning() throws {
        var report = StackReports.report(durationMs: 400, samples: [(250, ["compute", "handle", "main"]), (300, ["wait", "other", "main"])])
        report.images.append(HangReport.Image(path: "/usr/lib/x86_64-linux-gnu/libc.so.6", buildId: nil, base: "0x9000", size: 0x1000, isMainExecutable: false))
        let wait = try #require(report.frames.firstIndex { $0.symbol == "wait" })
        report.frames[wait].image = 1
        report.samples[1].state = "S"
        report.samples[1].syscall = "futex"
        let svg = FlameGraphSVG.render([report], title: "t")
        func fill(_ name: String) throws -> String {
            let range = try #require(svg.range(of: "data-name=\"\(name)\""))
            let rest = svg[range.upperBound...]
            let start = try #require(rest.range(of: "fill=\""))
            return String(rest[start.upperBound...].prefix { $0 != "\"" })
        }
        func rgb(_ text: String) -> (Int, Int, Int) {
            let parts = text.dropFirst(4).dropLast().split(separator: ",").compactMap { Int($0) }
            return parts.count == 3 ? (parts[0], parts[1], parts[2]) : (0, 0, 0)
        }
        let compute = rgb(try fill("compute")), waiting = rgb(try fill("wait")), other = rgb(try fill("other"))
        #expect(compute.0 > compute.2, "service code on a CPU is warm: \(compute)")
        #expect(waiting.2 > waiting.0, "waiting in the kernel is blue: \(waiting)")
        #expect(other.2 > other.0, "service code that waited is blue too: \(other)")
        #expect(svg.contains("service code, on CPU") && svg.contains("waiting in the kernel"), "a legend says so")
    }
}
