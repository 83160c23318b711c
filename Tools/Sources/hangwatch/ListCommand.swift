import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchReading
import HangWatchRendering
import HangWatchReport

/// `hangwatch list`: the hangs, newest first, one line each.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List hangs, newest first.",
        // The generated usage lists every option on one line, wider than a terminal; OPTIONS
        // below lists them.
        usage: "hangwatch list [<options>]",
        discussion: """
            Columns: when it started, service, pid, duration, thread CPU share, what the thread was \
            doing (computing, a system call, starved, stopped), the first frame of the service's own \
            code in the heaviest stack, and the signature (hangs with one culprit share it: by \
            function names when the frames are named, across builds; else by addresses; --json \
            says which, as signatureKind, with the hang's labels).

            Examples:
              hangwatch list --since 1h --min-duration 500ms
              hangwatch list --service billing --limit 20
              hangwatch list --label 'route=GET /checkout' --label tenant=acme
              hangwatch list --namespace shop --pod 'billing-*'
              hangwatch list --json | jq '.[0].id'
            """)

    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var filters: FilterOptions
    @OptionGroup var reading: ReadingOptions

    @Option(name: .shortAndLong, help: "Show at most this many hangs.")
    var limit: Int?

    @Flag(help: "Print JSON (an array of summaries) instead of a table.")
    var json = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        let library = ReportLibrary(directory: directory, reading: reading)
        var summaries = try library.summaries(filters.filter())
        if let limit { summaries = Array(summaries.prefix(limit)) }
        if json {
            let encoder = HangReport.makeEncoder()
            print(String(decoding: try encoder.encode(summaries), as: UTF8.self))
        } else if !summaries.isEmpty {
            print(Self.table(summaries, terminal: library.terminal))
        }
        if summaries.isEmpty {
            Terminal.warn("hangwatch: no hangs match")
            throw ExitCode(Exit.nothingMatched.rawValue)
        }
    }

    /// The table: each column as wide as its widest cell; the top frame is cut (by `FrameNaming.fit`)
    /// only when a row would be wider than the terminal (80 columns when not a terminal). With
    /// `streaming` (`watch`, one row at a time) the columns have fixed widths, so rows align.
    static func table(_ summaries: [ReportSummary], terminal: Terminal, streaming: Bool = false) -> String {
        // Times of today without the date.
        let today = Text.time(Date()).prefix(5)
        let dated = summaries.contains { Text.time($0.startedAt).prefix(5) != today }
        // The zone is said once, in the header: `STARTED +01:00` over dates and times, just
        // `+01:00` (or `UTC`) over times of today.
        let zone = Text.zone(summaries.first?.startedAt ?? Date())
        func time(_ date: Date) -> String {
            let text = Text.time(date)
            return dated ? text : String(text.dropFirst(6))
        }
        func fixed(_ width: Int) -> Int? { streaming ? width : nil }
        let timeWidth = dated ? 14 : 8
        var table = Table([
            .init(header: dated ? "STARTED " + zone : zone, fixed: fixed(timeWidth)),
            .init(header: "SERVICE", maximum: 24, fixed: fixed(10)),
            .init(header: "PID", right: true, fixed: fixed(7)),
            .init(header: "DUR", right: true, fixed: fixed(6)),
            .init(header: "CPU", right: true, fixed: fixed(4)),
            .init(header: "DOING", fixed: fixed(10)),
            // Streaming: what the terminal leaves beside the other fixed columns and spaces, 12 to 40.
            .init(
                header: "TOP FRAME", shrinkable: true, minimum: 12, fixed: fixed(min(40, max(12, terminal.width - 52 - timeWidth))),
                cut: { FrameNaming.fit($0, width: $1) }),
            .init(header: "SIG"),
        ])
        for summary in summaries {
            let state: Terminal.Style? =
                switch summary.verdict {
                case .computing: .yellow
                case .blocked: .cyan
                case .starved, .throttled, .paging, .stopped, .debugger: .magenta
                case .deadlocked: .red
                case .unknown: nil
                }
            table.append(
                [
                    .init(time(summary.startedAt)), .init(summary.service), .init(String(summary.pid)),
                    .init(Text.duration(summary.durationMs) + (summary.outcome == .ongoing ? "+" : ""), summary.durationMs >= 1000 ? .red : nil),
                    .init(Text.percent(summary.onCpuRatio)), .init(summary.stateWord, state), .init(summary.topFrame ?? "-"),
                    .init(String(summary.signature.prefix(8))),
                ],
                // Folded repeats: the report stands for more hangs than its own.
                trailer: summary.repeats > 0 ? " +\(summary.repeats) repeats" : "")
        }
        return table.render(terminal: terminal, header: !streaming).joined(separator: "\n")
    }
}
