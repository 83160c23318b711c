import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

@Suite(.serialized) struct ShowCommandTests {
    /// Frame names are as wide as the longest one shown, not the terminal: at 300 columns the
    /// stack reads as at 120, each file:line one space after the widest name.
    @Test func theStackIsAsWideAsItsNamesNotTheTerminal() throws {
        let fixture = try Fixture()
        let wide = try fixture.hangwatch(["show", "latest"], environment: ["COLUMNS": "300"])
        let wider = try fixture.hangwatch(["show", "latest"], environment: ["COLUMNS": "120"])
        #expect(wide.status == 0, "\(wide.errors)")
        func stack(_ result: CommandResult) -> [String] {
            Array(result.lines.drop { !$0.hasPrefix("heaviest stack") }.dropFirst().prefix { !$0.isEmpty })
        }
        // Frames with a file and line (frames without one are cut only to the terminal's width).
        func located(_ result: CommandResult) -> [String] {
            stack(result).filter { $0.range(of: #"\.(swift|c|h):\d+$"#, options: .regularExpression) != nil }
        }
        #expect(!located(wide).isEmpty, "\(wide.output)")
        #expect(located(wide) == located(wider), "\(stack(wide))\n\(stack(wider))")
        #expect(located(wide).contains { $0.range(of: #"\S \S+:\d+$"#, options: .regularExpression) != nil }, "\(located(wide))")
        #expect(located(wide).allSatisfy { $0.count < 120 }, "\(located(wide).map(\.count))")
    }

    /// A dispatch worker's or an event loop's kernel name says little; show says what the thread is.
    @Test func aWellKnownThreadNameIsExplained() throws {
        let fixture = try Fixture(withDemoReports: false)
        var report = ReportFixtures.report()
        report.thread.name = "-qos.overcommit"
        try ReportStore(directory: fixture.directory).write(report)
        let result = try fixture.hangwatch("show", "latest")
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.lines.contains { $0.hasPrefix("thread ") && $0.contains("libdispatch worker, overcommit pool") }, "\(result.output)")
        report.thread.name = "billing-main"
        let other = try Fixture(withDemoReports: false)
        try ReportStore(directory: other.directory).write(report)
        #expect(!(try other.hangwatch("show", "latest")).lines.contains { $0.hasPrefix("thread ") })
    }

    /// The edges line says how the start and end were found, in the source's terms: a queue's
    /// sampled start ends at a ping's answer, a pool job's both edges are looks.
    @Test func theEdgesLineSaysHowTheStartAndEndWereFound() throws {
        for (source, edges, expected) in [
            ("dispatch-main", "sampled", "start from looks 50ms apart (to 25ms), end at a ping's answer"),
            ("pool-job", "sampled", "sampled: each edge to 25ms (looks 50ms apart), or by CPU time"),
            ("dispatch-queue", "ping", "ping: a lower bound (from when an overdue ping was sent)"),
            ("nio-eventloop", "sampled", "sampled: start by a look (to 63ms), end at a ping's answer"),
        ] {
            let fixture = try Fixture(withDemoReports: false)
            var report = ReportFixtures.report()
            report.source = source
            report.edges = edges
            report.capture.sampleIntervalMs = 50
            report.thresholdMs = 250
            try ReportStore(directory: fixture.directory).write(report)
            let result = try fixture.hangwatch("show", "latest")
            #expect(result.status == 0, "\(result.errors)")
            let line = try #require(result.lines.first { $0.hasPrefix("edges ") }, "\(result.output)")
            #expect(line.contains(expected), "\(source): \(line)")
        }
    }

    /// The labels in effect are one line, sorted by key, with how many were left out; the
    /// signature line says which kind groups the report.
    @Test func theLabelsAndTheSignatureKindAreShown() throws {
        let fixture = try Fixture(withDemoReports: false)
        var report = ReportFixtures.report()
        report.labels = ["tenant": "acme", "route": "GET /checkout"]
        report.labelsOmitted = 2
        try ReportStore(directory: fixture.directory).write(report)
        let result = try fixture.hangwatch(["show", "latest"], environment: ["COLUMNS": "300"])
        #expect(result.status == 0, "\(result.errors)")
        let labels = try #require(result.lines.first { $0.hasPrefix("labels ") }, "\(result.output)")
        #expect(labels.hasSuffix("route=GET /checkout, tenant=acme (2 more left out)"), "\(labels)")
        let signature = try #require(result.lines.first { $0.hasPrefix("signature ") }, "\(result.output)")
        // The fixture's binary is not on this machine: no names, by addresses.
        #expect(signature.contains("\(report.signature) by addresses"), "\(signature)")
        let plain = try Fixture(withDemoReports: false)
        try ReportStore(directory: plain.directory).write(ReportFixtures.report())
        #expect(!(try plain.hangwatch(["show", "latest"])).lines.contains { $0.hasPrefix("labels ") })
        // The demo's reports are named on the fly: by names.
        let demo = try Fixture()
        let named = try #require(try demo.hangwatch(["show", "latest"], environment: ["COLUMNS": "300"]).lines.first { $0.hasPrefix("signature ") })
        #expect(named.contains(" by names (by addresses: "), "\(named)")
    }

    /// A capture that cut the thread's system call short is said on the capture line; none, nothing.
    @Test func theCaptureLineSaysWhenACaptureCutACallShort() throws {
        let fixture = try Fixture(withDemoReports: false)
        var report = ReportFixtures.report()
        report.capture.callsCutShort = 2
        try ReportStore(directory: fixture.directory).write(report)
        let result = try fixture.hangwatch(["show", "latest"], environment: ["COLUMNS": "300"])
        #expect(result.status == 0, "\(result.errors)")
        let line = try #require(result.lines.first { $0.hasPrefix("capture ") }, "\(result.output)")
        #expect(line.contains("2 captures cut a system call short (EINTR)"), "\(line)")
        let clean = try Fixture(withDemoReports: false)
        try ReportStore(directory: clean.directory).write(ReportFixtures.report())
        #expect(!(try clean.hangwatch(["show", "latest"], environment: ["COLUMNS": "300"])).output.contains("cut a system call short"))
    }

    /// Async callers come from the task's context chain, not the thread's stack: show says where
    /// they begin, and why they stop when they stop early.
    @Test func asyncCallersAreSetApart() throws {
        let fixture = try Fixture(withDemoReports: false)
        var report = ReportFixtures.report(frames: 4)
        report.frames[2].async = true
        report.stacks[0].asyncCallers = "async context unreadable"
        report.heaviestStack?.frames = report.stacks[0].frames.map { report.frames[$0] }
        try ReportStore(directory: fixture.directory).write(report)
        let result = try fixture.hangwatch("show", "latest")
        #expect(result.status == 0, "\(result.errors)")
        let lines = result.lines
        let marker = try #require(lines.firstIndex { $0.contains("async callers, from the task's chain") }, "\(result.output)")
        #expect(lines[marker + 1].hasPrefix("  #2"), "\(result.output)")
        #expect(lines[marker + 2].contains("the async callers stop here: async context unreadable"), "\(result.output)")
        #expect(lines[marker + 3].contains("the thread's stack again") && lines[marker + 4].hasPrefix("  #3"), "\(result.output)")
    }

    @Test func latestExplainsTheNewestHang() throws {
        let fixture = try Fixture()
        let newest = try #require(try DemoReports.reports().max { $0.startedAt < $1.startedAt })
        let result = try fixture.hangwatch("show", "latest")
        #expect(result.status == 0, "\(result.errors)")
        let lines = result.lines
        #expect(lines.first == "hang \(newest.id)")
        // All but the file's path, which is never cut.
        #expect(lines.allSatisfy { $0.count <= 80 || $0.hasPrefix("file ") }, "\(lines.filter { $0.count > 80 })")
        func field(_ name: String) -> String? {
            lines.first { $0.hasPrefix(name + " ") }.map { String($0.dropFirst(10)) }
        }
        #expect(field("service")?.hasPrefix("demo (pid \(newest.pid)") == true)
        #expect(field("started")?.contains("threshold \(Int(newest.thresholdMs))ms") == true)
        #expect(field("stuck")?.hasPrefix("after \(newest.activity)") == true)
        // The newest demo hang is the audit-log flush: a sleep.
        #expect(field("verdict") == "blocked in clock_nanosleep (on CPU \(Int(((newest.context.onCpuRatio ?? 0) * 100).rounded()))%)")
        #expect(lines.contains { $0.hasPrefix("heaviest stack (") })
        // Demangled names with file:line, symbolicated on the fly.
        let frame = try #require(lines.first { $0.contains("DemoService.flushAuditLogSynchronously(milliseconds:)") })
        #expect(frame.contains("DemoService.swift:"))
        #expect(lines.contains { $0.hasPrefix("timeline (\(newest.samples.count) samples") })
        let marks = try #require(lines.first { $0.hasPrefix("  stack ") })
        #expect(marks.dropFirst(8).count == newest.samples.count)
        #expect(field("context")?.contains("RSS") == true)
        #expect(field("file")?.hasSuffix(ReportStore.fileName(forID: newest.id)) == true)
    }

    @Test func aStackThatStoppedSaysWhereAndWhyAndABlockedOneHowItsFramePointerWasFound() throws {
        let fixture = try Fixture(withDemoReports: false)
        var report = try #require(try DemoReports.reports().first)
        report.id = "20261122T010203000Z-demo-1-1"
        let heaviest = try #require(report.heaviestStack)
        report.stacks[heaviest.stack].truncated = true
        report.stacks[heaviest.stack].truncation = "frame pointer ambiguous"
        report.stacks[heaviest.stack].framePointer = nil
        try fixture.write(try report.encoded(), name: ReportStore.fileName(forID: report.id))
        let stopped = try fixture.hangwatch("show", report.id)
        #expect(stopped.status == 0, "\(stopped.errors)")
        #expect(stopped.lines.contains { $0.contains("stops here: frame pointer ambiguous") }, "\(stopped.output)")

        report.stacks[heaviest.stack].truncated = false
        report.stacks[heaviest.stack].truncation = nil
        report.stacks[heaviest.stack].framePointer = "prologue"
        try fixture.write(try report.encoded(), name: ReportStore.fileName(forID: report.id))
        let blocked = try fixture.hangwatch("show", report.id)
        #expect(!blocked.output.contains("stops here"))
        #expect(blocked.lines.contains { $0.hasPrefix("unwound ") && $0.hasSuffix("frame pointer from the prologue") }, "\(blocked.output)")
    }

    @Test func anIdAUniquePrefixAndAPathShowTheSameReport() throws {
        let fixture = try Fixture()
        let report = try #require(try DemoReports.reports().first)
        let byID = try fixture.hangwatch("show", report.id)
        #expect(byID.status == 0)
        let byPrefix = try fixture.hangwatch("show", String(report.id.dropLast(2)) + String(report.id.suffix(2)))
        #expect(byPrefix.output == byID.output)
        let byPath = try fixture.hangwatch("show", fixture.directory + "/" + ReportStore.fileName(forID: report.id))
        #expect(byPath.output == byID.output)
        #expect(byID.lines.first == "hang \(report.id)")
    }

    @Test func withoutSymbolicationFramesAreImageAndOffset() throws {
        let fixture = try Fixture()
        let result = try fixture.hangwatch("show", "latest", "--no-symbolicate")
        #expect(result.status == 0)
        #expect(result.output.contains("hangwatch-demo+0x"))
        #expect(!result.output.contains("flushAuditLogSynchronously"))
    }

    @Test func jsonIsTheWholeReportSymbolicated() throws {
        let fixture = try Fixture()
        let result = try fixture.hangwatch("show", "latest", "--json")
        #expect(result.status == 0)
        let report = try HangReport.makeDecoder().decode(HangReport.self, from: Data(result.output.utf8))
        #expect(report.frames.contains { $0.symbol?.contains("flushAuditLogSynchronously") == true })
    }

    @Test func unknownAmbiguousAndUnreadableReportsHaveTheirOwnExitCodes() throws {
        let fixture = try Fixture()
        let missing = try fixture.hangwatch("show", "19990101T000000000Z-nope")
        #expect(missing.status == 1)
        #expect(missing.errors.contains("no report 19990101T000000000Z-nope"))
        // Every demo report id starts with the same date.
        let ambiguous = try fixture.hangwatch("show", "2")
        #expect(ambiguous.status == 2)
        #expect(ambiguous.errors.contains("matches"))
        let broken = try fixture.write(Data("{\"schema\":".utf8), name: "hang-20000101T000000000Z-x-1-1.json")
        let unreadable = try fixture.hangwatch("show", broken)
        #expect(unreadable.status == 3)
        #expect(unreadable.errors.contains(broken))
        let empty = try Fixture(withDemoReports: false)
        #expect(try empty.hangwatch("show", "latest").status == 1)
    }
}
