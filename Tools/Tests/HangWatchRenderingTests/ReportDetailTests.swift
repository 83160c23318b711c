import Foundation
import HangWatchRendering
import HangWatchReport
import HangWatchTestSupport
import Testing

/// `hangwatch show`'s text of one report, as strings, without running the binary.
@Suite(.serialized) struct ReportDetailTests {
    static func render(_ report: HangReport, width: Int = 100, colors: Bool = false, frames: Int = 16) -> [String] {
        Text.utc = true
        return ReportDetail(terminal: Terminal(colors: colors, width: width), maxFrames: frames)
            .render(report, path: "/var/lib/hangwatch/reports/hang.json").split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
    }

    @Test func theHeaderSaysWhichHangWhoAndWhen() {
        let lines = Self.render(ReportFixtures.report())
        #expect(lines.first == "hang 20261122T010203123Z-billing-42-1")
        #expect(lines.contains("service   billing (pid 42, host host-1), thread billing, tid 42, main"), "\(lines)")
        #expect(lines.contains("started   2026-11-18 11:06:40.123 UTC, lasted 713ms (threshold 250ms)"), "\(lines)")
        #expect(lines.contains("outcome   recovered"), "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("release") }, "a report that names no release shows none")
    }

    @Test func theReleaseSaysWhereItCameFrom() {
        var report = ReportFixtures.report()
        report.serviceVersion = ServiceVersion(version: "1.1.0", source: .openTelemetry)
        #expect(Self.render(report).contains("release   1.1.0 (from OTEL_RESOURCE_ATTRIBUTES)"))
    }

    @Test func theHeaviestStackNamesItsFramesInnermostFirst() throws {
        let lines = Self.render(ReportFixtures.report())
        let start = try #require(lines.firstIndex { $0.hasPrefix("heaviest stack") }, "\(lines)")
        #expect(lines[start] == "heaviest stack (1 of 2 samples, 50ms)")
        // Innermost first; a frame without a symbol is its image and offset; a named one has its
        // file and line after it (the signature's `-> ()` is left out).
        let frames = Array(lines[(start + 1)...].prefix { !$0.isEmpty })
        #expect(frames == ["  #0  libc.so.6+0x1000", "  #1  billing.recompute() Billing.swift:42", "  #2  billing+0x1020"])
    }

    @Test func noCutLineIsWiderThanTheTerminal() {
        var report = ReportFixtures.report(frames: 12)
        report.labels = ["tenant": String(repeating: "a", count: 200)]
        let lines = Self.render(report, width: 60)
        // Only the path (to copy) is kept whole.
        let cut = lines.filter { !$0.hasPrefix("file ") }
        #expect(cut.allSatisfy { $0.count <= 60 }, "\(cut.filter { $0.count > 60 })")
        #expect(lines.contains { $0.hasPrefix("labels    tenant=aaa") && $0.hasSuffix("…") }, "\(lines)")
    }

    @Test(arguments: [
        (source: "dispatch-main", edges: "sampled", expected: "edges     sampled: start from looks 50ms apart (to 25ms), end at a ping's answer"),
        (source: "pool-job", edges: "sampled", expected: "edges     sampled: each edge to 25ms (looks 50ms apart), or by CPU time"),
        (source: "dispatch-queue", edges: "ping", expected: "edges     ping: a lower bound (from when an overdue ping was sent)"),
        (source: "runloop", edges: "exact", expected: "edges     exact: where the work began and ended"),
    ])
    func theEdgesLineSaysHowTheStartAndEndWereFound(_ row: (source: String, edges: String, expected: String)) {
        var report = ReportFixtures.report()
        report.source = row.source
        report.edges = row.edges
        #expect(Self.render(report, width: 200).contains(row.expected))
    }

    @Test func colourIsOnlyOnATerminalThatHasIt() {
        #expect(!Self.render(ReportFixtures.report()).joined().contains("\u{1b}["))
        #expect(Self.render(ReportFixtures.report(), colors: true).first == "\u{1b}[1mhang 20261122T010203123Z-billing-42-1\u{1b}[0m")
    }
}
