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

/// Where the reports are: --dir, else $HANGWATCH_REPORT_DIR, else the agent's spool if it exists,
/// else the demo's directory in the current directory if it exists.
struct DirectoryOptions: ParsableArguments {
    static let defaultDirectory = "/var/lib/hangwatch/reports"
    static let demoDirectory = "./hangwatch-reports"

    @Option(name: .shortAndLong, help: ArgumentHelp(
        "Report directory (and its service subdirectories).",
        discussion: "Default: $HANGWATCH_REPORT_DIR, else the agent's spool \(DirectoryOptions.defaultDirectory) if it exists, else the demo's \(DirectoryOptions.demoDirectory) if it exists."))
    var dir: String?

    /// The directory to read, and where it was looked for (said when it is not there).
    var resolved: (directory: String, searched: String) {
        if let dir, !dir.isEmpty { return (dir, "--dir \(dir)") }
        if let environment = ProcessInfo.processInfo.environment["HANGWATCH_REPORT_DIR"], !environment.isEmpty {
            return (environment, "HANGWATCH_REPORT_DIR=\(environment)")
        }
        for candidate in [Self.defaultDirectory, Self.demoDirectory] where Self.isDirectory(candidate) {
            return (candidate, candidate)
        }
        return (
            Self.defaultDirectory,
            "\(Self.defaultDirectory) (the agent's spool) and \(Self.demoDirectory) (the demo's): neither exists; give --dir or set HANGWATCH_REPORT_DIR"
        )
    }

    var directory: String { resolved.directory }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}

/// Which reports: by service, age, duration.
struct FilterOptions: ParsableArguments {
    @Option(name: .long, help: "Only this service (repeat for several).")
    var service: [String] = []

    // Unconditional: `--since -1h` is a value, as journalctl reads it, not an option.
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "Only hangs that started since: 90s, 2h30m, -1h, 1h ago, today, yesterday, 2026-11-20, '2026-11-20 10:00', or an RFC 3339 time.",
            valueName: "when"))
    var since: String?

    @Option(
        name: .long, parsing: .unconditional, help: ArgumentHelp("Only hangs that started before: the same forms as --since.", valueName: "when"))
    var until: String?

    @Option(name: .customLong("min-duration"), help: ArgumentHelp("Only hangs at least this long: 500ms, 1.5s, 2m.", valueName: "duration"))
    var minDuration: String?

    @Option(
        name: .customLong("label"),
        help: ArgumentHelp(
            "Only hangs that carry this label: KEY (any value) or KEY=VALUE; VALUE may use * ? [...] as the shell does (repeat: all must match).",
            valueName: "key[=value]"))
    var labels: [String] = []

    func validate() throws {
        for (option, value) in [("--since", since), ("--until", until)] {
            if let value, ReportFilter.parseTime(value) == nil {
                throw ValidationError(
                    "\(option) \(value): expected a time such as 90s, 2h30m, -1h, '1h ago', today, yesterday, 2026-11-20, '2026-11-20 10:00' or 2026-11-20T10:00:00Z")
            }
        }
        if let minDuration, ReportFilter.parseDuration(minDuration) == nil {
            throw ValidationError("--min-duration \(minDuration): expected a duration such as 500ms, 1.5s or 2m")
        }
        for label in labels where ReportFilter.LabelMatch(label) == nil {
            throw ValidationError("--label \(label): expected KEY or KEY=VALUE, such as route=/checkout or 'route=GET /cart*'")
        }
        // A range no hang can be in is a mistake, not an empty answer.
        if let since, let until, let from = ReportFilter.parseTime(since), let to = ReportFilter.parseTime(until), to <= from {
            throw ValidationError(
                "--until \(until) (\(Text.timestamp(to))) is not after --since \(since) (\(Text.timestamp(from))): no hang can match; swap them or widen the range")
        }
    }

    func filter(signature: String? = nil) -> ReportFilter {
        ReportFilter(
            services: Set(service), since: since.flatMap { ReportFilter.parseTime($0) }, until: until.flatMap { ReportFilter.parseTime($0) },
            minimumDurationMs: minDuration.flatMap(ReportFilter.parseDuration), signature: signature,
            labels: labels.compactMap(ReportFilter.LabelMatch.init))
    }
}

/// How reports are read.
struct ReadingOptions: ParsableArguments {
    @Flag(name: .customLong("no-symbolicate"), help: "Do not look up function names (faster; shows image+offset).")
    var noSymbolicate = false

    @Option(name: .customLong("debug-dir"), help: ArgumentHelp("Also look for debug files here, by build-id (repeatable).", valueName: "dir"))
    var debugDirectories: [String] = []

    @Option(help: "When to colour the output (auto: on a terminal, unless NO_COLOR is set).")
    var color: Terminal.ColorChoice = .auto

    @Flag(help: "Times in UTC (default: local time; the offset is always shown).")
    var utc = false
}

extension Terminal.ColorChoice: ExpressibleByArgument {}

/// A length of time on the command line, as every option takes one: `90s`, `10m`, `500ms`, `1h`;
/// a plain number is seconds (`--timeout 600`).
struct SecondsArgument: ExpressibleByArgument, Equatable {
    var seconds: Double

    init(seconds: Double) {
        self.seconds = seconds
    }

    init?(argument: String) {
        if let plain = Double(argument), plain.isFinite, plain >= 0 {
            seconds = plain
        } else if let milliseconds = ReportFilter.parseDuration(argument) {
            seconds = milliseconds / 1000
        } else {
            return nil
        }
    }

    var defaultValueDescription: String {
        seconds < 1 ? "\(Int((seconds * 1000).rounded()))ms" : seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }
}
