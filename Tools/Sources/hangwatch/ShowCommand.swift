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

/// `hangwatch show`: one hang, explained.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Explain one hang: what, how long, why, and where the time went.",
        usage: "hangwatch show [<report>] [<options>]",
        discussion: """
            REPORT is `latest`, a report id (or a unique start of one), or a path. Frames are \
            symbolicated on the fly when the report holds raw addresses.

            Examples:
              hangwatch show latest
              hangwatch show 20261122T020103757Z-demo-13846-3
              hangwatch show ./hang-20261122T020103757Z-demo-13846-3.json --frames 40
              hangwatch show latest --json | jq .context
            """)

    @Argument(help: "latest, a report id, or a path.")
    var report: String = "latest"

    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var reading: ReadingOptions

    @Option(help: "Frames of the heaviest stack to show.")
    var frames: Int = 16

    @Flag(help: "Print the whole report as JSON (symbolicated unless --no-symbolicate).")
    var json = false

    func validate() throws {
        if frames < 1 { throw ValidationError("--frames must be at least 1") }
    }

    func run() throws {
        let library = ReportLibrary(directory: directory, reading: reading)
        let path = try library.resolve(report)
        let hang = try library.load(path)
        if json {
            print(String(decoding: try hang.encoded(), as: UTF8.self))
            return
        }
        print(ReportDetail(terminal: library.terminal, maxFrames: frames).render(hang, path: path))
    }
}
