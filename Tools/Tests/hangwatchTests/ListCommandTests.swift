import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

@Suite(.serialized) struct ListCommandTests {
    @Test func aTableNewestFirstThatFitsEightyColumns() throws {
        let fixture = try Fixture()
        let reports = try DemoReports.reports().sorted { $0.startedAt > $1.startedAt }
        let result = try fixture.hangwatch("list")
        #expect(result.status == 0, "\(result.errors)")
        #expect(result.errors.isEmpty)
        let lines = result.lines
        try #require(lines.count == reports.count + 1, "\(result.output)")
        // The time column's header is its zone (with STARTED when rows carry dates).
        #expect(lines[0].range(of: #"^(STARTED )?(UTC|[+-]\d\d:\d\d) "#, options: .regularExpression) != nil, "\(lines[0])")
        for column in ["SERVICE", "PID", "DUR", "CPU", "DOING", "TOP FRAME", "SIG"] { #expect(lines[0].contains(column)) }
        #expect(lines.allSatisfy { $0.count <= 80 }, "\(lines.map(\.count))")
        // Not a terminal: no colour codes.
        #expect(!result.output.contains("\u{1b}["))
        // One row per report, in the same order as their start times, each with the signature
        // it is grouped by (by names: the frames are named on the fly), as the JSON says it.
        let json = try HangReport.makeDecoder().decode([ReportSummary].self, from: Data(try fixture.hangwatch("list", "--json").output.utf8))
        for (line, report) in zip(lines.dropFirst(), reports) {
            let summary = try #require(json.first { $0.id == report.id })
            #expect(summary.signatureKind == .names)
            #expect(line.hasSuffix(String(summary.signature.prefix(8))), "\(line)")
            #expect(line.contains(String(report.pid)))
        }
        // The lock wait is listed as a futex wait, the sleep as a sleep, the rest as computing.
        #expect(lines.contains { $0.contains("futex") && $0.contains("waitForCacheLock") })
        #expect(lines.contains { $0.contains("sleep") && $0.contains("flushAuditLog") })
        // (A compute hang that waited for a CPU the machine's other work held is listed starved.)
        #expect(lines.filter { $0.contains("computing") || $0.contains("starved") }.count == 3, "\(lines)")
    }

    /// A wide terminal does not spread the columns apart: each is as wide as its widest cell, the
    /// same at 120 columns as at 300; at 80 the top frame is what gives way.
    @Test func columnsAreAsWideAsTheirContentNotTheTerminal() throws {
        let fixture = try Fixture()
        let wide = try fixture.hangwatch(["list"], environment: ["COLUMNS": "300"])
        let wider = try fixture.hangwatch(["list"], environment: ["COLUMNS": "120"])
        let narrow = try fixture.hangwatch(["list"], environment: ["COLUMNS": "80"])
        #expect(wide.status == 0, "\(wide.errors)")
        #expect(wide.output == wider.output, "\(wide.output)\n\(wider.output)")
        #expect(narrow.lines.allSatisfy { $0.count <= 80 }, "\(narrow.lines.map(\.count))")
        let lines = wide.lines
        let longest = try #require(lines.map(\.count).max())
        #expect(longest < 120, "\(lines.map(\.count))")
        // The widest top frame reaches the signature's column (one space before it).
        let header = try #require(lines.first)
        let signature = try #require(header.range(of: " SIG")).lowerBound.utf16Offset(in: header)
        #expect(lines.dropFirst().contains { Array($0)[signature - 1] != " " }, "\(wide.output)")
    }

    @Test func jsonSummariesMatchTheReports() throws {
        let fixture = try Fixture()
        let reports = try DemoReports.reports()
        let result = try fixture.hangwatch("list", "--json")
        #expect(result.status == 0, "\(result.errors)")
        let summaries = try HangReport.makeDecoder().decode([ReportSummary].self, from: Data(result.output.utf8))
        #expect(summaries.count == reports.count)
        #expect(summaries.map(\.startedAt) == summaries.map(\.startedAt).sorted(by: >))
        for summary in summaries {
            let report = try #require(reports.first { $0.id == summary.id })
            #expect(summary.durationMs == report.durationMs)
            // Named on the fly: grouped by names (the file's own signature is by addresses).
            #expect(summary.signatureKind == .names)
            #expect(summary.signature != report.signature && summary.signature.count == 16)
            #expect(summary.verdict == report.context.verdict)
            #expect(summary.service == "demo")
        }
        // Names come from symbolication on the fly: the reports on disk hold raw frames (but for the
        // vDSO's, named at capture: no file holds it).
        #expect(reports.allSatisfy { report in
            report.frames.allSatisfy { frame in
                frame.symbol == nil || frame.image.map { report.images[$0].path.contains("vdso") } == true
            }
        })
        // The first app frame of the heaviest stack is the innermost: the loop recomputePricing calls.
        let pricing = try #require(summaries.first { $0.stack.contains { $0.contains("recomputePricing") } })
        #expect(pricing.topFrame == "DemoService.busyCompute(milliseconds:)")
    }

    @Test func filtersAndLimit() throws {
        let fixture = try Fixture()
        let reports = try DemoReports.reports()
        func ids(_ arguments: String...) throws -> (Int32, Set<String>) {
            let run = try Hangwatch.run(["list", "--json", "--dir", fixture.directory] + arguments, cache: fixture.cache)
            let summaries = (try? HangReport.makeDecoder().decode([ReportSummary].self, from: Data(run.output.utf8))) ?? []
            return (run.status, Set(summaries.map(\.id)))
        }
        let longest = try #require(reports.map(\.durationMs).max())
        let (status, long) = try ids("--min-duration", "\(Int(longest))ms")
        #expect(status == 0)
        #expect(long == Set(reports.filter { $0.durationMs >= Double(Int(longest)) }.map(\.id)))
        #expect(try ids("--limit", "2").1.count == 2)
        #expect(try ids("--since", "1h").1.count == reports.count)
        #expect(try ids("--service", "demo").1.count == reports.count)
        // Nothing matches: exit 1, and the JSON is still an array.
        let none = try Hangwatch.run(["list", "--json", "--service", "nobody", "--dir", fixture.directory], cache: fixture.cache)
        #expect(none.status == 1)
        #expect(try HangReport.makeDecoder().decode([ReportSummary].self, from: Data(none.output.utf8)).isEmpty)
        // A start time after every hang.
        let later = ReportTimestamp.format(Date().addingTimeInterval(3600))
        #expect(try ids("--since", later).0 == 1)
    }

    /// The demo labels two hangs (`route=GET /cart`, `route=GET /checkout`): the README's example
    /// lists the one asked for; a value asked in part (`route=/checkout`) matches nothing, and the
    /// answer says why and how to ask, and asking so finds it.
    @Test func aLabelValueAskedInPartSaysHowToAskForIt() throws {
        let fixture = try Fixture()
        let demo = try DemoReports.reports()
        let checkout = demo.filter { $0.labels?["route"] == "GET /checkout" }.map(\.id)
        try #require(checkout.count == 1, "the demo's labels: \(demo.map { $0.labels ?? [:] })")
        func ids(_ result: CommandResult) -> [String] {
            ((try? HangReport.makeDecoder().decode([ReportSummary].self, from: Data(result.output.utf8))) ?? []).map(\.id)
        }
        #expect(ids(try fixture.hangwatch("list", "--json", "--label", "route=GET /checkout")) == checkout)
        let part = try fixture.hangwatch("list", "--label", "route=/checkout")
        #expect(part.status == 1)
        #expect(
            part.errors == "hangwatch: no hangs match: --label route=/checkout matches whole values only (there is route=GET /checkout); "
                + "for part of a value: --label 'route=*/checkout*'\n", "\(part.errors)")
        #expect(ids(try fixture.hangwatch("list", "--json", "--label", "route=*/checkout*")) == checkout)
        // No hint where the value is not there at all, or where other filters leave no such hang.
        let absent = try fixture.hangwatch("list", "--label", "route=/nowhere")
        #expect(absent.status == 1 && absent.errors == "hangwatch: no hangs match\n", "\(absent.errors)")
        let filtered = try fixture.hangwatch("list", "--label", "route=/checkout", "--service", "billing")
        #expect(filtered.status == 1 && filtered.errors == "hangwatch: no hangs match\n", "\(filtered.errors)")
    }

    @Test func onlyHangsWithTheLabelsAsked() throws {
        let fixture = try Fixture(withDemoReports: false)
        let reports = try DemoReports.reports()
        let store = ReportStore(directory: fixture.directory)
        var routes: [String: String] = [:]
        for (index, report) in reports.enumerated() {
            var labelled = report
            let route = ["/checkout", "/checkout/pay", "/cart"][index % 3]
            labelled.labels = ["route": route, "tenant": index == 0 ? "globex" : "acme"]
            routes[report.id] = route
            _ = try store.write(labelled)
        }
        func ids(_ arguments: String...) throws -> Set<String> {
            let run = try fixture.hangwatch(["list", "--json"] + arguments)
            return Set((try? HangReport.makeDecoder().decode([ReportSummary].self, from: Data(run.output.utf8)))?.map(\.id) ?? [])
        }
        #expect(try ids("--label", "route=/checkout") == Set(routes.filter { $0.value == "/checkout" }.keys))
        #expect(try ids("--label", "route=/checkout*") == Set(routes.filter { $0.value.hasPrefix("/checkout") }.keys))
        #expect(try ids("--label", "route=/checkout*", "--label", "tenant=acme") == Set(routes.filter { $0.value.hasPrefix("/checkout") && $0.key != reports[0].id }.keys))
        #expect(try ids("--label", "tenant").count == reports.count)
        #expect(try ids("--label", "request").isEmpty)
        // The labels are in the JSON summaries.
        let json = try fixture.hangwatch("list", "--json", "--label", "route=/cart")
        let summaries = try HangReport.makeDecoder().decode([ReportSummary].self, from: Data(json.output.utf8))
        #expect(!summaries.isEmpty && summaries.allSatisfy { $0.labels["route"] == "/cart" })
        let bad = try fixture.hangwatch("list", "--label", "=x")
        #expect(bad.status == 2 && bad.errors.contains("--label"), "\(bad.errors)")
    }

    /// `--pod`, `--namespace` and `--container` keep the hangs of the processes that ran there (a
    /// pattern as the shell's; a container by the start of its id or by its name); a hang whose
    /// report does not say where it ran matches none of them.
    @Test func onlyHangsOfThePodsNamespacesAndContainersAsked() throws {
        let fixture = try Fixture(withDemoReports: false)
        let reports = try TopCommandTests.podReports()
        let store = ReportStore(directory: fixture.directory)
        for report in reports { _ = try store.write(report) }
        func ids(_ arguments: String...) throws -> Set<String> {
            let run = try fixture.hangwatch(["list", "--json"] + arguments)
            #expect(run.status == 0 || run.status == 1, "\(arguments): \(run.errors)")
            return Set((try? HangReport.makeDecoder().decode([ReportSummary].self, from: Data(run.output.utf8)))?.map(\.id) ?? [])
        }
        let all = reports.map(\.id)
        #expect(try ids("--pod", "billing-a") == Set(all[1...3]))
        #expect(try ids("--pod", "shop/billing-*") == Set(all[1...]))
        #expect(try ids("--pod", "other/billing-a").isEmpty)
        #expect(try ids("--pod", "billing-a", "--pod", "billing-b") == Set(all[1...]))
        #expect(try ids("--namespace", "shop") == Set(all[1...]))
        #expect(try ids("--container", "3f2a1b4c3f2a") == Set(all[1...2]))
        #expect(try ids("--container", "app") == [all[1], all[2], all[4]])
        #expect(try ids("--container", "app", "--pod", "billing-b") == [all[4]])
        #expect(try ids("--container", "9E8D") == [all[3]])
        #expect(try fixture.hangwatch("list", "--pod", "nowhere").status == 1)
        #expect(try fixture.hangwatch("list", "--pod", "").status == 2)
    }

    @Test func badOptionsAreUsageErrors() throws {
        let fixture = try Fixture(withDemoReports: false)
        for arguments in [["--since", "last tuesday"], ["--until", "soon"], ["--min-duration", "fast"], ["--limit", "0"], ["--no-such-flag"], ["--label", ""]] {
            let result = try fixture.hangwatch(["list"] + arguments)
            #expect(result.status == 2, "\(arguments): \(result.errors)")
            #expect(!result.errors.isEmpty)
        }
    }

    /// `--since` and `--until` as journalctl takes them, end to end.
    @Test func sinceAndUntilTakeJournalctlTimes() throws {
        let fixture = try Fixture()
        func count(_ arguments: String...) throws -> Int {
            let result = try fixture.hangwatch(["list", "--json"] + arguments)
            let summaries = try? HangReport.makeDecoder().decode([ReportSummary].self, from: Data(result.output.utf8))
            return try #require(summaries, "\(arguments): \(result.output) \(result.errors)").count
        }
        let all = try count()
        #expect(all == 5)
        #expect(try count("--since", "yesterday") == all)
        #expect(try count("--since", "-1h", "--until", "now") == all)
        #expect(try count("--until", "1h ago") == 0)
        #expect(try count("--since", "+1h") == 0)
    }

    /// A range no hang can be in (`--until` not after `--since`) is a usage error that shows both
    /// times, not an empty answer.
    @Test func anEmptyRangeIsAUsageErrorThatShowsBothTimes() throws {
        let fixture = try Fixture()
        for command in [["list"], ["top"], ["export", "--all"]] {
            let result = try fixture.hangwatch(command + ["--since", "yesterday", "--until", "2026-11-20 10:00", "--utc"])
            #expect(result.status == 2, "\(command): \(result.status) \(result.errors)")
            #expect(result.errors.contains("--until 2026-11-20 10:00 (") && result.errors.contains("is not after --since yesterday ("), "\(result.errors)")
            #expect(result.errors.contains("no hang can match"), "\(result.errors)")
        }
        // Equal times are empty too; a real range is fine.
        #expect(try fixture.hangwatch(["list", "--since", "2026-11-20 10:00", "--until", "2026-11-20 10:00"]).status == 2)
        #expect(try fixture.hangwatch(["list", "--since", "2026-11-20 10:00", "--until", "+1h"]).status == 0)
    }

    /// Without --dir or $HANGWATCH_REPORT_DIR: the agent's spool if there is one, else the demo's
    /// directory here; with neither, the error says where it looked.
    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/var/lib/hangwatch/reports"), "this host has an agent spool"))
    func theDirectoryIsFoundWithoutBeingNamed() throws {
        let fixture = try Fixture()
        let here = fixture.root + "/here"
        try FileManager.default.createDirectory(atPath: here, withIntermediateDirectories: true)
        let nothing = try Hangwatch.run(["list"], cache: fixture.cache, workingDirectory: here)
        #expect(nothing.status == 3)
        #expect(nothing.errors.contains("neither /var/lib/hangwatch/reports (the agent's spool) nor ./hangwatch-reports (the demo's) exists"), "\(nothing.errors)")
        #expect(nothing.errors.contains("give --dir or set HANGWATCH_REPORT_DIR"))
        try FileManager.default.copyItem(atPath: fixture.directory, toPath: here + "/hangwatch-reports")
        let found = try Hangwatch.run(["list", "--json"], cache: fixture.cache, workingDirectory: here)
        #expect(found.status == 0, "\(found.errors)")
        #expect(found.output.components(separatedBy: "\"signature\"").count - 1 == 5)
        let byEnvironment = try Hangwatch.run(
            ["list", "--json"], cache: fixture.cache, environment: ["HANGWATCH_REPORT_DIR": fixture.root + "/nowhere"], workingDirectory: here)
        #expect(byEnvironment.status == 3)
        #expect(byEnvironment.errors.contains("report directory \(fixture.root)/nowhere does not exist (HANGWATCH_REPORT_DIR="), "\(byEnvironment.errors)")
    }

    /// A report with folded repeats says how many hangs it stands for.
    @Test func foldedRepeatsAreShown() throws {
        let fixture = try Fixture()
        let file = try #require(try ReportStore(directory: fixture.directory).list().first)
        var report = try ReportReader().read(path: file.path)
        report.repeats = HangReport.Repeats(count: 3, lastAt: report.startedAt.addingTimeInterval(5), totalDurationMs: 900, maxDurationMs: 320)
        _ = try ReportStore(directory: fixture.directory).write(report)
        let result = try fixture.hangwatch(["list"])
        #expect(result.lines.filter { $0.hasSuffix(" +3 repeats") }.count == 1, "\(result.output)")
    }

    @Test func aMissingDirectoryIsNamed() throws {
        let fixture = try Fixture(withDemoReports: false)
        let result = try Hangwatch.run(["list", "--dir", fixture.root + "/nowhere"], cache: fixture.cache)
        #expect(result.status == 3)
        #expect(result.errors.contains(fixture.root + "/nowhere"))
    }

    @Test func theDirectoryComesFromTheOptionThenTheEnvironment() throws {
        let fixture = try Fixture()
        let empty = try Fixture(withDemoReports: false)
        let fromEnvironment = try Hangwatch.run(["list", "--json"], cache: fixture.cache, environment: ["HANGWATCH_REPORT_DIR": fixture.directory])
        #expect(fromEnvironment.status == 0)
        #expect(fromEnvironment.output.contains("\"service\""))
        let optionWins = try Hangwatch.run(
            ["list", "--json", "--dir", empty.directory], cache: fixture.cache, environment: ["HANGWATCH_REPORT_DIR": fixture.directory])
        #expect(optionWins.status == 1)
    }

    @Test func colourOnlyWhenAskedOrOnATerminal() throws {
        let fixture = try Fixture()
        let always = try fixture.hangwatch("list", "--color", "always")
        #expect(always.output.contains("\u{1b}["))
        let never = try fixture.hangwatch("list", "--color", "never")
        #expect(!never.output.contains("\u{1b}["))
        let noColor = try fixture.hangwatch("list", environment: ["NO_COLOR": "1"])
        #expect(!noColor.output.contains("\u{1b}["))
    }
}

extension Fixture {
    @discardableResult
    func hangwatch(_ arguments: [String], environment: [String: String] = [:]) throws -> CommandResult {
        try Hangwatch.run(arguments + ["--dir", directory], cache: cache, environment: environment)
    }
}
