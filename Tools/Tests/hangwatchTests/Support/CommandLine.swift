import Foundation
import HangWatchTestSupport

/// Runs the built `hangwatch` binary (next to this test bundle) the way a person would, with its
/// own cache directory so tests never share an index, and returns what it printed.
enum Hangwatch {
    static var binary: String { BuiltExecutable.path("hangwatch") }

    /// Runs `hangwatch arguments…` with an environment cleared of what would change its output
    /// (`HANGWATCH_REPORT_DIR`, `NO_COLOR`, `COLUMNS`, `TERM`) plus `extra`.
    @discardableResult
    static func run(
        _ arguments: [String], cache: String, environment extra: [String: String] = [:], timeout: Double = 60,
        executable: String = Hangwatch.binary, workingDirectory: String? = nil
    ) throws -> CommandResult {
        var environment: [String: String?] = ["HANGWATCH_REPORT_DIR": nil, "NO_COLOR": nil, "COLUMNS": nil, "TERM": nil]
        environment["XDG_CACHE_HOME"] = cache
        for (key, value) in extra { environment[key] = value }
        return try ExecutableRun.run(executable, arguments, environment: environment, workingDirectory: workingDirectory, timeout: timeout)
    }
}
