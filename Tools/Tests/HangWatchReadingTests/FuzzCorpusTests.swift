import Foundation
import HangWatchReading
import HangWatchReport
import HangWatchTestSupport
import Testing

/// The report parser's fuzz corpus (Fuzz/Corpus/report-parser), read as the CLI and the agent read
/// a report they did not write. The files the fuzzer found crashes with are in it: each has a
/// test of its own here, and every file goes through every view of a report.
@Suite struct FuzzCorpusTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/report-parser").path

    static func read(_ name: String) throws -> HangReport {
        try ReportReader().read(path: directory + "/" + name)
    }

    static var files: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test func theCorpusIsThereAndSmall() throws {
        let files = Self.files
        #expect(files.count >= 40 && files.count < 60, "\(files.count) files")
        let bytes = try files.reduce(0) { $0 + (try FileManager.default.attributesOfItem(atPath: Self.directory + "/" + $1)[.size] as! Int) }
        #expect(bytes < 1 << 20)
        // Real reports from the demo, read back whole.
        let demo = try Self.read("demo-5-sleep-symbolicated-compact.json")
        #expect(demo.service == "demo")
        #expect(ReportValidator().problems(demo).isEmpty)
    }

    /// Every file is read, or refused with a `ReportReadError`; whatever is read goes through the
    /// validator, the summary, the signature, the list and group views, and a rewrite that reads
    /// back the same. A regression traps, and takes the test run down with it.
    @Test func everyFileIsReadOrRefusedAndWhatIsReadSurvivesEveryView() throws {
        var read = 0
        var refused = 0
        for name in Self.files {
            let report: HangReport
            do {
                report = try Self.read(name)
            } catch let error as ReportReadError {
                #expect("\(error)".contains(name), "\(name): \(error)")
                refused += 1
                continue
            }
            read += 1
            _ = ReportValidator().problems(report)
            #expect(!HangReportSummary().render(report).isEmpty, "\(name)")
            #expect(StackSignature.compute(frames: report.heaviestStack?.frames ?? report.frames, images: report.images).count == 16)
            let summary = ReportSummary(report: report, path: name)
            #expect(HangGroup.group([summary, summary]).count == 1, "\(name)")
            let rewritten = try report.encoded()
            #expect(try HangReport.decode(rewritten).encoded() == rewritten, "\(name): a rewrite does not read back the same")
        }
        #expect(read >= 20 && refused >= 20, "\(read) read, \(refused) refused")
    }

    /// Found by the fuzzer: indices below zero (an image, a stack, a frame) trapped the signature,
    /// the summary and the list view, which only checked the upper end.
    @Test func negativeIndicesPointAtNothing() throws {
        let report = try Self.read("negative-indices.json")
        #expect(report.frames[0].image == -1)
        let problems = ReportValidator().problems(report)
        #expect(problems.contains { $0.hasPrefix("frames[0].image: -1 is not an index") }, "\(problems)")
        #expect(problems.contains { $0.hasPrefix("samples[0].stack: -2 is not an index") }, "\(problems)")
        #expect(report.frames[0].image(in: report.images) == nil)
        #expect(report.stack(at: -2) == nil && report.stack(at: report.stacks.count) == nil)
        #expect(report.frames(of: HangReport.Stack(frames: [-1, 0, 99], truncated: false)) == [report.frames[0]])

        // A frame with an image index out of range counts as a frame without an image.
        let heaviest = try #require(report.heaviestStack).frames
        var withoutImage = heaviest
        withoutImage[0].image = nil
        #expect(StackSignature.compute(frames: heaviest, images: report.images)
            == StackSignature.compute(frames: withoutImage, images: report.images))
        #expect(HangReportSummary().render(report).contains("#0  " + heaviest[0].address))
        #expect(ReportSummary(report: report, path: "p").stack.first == heaviest[0].address)
    }

    /// Found by the fuzzer: numbers JSON allows but Int does not (a duration of 1.7e308, an
    /// on-CPU ratio of 1e300, Int.max repeats in two reports) trapped the summary and `top`.
    @Test func hugeNumbersAreShownNotTrappedOn() throws {
        let report = try Self.read("huge-numbers.json")
        #expect(report.durationMs == 1.7e308)
        let text = HangReportSummary().render(report)
        #expect(text.contains("waiting for a CPU -1e+302% of the time"), "\(text)")
        #expect(HangReportSummary.verdictLine(try Self.read("small-valid.json")).contains("%"))
        let negative = try Self.read("negative-duration.json")
        #expect(HangReportSummary().render(negative).contains("-1000000000000000.0 s"))

        let summary = ReportSummary(report: report, path: "p")
        #expect(summary.repeats == Int.max)
        let group = try #require(HangGroup.group([summary, summary]).first)
        #expect(group.count == Int.max)
        // Int.max repeats of 1.7e308 ms: more than a Double holds, and `top --json` must write it.
        #expect(group.totalMs == .greatestFiniteMagnitude)
    }

    /// Found by the fuzzer: a time zone offset could put a timestamp past 9999-12-31 in UTC, which
    /// read, but was written back as a five-digit year that did not: a rewrite (by the agent, by
    /// `hangwatch symbolicate`) made a report unreadable. Such timestamps are refused when read.
    @Test func aTimestampPastTheYear9999InUTCIsRefused() throws {
        #expect(throws: ReportReadError.self) { try Self.read("far-timestamps.json") }
        do {
            _ = try Self.read("far-timestamps.json")
        } catch {
            #expect("\(error)".contains("field \"detectedAt\": not an RFC 3339 timestamp"), "\(error)")
        }
    }

    /// Found by the fuzzer: a report from 1970 (`detectedAt` 00:00:00.183456789Z) was rewritten as
    /// `.183Z`, then as `.182Z`: every rewrite moved its times by a millisecond.
    @Test func rewritingAReportFrom1970KeepsItsMilliseconds() throws {
        let report = try Self.read("found-epoch-millisecond-rewrite.json")
        let once = try report.encoded()
        let twice = try HangReport.decode(once).encoded()
        #expect(String(decoding: once, as: UTF8.self).contains(#""detectedAt" : "1970-01-01T00:00:00.183Z""#))
        #expect(twice == once)
    }
}
