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

/// `hangwatch flamegraph`: a self-contained SVG.
struct FlamegraphCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flamegraph",
        abstract: "Draw a flame graph (a self-contained SVG) of one hang, a group, or all matching hangs.",
        usage: "hangwatch flamegraph <report> | --signature <sig> | --all [<options>]",
        discussion: """
            Width is sampled time. Hover a frame for its name, time and share. Opens in any browser.

            Examples:
              hangwatch flamegraph latest -o hang.svg
              hangwatch flamegraph --all --service billing --since 1d -o billing.svg
              hangwatch flamegraph latest --near-misses -o lead-up.svg
            """)

    @OptionGroup var selection: SelectionOptions
    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var filters: FilterOptions
    @OptionGroup var reading: ReadingOptions

    @Option(name: .shortAndLong, help: "Write the SVG here (default: standard output).")
    var output: String?

    @Option(help: "Width of the picture in pixels.")
    var width: Int = 1200

    @Flag(help: "Draw the lead-up's near misses (pieces past half the threshold before the hang, one stack each) beside the hang, under [near miss before the hang].")
    var nearMisses = false

    func validate() throws {
        if width < 200 || width > 20_000 { throw ValidationError("--width must be between 200 and 20000") }
    }

    func run() throws {
        let library = ReportLibrary(directory: directory, reading: reading)
        let reports = try selection.reports(library: library, filters: filters)
        let title = reports.count == 1 ? "Hang \(reports[0].id)" : "\(reports.count) hangs in \(library.directory)"
        try CommandOutput.write(Data(FlameGraphSVG.render(reports, title: title, width: Double(width), nearMisses: nearMisses).utf8), to: output)
    }
}
