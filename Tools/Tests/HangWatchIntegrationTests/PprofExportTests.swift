import Foundation
import HangWatchProfiles
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// pprof profiles, read back by the official reader: `go tool pprof` (Debian's golang-go).
@Suite struct PprofExportTests {
    static let go = ["/usr/bin/go", "/usr/lib/go/bin/go"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// `go tool pprof arguments… file` on `reports`' profile: what it printed.
    static func pprof(_ reports: [HangReport], _ arguments: [String]) throws -> String {
        let directory = ReportDirectory().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/hangs.pb.gz"
        try PprofExport.render(reports).write(to: URL(fileURLWithPath: path))
        let result = try ExecutableRun.run(
            try #require(go), ["tool", "pprof"] + arguments + [path], environment: ["HOME": directory, "PPROF_TMPDIR": directory],
            timeout: 120)
        try #require(result.status == 0, "\(result.errors)")
        return result.output
    }

    @Test(.enabled(if: go != nil, "golang-go is not installed"))
    func goToolPprofReadsEverySampleWithItsTimeAndStack() throws {
        // Two hangs of one service: 3 samples of compute ← handle ← main, then a truncated stack.
        let computing = StackReports.report(
            durationMs: 400, samples: [(250, ["compute", "handle", "main"]), (300, ["compute", "handle", "main"]), (350, ["wait", "handle", "main"])])
        var truncated = StackReports.report(service: "cart", durationMs: 300, samples: [(250, ["read", "helper"])])
        truncated.stacks[0].truncated = true
        truncated.stacks[0].truncation = "no unwind information"
        let raw = try Self.pprof([computing, truncated], ["-raw"])
        #expect(raw.contains("PeriodType: wall nanoseconds"), "\(raw)")
        #expect(raw.contains("samples/count wall/nanoseconds[dflt]"))
        // Sample lines: "<count> <wall ns>: <location ids>".
        let values = raw.split(separator: "\n").compactMap { line -> (Int, Int)? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            let numbers = parts[0].split(separator: " ").compactMap { Int($0) }
            return numbers.count == 2 ? (numbers[0], numbers[1]) : nil
        }
        // (pprof merges samples with the same stack and labels.)
        #expect(values.map(\.0).reduce(0, +) == 4, "\(values)")
        // Each sample stands for the time until the next (the last: until the hang ended).
        #expect(values.map(\.1).reduce(0, +) == 200_000_000, "\(values)")
        #expect(raw.contains("service:[cart]") && raw.contains("service:[billing]"))

        let top = try Self.pprof([computing, truncated], ["-top", "-nodecount=50"])
        // compute is the leaf of two samples (100 ms); handle and main hold all of billing's.
        let compute = try #require(top.split(separator: "\n").first { $0.hasSuffix(" compute") }, "\(top)")
        #expect(compute.hasPrefix("     100ms"), "\(compute)")
        #expect(top.split(separator: "\n").contains { $0.hasSuffix(" main") && $0.contains("150ms") }, "\(top)")
        // The truncated stack's root is its marker, not its last proven frame.
        #expect(top.contains("[stack stops: no unwind information]"), "\(top)")
        #expect(top.contains("File: billing"), "the main executable is the profile's program: \(top)")
    }

    @Test(.enabled(if: go != nil, "golang-go is not installed"))
    func theDemosHangsKeepTheirCulpritsAndSourceLines() throws {
        // Symbolicated, as the CLI exports them.
        let reports = ReportDirectory(path: try DemoReports.directory.get()).reports()
        try #require(reports.count == 5)
        let top = try Self.pprof(reports, ["-top", "-nodecount=100"])
        for culprit in ["recomputePricing", "waitForCacheLock", "flushAuditLogSynchronously", "renderModalFrame", "parseInventorySnapshot"] {
            #expect(top.contains(culprit), "\(culprit) missing: \(top)")
        }
        // One pprof sample per sample with a stack, and one per holder of what a thread waited for
        // (the cache-lock demo's writer, labelled role=holder).
        let samples = reports.flatMap(\.samples).filter { $0.stack != nil }.count
        let holders = reports.map { SampledStacks.holders(of: $0).count }.reduce(0, +)
        #expect(holders >= 1, "the cache-lock demo's holder is exported: \(reports.map { String(describing: $0.waitsFor) })")
        let raw = try Self.pprof(reports, ["-raw"])
        let counted = raw.split(separator: "\n").compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { return nil }
            let numbers = parts[0].split(separator: " ").compactMap { Int($0) }
            return numbers.count == 2 ? numbers[0] : nil
        }.reduce(0, +)
        #expect(counted == samples + holders)
    }
}
