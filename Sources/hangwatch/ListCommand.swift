import ArgumentParser
import Foundation
import HangWatchReport

/// `hangwatch list`: the hangs, newest first, one line each.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List hangs, newest first.",
        discussion: """
            Columns: when it started, service, pid, duration, thread CPU share, what the thread was
            doing (computing, a system call, starved, stopped), the first frame of the service's own
            code in the heaviest stack, and the signature (hangs with one culprit share it).

            Examples:
              hangwatch list --since 1h --min-duration 500ms
              hangwatch list --service billing --limit 20
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

    /// The table, as wide as the terminal (80 columns when not a terminal).
    static func table(_ summaries: [ReportSummary], terminal: Terminal) -> String {
        // Times of today without the date.
        let today = Text.time(Date()).prefix(5)
        let dated = summaries.contains { Text.time($0.startedAt).prefix(5) != today }
        let timeWidth = dated ? 14 : 8
        // The zone is said once, in the header: `STARTED +01:00` over dates and times, just
        // `+01:00` (or `UTC`) over times of today.
        let zone = Text.zone(summaries.first?.startedAt ?? Date())
        let timeHeader = dated ? "STARTED " + zone : zone
        func time(_ date: Date) -> String {
            let text = Text.time(date)
            return dated ? text : String(text.dropFirst(6))
        }
        // time, service 10, pid 7, duration 6, cpu 4, state 10, signature 8, 7 spaces: 52 + time + frame
        let frameWidth = max(15, terminal.width - 52 - timeWidth)
        var lines = [
            terminal.paint(
                Text.fit(timeHeader, timeWidth) + " " + Text.fit("SERVICE", 10) + " " + Text.fit("PID", 7, right: true) + " "
                    + Text.fit("DUR", 6, right: true) + " " + Text.fit("CPU", 4, right: true) + " " + Text.fit("DOING", 10) + " "
                    + Text.fit("TOP FRAME", frameWidth) + " " + "SIG", .bold)
        ]
        for summary in summaries {
            let duration = Text.fit(Text.duration(summary.durationMs) + (summary.outcome == .ongoing ? "+" : ""), 6, right: true)
            var state = Text.fit(summary.stateWord, 10)
            switch summary.verdict {
            case .computing: state = terminal.paint(state, .yellow)
            case .blocked: state = terminal.paint(state, .cyan)
            case .starved, .stopped, .debugger: state = terminal.paint(state, .magenta)
            case .unknown: break
            }
            lines.append(
                Text.fit(time(summary.startedAt), timeWidth) + " " + Text.fit(summary.service, 10) + " "
                    + Text.fit(String(summary.pid), 7, right: true) + " "
                    + (summary.durationMs >= 1000 ? terminal.paint(duration, .red) : duration) + " "
                    + Text.fit(Text.percent(summary.onCpuRatio), 4, right: true) + " " + state + " "
                    + Text.fit(FrameNaming.fit(summary.topFrame ?? "-", width: frameWidth), frameWidth) + " "
                    + String(summary.signature.prefix(8))
                    // Folded repeats: the report stands for more hangs than its own.
                    + (summary.repeats > 0 ? " +\(summary.repeats) repeats" : ""))
        }
        return lines.joined(separator: "\n")
    }
}
