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
@_spi(Internal) import HangWatchReport

/// `hangwatch watch`: new hangs as they land.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow the report directory and print each new hang as it lands.",
        usage: "hangwatch watch [<options>]",
        discussion: """
            A hang appears when it is detected (marked "ongoing", its duration so far) and again when \
            it ends. Stop with Ctrl-C, or give --timeout.

            Examples:
              hangwatch watch
              hangwatch watch --service billing --timeout 10m
            """)

    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var filters: FilterOptions
    @OptionGroup var reading: ReadingOptions

    @Option(help: DurationArgument.help("Stop after this long: 90s, 10m, 500ms"))
    var timeout: DurationArgument?

    @Option(help: DurationArgument.help("How often to look: 500ms, 2s"))
    var interval: DurationArgument = DurationArgument(seconds: 0.5)

    @Flag(name: .customLong("from-start"), help: "Print the hangs already there first.")
    var fromStart = false

    func validate() throws {
        if interval.seconds < 0.05 || interval.seconds > 60 { throw ValidationError("--interval must be between 50ms and 60s") }
        if let timeout, timeout.seconds <= 0 { throw ValidationError("--timeout must be positive") }
    }

    /// A line, written at once (not held in a buffer while stdout is a pipe).
    private func emit(_ line: String) {
        Terminal.write(Array((line + "\n").utf8), to: STDOUT_FILENO)
    }

    func run() throws {
        let library = ReportLibrary(directory: directory, reading: reading)
        // A directory that is missing or cannot be read would be watched in silence forever.
        try library.checkDirectory()
        let filter = filters.filter()
        let catalog = ReportCatalog(directory: library.directory, indexPath: nil)
        // What each file looked like when last seen (a file is read only when it changes), and
        // what was printed for it.
        var looked: [String: (size: UInt64, modified: Int64)] = [:]
        var printed: [String: HangReport.Outcome] = [:]
        if !fromStart {
            for entry in (try? catalog.files()) ?? [] {
                looked[entry.path] = (entry.size, entry.modifiedNanoseconds)
            }
        }
        let deadline = timeout.map { Date().addingTimeInterval($0.seconds) }
        emit(library.terminal.paint("watching \(library.directory)", .dim))
        while deadline.map({ Date() < $0 }) ?? true {
            for entry in (try? catalog.files()) ?? [] {
                if let previous = looked[entry.path], previous == (entry.size, entry.modifiedNanoseconds) { continue }
                looked[entry.path] = (entry.size, entry.modifiedNanoseconds)
                // Unreadable files are skipped here; `hangwatch list` names them.
                guard let report = try? library.load(entry.path), printed[entry.path] != report.outcome else { continue }
                printed[entry.path] = report.outcome
                let summary = ReportSummary(report: report, path: entry.path)
                guard filter.matches(summary) else { continue }
                let line = ListCommand.table([summary], terminal: library.terminal, streaming: true)
                emit(line + (report.outcome == .ongoing ? "  (ongoing)" : ""))
            }
            var pause = timespec(tv_sec: Int(interval.seconds), tv_nsec: Int((interval.seconds - interval.seconds.rounded(.down)) * 1e9))
            var left = timespec()
            // A signal cuts the sleep short: SystemCall sleeps again for what was left.
            _ = try? SystemCall.check("nanosleep") {
                let result = nanosleep(&pause, &left)
                pause = left
                return result
            }
        }
    }
}
