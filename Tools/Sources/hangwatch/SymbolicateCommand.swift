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
import HangWatchSymbolication

/// `hangwatch symbolicate`: names in the report file itself.
struct SymbolicateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "symbolicate",
        abstract: "Write function names and source lines into a report, using its binaries or separate debug files.",
        usage: "hangwatch symbolicate <report> [<options>]",
        discussion: """
            Images are found at the paths the report names, or by build-id in the debug directories \
            (DIR/.build-id/xx/yyyy.debug) and /usr/lib/debug. A file whose build-id differs from the \
            report's is never used. The report is rewritten atomically (or written to --output).

            Examples:
              hangwatch symbolicate latest
              hangwatch symbolicate ./hang-…json --debug-dir /srv/debug -o named.json
            """)

    @Argument(help: "latest, a report id, or a path.")
    var report: String

    @OptionGroup var directory: DirectoryOptions

    @Option(name: .customLong("debug-dir"), help: ArgumentHelp("Look for binaries and debug files here, by build-id (repeatable).", valueName: "dir"))
    var debugDirectories: [String] = []

    @Option(name: .shortAndLong, help: "Write the result here instead of over the report.")
    var output: String?

    func run() throws {
        // Read as it is on disk; the names are worked out below, with these debug directories.
        let resolved = directory.resolved
        let library = ReportLibrary(directory: resolved.directory, origin: resolved.origin, terminal: Terminal(), symbolicator: nil)
        let path = try library.resolve(report)
        var hang = try library.load(path)
        let summary = Symbolicator(debugDirectories: debugDirectories).symbolicate(&hang)
        hang.symbolication = HangReport.Symbolication(
            at: Date(), by: "hangwatch symbolicate", framesNamed: summary.framesResolved,
            framesUnnamed: summary.framesUnresolved, problems: summary.imageErrors.values.map { "\($0)" }.sorted())
        for (_, error) in summary.imageErrors.sorted(by: { $0.key < $1.key }) {
            Terminal.warn("hangwatch: warning: \(error)")
        }
        let encoded = try hang.encoded()
        if let output {
            try CommandOutput.write(encoded, to: output)
        } else {
            // Over the original, atomically, in its own directory.
            let folder = PathText.parent(of: path)
            do {
                try ReportStore(directory: folder.isEmpty ? "." : folder).write(hang)
                if PathText.lastComponent(of: path) != ReportStore.fileName(forID: hang.id) {
                    try CommandOutput.write(encoded, to: path)
                }
            } catch ReportStoreError.writeFailed(_, let code, _) {
                throw CommandFailure(message: ErrorText.cannot(.write, path, code: code, option: "--output"), exitCode: Exit.badInput)
            }
        }
        print("\(summary.framesResolved) frames named, \(summary.framesUnresolved) not" + (summary.imageErrors.isEmpty ? "" : " (\(summary.imageErrors.count) images refused or missing)"))
        if summary.framesResolved == 0 && !hang.frames.isEmpty {
            throw ExitCode(Exit.badInput.rawValue)
        }
    }
}
