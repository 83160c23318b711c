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

/// `hangwatch validate`: check files against the schema.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check report files against the schema, with precise errors.",
        usage: "hangwatch validate <path> ... [--quiet]",
        discussion: """
            A PATH that is a directory checks every report file in it. Exit status 3 if any file is \
            invalid.

            Examples:
              hangwatch validate /var/lib/hangwatch/reports/billing
              hangwatch validate hang-*.json
            """)

    @Argument(help: "Report files or directories.")
    var paths: [String]

    @Flag(name: .shortAndLong, help: "Print only problems.")
    var quiet = false

    func validate() throws {
        if paths.isEmpty { throw ValidationError("give at least one report file or directory") }
    }

    func run() throws {
        let validator = ReportValidator()
        var files: [String] = []
        var unlisted = 0
        for path in paths {
            if ReportDirectoryChoice.isDirectory(path) {
                // A directory that cannot be listed is said so, not taken for an empty one.
                if let code = ReportLibrary.listingError(path) {
                    unlisted += 1
                    print("INVALID  \(path)")
                    print("         " + ErrorText.cannot(.read, path, code: code))
                    continue
                }
                files.append(contentsOf: ((try? ReportCatalog(directory: path, indexPath: nil).files()) ?? []).map(\.path))
            } else {
                files.append(path)
            }
        }
        var invalid = unlisted
        for file in files {
            let problems = validator.problems(path: file)
            if problems.isEmpty {
                if !quiet { print("ok       \(file)") }
            } else {
                invalid += 1
                print("INVALID  \(file)")
                for problem in problems { print("         \(problem)") }
            }
        }
        if !quiet || invalid > 0 { print("\(files.count + unlisted - invalid) valid, \(invalid) invalid") }
        if invalid > 0 { throw ExitCode(Exit.badInput.rawValue) }
        if files.isEmpty { throw ExitCode(Exit.nothingMatched.rawValue) }
    }
}
