#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchRendering

/// Which report directory a command reads: the one given, else `$HANGWATCH_REPORT_DIR`, else the
/// agent's spool if it exists, else the demo's directory in the current directory if it exists;
/// and what to say when it cannot be read, naming where it came from.
package enum ReportDirectoryChoice {
    package static let defaultDirectory = "/var/lib/hangwatch/reports"
    package static let demoDirectory = "./hangwatch-reports"

    /// Where the reports are read from, stated once: `--help` says it in these words, and so do
    /// the README and docs/cli.md (a test compares them).
    package static let statement =
        "Reports are read from --dir, else $HANGWATCH_REPORT_DIR, else the agent's spool \(defaultDirectory) if it exists, "
        + "else the demo's \(demoDirectory) if it exists (each with its service subdirectories)."

    /// Where a directory to read came from, so that an error about it can say so.
    package enum Origin: Equatable, Sendable {
        /// Given with --dir.
        case option
        /// $HANGWATCH_REPORT_DIR.
        case environment
        /// The agent's spool or the demo's directory, found.
        case found
        /// Neither given nor found.
        case nothing
    }

    /// The directory to read, and where it came from.
    /// - Parameters:
    ///   - given: `--dir`'s value, if any.
    ///   - environment: the process's environment (`HANGWATCH_REPORT_DIR`).
    /// - Returns: the directory and its origin; the agent's spool (`nothing`) when none is found.
    package static func resolve(given: String?, environment: [String: String]) -> (directory: String, origin: Origin) {
        if let given, !given.isEmpty { return (given, .option) }
        if let variable = environment["HANGWATCH_REPORT_DIR"], !variable.isEmpty {
            return (variable, .environment)
        }
        for candidate in [defaultDirectory, demoDirectory] where isDirectory(candidate) {
            return (candidate, .found)
        }
        return (defaultDirectory, .nothing)
    }

    /// What to say when `directory`, from `origin`, cannot be looked at (`code`: `stat`'s errno):
    /// the path, that it does not exist (or the system's reason), where it came from, what to do.
    package static func missing(_ directory: String, origin: Origin, code: Int32) -> String {
        let problem = code == ENOENT ? "report directory \(directory) does not exist" : ErrorText.cannot(.read, directory, code: code)
        switch origin {
        case .option:
            return "\(problem) (--dir: give the directory that holds the reports)"
        case .environment:
            return "\(problem) (HANGWATCH_REPORT_DIR=\(directory): set it to the directory that holds the reports, or pass --dir)"
        case .found:
            return problem
        case .nothing:
            return "no report directory: neither \(defaultDirectory) (the agent's spool) nor \(demoDirectory) (the demo's) exists; "
                + "give --dir or set HANGWATCH_REPORT_DIR"
        }
    }

    package static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}
