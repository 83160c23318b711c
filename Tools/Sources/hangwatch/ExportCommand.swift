import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchProfiles
import HangWatchReading
import HangWatchRendering
@_spi(Internal) import HangWatchReport

/// Which reports export and flamegraph work on: one, a group, or all matching.
struct SelectionOptions: ParsableArguments {
    @Argument(help: "latest, a report id, or a path (omit with --signature or --all).")
    var report: String?

    @Option(help: "All hangs whose signature starts with this (a group from `hangwatch top`).")
    var signature: String?

    @Flag(help: "All hangs that match the filters.")
    var all = false

    func validate() throws {
        let chosen = [report != nil, signature != nil, all].filter { $0 }.count
        if chosen != 1 {
            throw ValidationError("give one of: a REPORT (latest, an id, a path), --signature SIG, or --all")
        }
    }

    func reports(library: ReportLibrary, filters: FilterOptions) throws -> [HangReport] {
        if let report {
            return [try library.load(try library.resolve(report))]
        }
        let summaries = try library.summaries(filters.filter(signature: signature))
        guard !summaries.isEmpty else {
            throw CommandFailure(message: "no hangs match", exitCode: Exit.nothingMatched)
        }
        return library.load(summaries)
    }
}

/// `hangwatch export`: stacks for other tools.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export sampled stacks: folded (flamegraph.pl, inferno), speedscope, pprof, or the reports as JSON.",
        usage: "hangwatch export <report> | --signature <sig> | --all [<options>]",
        discussion: """
            Weights are sampled time in milliseconds: each sample stands for the time until the next.

            Examples:
              hangwatch export latest --format folded | flamegraph.pl > hang.svg
              hangwatch export --signature 1a2b3c4d --format speedscope -o group.json
              hangwatch export --all --since 1d --format json -o hangs.json
              hangwatch export --all --format pprof -o hangs.pb.gz
              go tool pprof -top hangs.pb.gz
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case folded, speedscope, json, pprof
    }

    @OptionGroup var selection: SelectionOptions
    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var filters: FilterOptions
    @OptionGroup var reading: ReadingOptions

    @Option(help: "folded, speedscope, pprof (gzip'd profile.proto) or json.")
    var format: Format = .folded

    @Option(name: .shortAndLong, help: "Write here instead of standard output.")
    var output: String?

    func run() throws {
        let library = ReportLibrary(directory: directory, reading: reading)
        let reports = try selection.reports(library: library, filters: filters)
        let data: Data
        switch format {
        case .folded:
            data = Data(FoldedStacks.render(reports).utf8)
        case .speedscope:
            data = try SpeedscopeExport.render(reports)
        case .pprof:
            if output == nil || output == "-", isatty(STDOUT_FILENO) == 1 {
                throw CommandFailure(message: "a pprof profile is binary: give -o FILE (or pipe it)", exitCode: Exit.usage)
            }
            do {
                data = try PprofExport.render(reports)
            } catch {
                throw CommandFailure(message: "cannot make the pprof profile: \(ErrorText.message(for: error))", exitCode: Exit.badInput)
            }
        case .json:
            data = try HangReport.makeEncoder().encode(reports) + Data("\n".utf8)
        }
        try CommandOutput.write(data, to: output)
    }
}
