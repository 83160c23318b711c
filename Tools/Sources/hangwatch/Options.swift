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
    static var defaultDirectory: String { ReportDirectoryChoice.defaultDirectory }
    static var demoDirectory: String { ReportDirectoryChoice.demoDirectory }
    static var statement: String { ReportDirectoryChoice.statement }

    @Option(name: .shortAndLong, help: ArgumentHelp("Report directory (and its service subdirectories).", discussion: ReportDirectoryChoice.statement))
    var dir: String?

    /// The directory to read, and where it came from (`ReportDirectoryChoice`).
    var resolved: (directory: String, origin: ReportDirectoryChoice.Origin) {
        ReportDirectoryChoice.resolve(given: dir, environment: ProcessInfo.processInfo.environment)
    }

    var directory: String { resolved.directory }
}

/// Which reports: by service, age, duration, label, and where the process ran.
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

    @Option(name: .customLong("min-duration"), help: DurationArgument.help("Only hangs at least this long: 500ms, 1.5s, 2m"))
    var minDuration: DurationArgument?

    @Option(
        name: .customLong("label"),
        help: ArgumentHelp(
            "Only hangs that carry this label: KEY (any value) or KEY=VALUE; VALUE may use * ? [...] as the shell does (repeat: all must match).",
            valueName: "key[=value]"))
    var labels: [String] = []

    @Option(
        name: .customLong("pod"),
        help: ArgumentHelp(
            "Only hangs of this Kubernetes pod: NAME or NAMESPACE/NAME, * ? [...] as the shell matches them (repeat for several).",
            valueName: "pod"))
    var pods: [String] = []

    @Option(
        name: .customLong("namespace"), help: ArgumentHelp("Only hangs of pods in this Kubernetes namespace (repeat for several).", valueName: "namespace"))
    var namespaces: [String] = []

    @Option(
        name: .customLong("container"),
        help: ArgumentHelp("Only hangs of this container: the start of its id, or its name in its pod (repeat for several).", valueName: "id|name"))
    var containers: [String] = []

    func validate() throws {
        for (option, value) in [("--since", since), ("--until", until)] {
            if let value, ReportFilter.parseTime(value) == nil {
                throw ValidationError(
                    "\(option) \(value): expected a time such as 90s, 2h30m, -1h, '1h ago', today, yesterday, 2026-11-20, '2026-11-20 10:00' or 2026-11-20T10:00:00Z")
            }
        }
        for (option, values) in [("--pod", pods), ("--namespace", namespaces), ("--container", containers)] {
            if values.contains(where: \.isEmpty) { throw ValidationError("\(option) takes a value: a name, or a pattern such as 'billing-*'") }
        }
        for label in labels where ReportFilter.LabelMatch(label) == nil {
            throw ValidationError("--label \(label): expected KEY or KEY=VALUE, such as 'route=GET /checkout' or 'route=*/cart*'")
        }
        // A range no hang can be in is a mistake, not an empty answer.
        if let since, let until, let from = ReportFilter.parseTime(since), let to = ReportFilter.parseTime(until), to <= from {
            throw ValidationError(
                "--until \(until) (\(Text.timestamp(to))) is not after --since \(since) (\(Text.timestamp(from))): no hang can match; swap them or widen the range")
        }
    }

    /// The hangs in view are of part of the time the agent counted as monitored (a time window) or
    /// of some of a service's processes (some of its pods or containers): no hang rate per
    /// monitored hour can be worked out, as that time is a running total per service and version.
    var narrowsMonitoredTime: Bool {
        since != nil || until != nil || !pods.isEmpty || !namespaces.isEmpty || !containers.isEmpty
    }

    func filter(signature: String? = nil) -> ReportFilter {
        ReportFilter(
            services: Set(service), since: since.flatMap { ReportFilter.parseTime($0) }, until: until.flatMap { ReportFilter.parseTime($0) },
            minimumDurationMs: minDuration?.milliseconds, signature: signature,
            labels: labels.compactMap(ReportFilter.LabelMatch.init), pods: pods, namespaces: namespaces, containers: containers)
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

/// A length of time on the command line, as every option of every command takes one: a number with
/// a unit (`500ms`, `1.5s`, `2m`, `1h`, or terms added up as journalctl writes them, `2h30m`), or a
/// plain number, which is seconds (`--timeout 600`, `--min-duration 5`). Every option that takes a
/// length of time has this type, so it reads the same everywhere (a test finds them by their type).
struct DurationArgument: ExpressibleByArgument, Equatable, CustomStringConvertible {
    /// What a plain number means, said in every such option's help.
    static let plainNumber = "a plain number is seconds"

    var seconds: Double

    init(seconds: Double) {
        self.seconds = seconds
    }

    init?(argument: String) {
        if let plain = Double(argument) {
            guard plain.isFinite, plain >= 0 else { return nil }
            seconds = plain
        } else if argument.contains(where: \.isLetter), let duration = DurationText.parse(argument) {
            seconds = Double(DurationText.nanoseconds(duration)) / 1e9
        } else {
            return nil
        }
    }

    var milliseconds: Double { seconds * 1000 }

    var description: String { DurationText.format(.nanoseconds(Int64((seconds * 1e9).rounded()))) }

    var defaultValueDescription: String { description }

    /// An option's help: `abstract` and what a plain number means.
    static func help(_ abstract: String) -> ArgumentHelp {
        ArgumentHelp("\(abstract) (\(plainNumber)).", valueName: "duration")
    }
}
