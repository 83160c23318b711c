import Foundation
import HangWatchProfiles
import HangWatchReading
import HangWatchReport

#if canImport(Glibc)
import Glibc
#endif

/// One fuzz input, run through what the CLI and the agent run on a report file they did not write:
/// the reader (from a real file: size limit, UTF-8 check, schema probe, decode), then, when it
/// decodes, everything that works on a decoded report: the validator, the summary, the signatures
/// (by addresses, and by names: every symbol through the name rule), the labels' bounds,
/// the list and group views, frame names, the exports, and a rewrite (what the agent and
/// `hangwatch symbolicate` do). Any trap is a finding; so is a rewrite that does not read back.
enum ReportParserFuzz {
    /// Where each input is written: one file per process, in memory when `/dev/shm` is there.
    static let inputPath: String = {
        let base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NSTemporaryDirectory()
        let directory = base + "/hangwatch-fuzz-\(getpid())"
        mkdir(directory, 0o700)
        atexit {
            unlink(ReportParserFuzz.inputPath)
            rmdir((ReportParserFuzz.inputPath as NSString).deletingLastPathComponent)
        }
        return directory + "/hang-input.json"
    }()

    static func run(_ bytes: UnsafeBufferPointer<UInt8>) {
        let data = Data(buffer: bytes)
        guard FileManager.default.createFile(atPath: inputPath, contents: data) else {
            fatalError("cannot write the fuzz input to \(inputPath)")
        }
        let report: HangReport
        do {
            report = try ReportReader().read(path: inputPath)
        } catch let error as ReportReadError {
            // The error message is shown to people: building it must not trap either.
            _ = error.description
            return
        } catch {
            fatalError("the reader threw something other than a ReportReadError: \(error)")
        }
        exercise(report)
    }

    static func exercise(_ report: HangReport) {
        _ = ReportValidator().problems(report)
        _ = HangReportSummary().render(report)
        _ = HangReportSummary(maxFrames: 2).render(report)
        _ = StackSignature.compute(frames: report.heaviestStack?.frames ?? report.frames, images: report.images)
        _ = report.grouping
        for symbol in report.frames.compactMap(\.symbol) { _ = SignatureName.normalize(symbol) }
        _ = HangLabels.bounded([report.labels ?? [:], report.labels ?? [:]])
        _ = report.labels?["traceparent"].flatMap(TraceParent.init)
        let summary = ReportSummary(report: report, path: inputPath)
        _ = summary.stateWord
        for name in summary.stack + [summary.topFrame ?? ""] {
            for width in [0, 1, 2, 12, 40] { _ = FrameNaming.fit(name, width: width) }
        }
        // `hangwatch top --json` writes these: JSON has no infinity.
        for group in HangGroup.group([summary, summary]) where ![group.totalMs, group.p50Ms, group.p95Ms, group.maxMs].allSatisfy(\.isFinite) {
            fatalError("a group's times are not finite: \(group.totalMs) \(group.p50Ms) \(group.p95Ms) \(group.maxMs)")
        }
        for key in summary.labels.keys.prefix(2) { _ = HangGroup.group([summary, summary], byLabel: key) }
        _ = FoldedStacks.render([report])
        _ = try? SpeedscopeExport.render([report])
        _ = FlameGraphSVG.render([report], title: report.service)
        rewrite(report)
    }

    /// A report that reads is rewritten (by the agent, by `hangwatch symbolicate`): its encoding
    /// must read back, and a second rewrite must change nothing.
    static func rewrite(_ report: HangReport) {
        let first: Data
        do {
            first = try report.encoded()
        } catch {
            fatalError("a report that was read cannot be written again: \(error)")
        }
        let reread: HangReport
        do {
            reread = try HangReport.decode(first)
        } catch {
            fatalError("a rewritten report does not read back: \(error)")
        }
        guard let second = try? reread.encoded(), second == first else {
            let before = String(decoding: first, as: UTF8.self).split(separator: "\n")
            let after = ((try? reread.encoded()).map { String(decoding: $0, as: UTF8.self) } ?? "").split(separator: "\n")
            let line = before.indices.first { $0 >= after.count || before[$0] != after[$0] } ?? before.count
            fatalError("rewriting a report twice changes line \(line + 1): \(before.dropFirst(line).first ?? "") -> \(after.dropFirst(line).first ?? "")")
        }
    }
}

/// libFuzzer's entry point.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReportParser(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    ReportParserFuzz.run(UnsafeBufferPointer(start: start, count: count))
    return 0
}
