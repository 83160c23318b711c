import Foundation

/// Runs the built `hangwatch` binary (next to this test bundle) the way a person would, with its
/// own cache directory so tests never share an index, and returns what it printed.
struct CommandResult {
    var status: Int32
    var output: String
    var errors: String

    /// Standard output's lines, without the trailing empty one.
    var lines: [String] { output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    /// Standard error's lines.
    var errorLines: [String] { errors.split(separator: "\n").map(String.init) }
}

enum Hangwatch {
    static var binary: String { siblingExecutable("hangwatch") }
    static var demoBinary: String { siblingExecutable("hangwatch-demo") }

    static func siblingExecutable(_ name: String) -> String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return (executable as NSString).deletingLastPathComponent + "/" + name
    }

    /// Runs `hangwatch arguments…`. Output goes through files, so a large output cannot block the
    /// child; a run that outlives `timeout` is killed (and the result says so).
    @discardableResult
    static func run(
        _ arguments: [String], cache: String, environment extra: [String: String] = [:], timeout: Double = 60,
        executable: String = Hangwatch.binary
    ) throws -> CommandResult {
        let scratch = FileManager.default.temporaryDirectory.path + "/hangwatch-cli-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        _ = FileManager.default.createFile(atPath: scratch + "/out", contents: nil)
        _ = FileManager.default.createFile(atPath: scratch + "/err", contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        for key in ["HANGWATCH_REPORT_DIR", "NO_COLOR", "COLUMNS", "TERM"] { environment[key] = nil }
        environment["XDG_CACHE_HOME"] = cache
        environment.merge(extra) { $1 }
        process.environment = environment
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + "/out"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + "/err"))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        process.waitUntilExit()
        let output = String(decoding: FileManager.default.contents(atPath: scratch + "/out") ?? Data(), as: UTF8.self)
        let errors = String(decoding: FileManager.default.contents(atPath: scratch + "/err") ?? Data(), as: UTF8.self)
        return CommandResult(status: process.terminationStatus, output: output, errors: errors)
    }
}
