import Foundation

/// Executables of this package, built next to the test bundle (`swift build --build-tests`).
public enum BuiltExecutable {
    /// The path of executable `name` in the test bundle's directory.
    public static func path(_ name: String) -> String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return (executable as NSString).deletingLastPathComponent + "/" + name
    }

    /// The scratch path of the release builds the tests run (`make test` builds them there, beside
    /// the debug build both packages share, so that the tools' debug build need not wait for them).
    public static let releaseScratch = ".build-release"

    /// The path of executable `name` of the library's release build: in `releaseScratch` (`swift
    /// build -c release --scratch-path .build-release --product NAME`; `make test` builds the ones
    /// the tests need), else in the release directory beside the test bundle's.
    public static func releasePath(_ name: String) -> String {
        let debug = URL(fileURLWithPath: path(name)).deletingLastPathComponent()  // <root>/.build/<triple>/debug
        let root = debug.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let scratch = root.appendingPathComponent(releaseScratch + "/release/" + name).path
        if FileManager.default.isExecutableFile(atPath: scratch) { return scratch }
        return debug.deletingLastPathComponent().appendingPathComponent("release/" + name).path
    }

    /// How to build `name` where `releasePath` looks first.
    public static func releaseBuildCommand(_ name: String) -> String {
        "swift build -c release --scratch-path \(releaseScratch) --product \(name)"
    }
}

/// What a command printed, and how it exited.
public struct CommandResult: Sendable {
    public var status: Int32
    public var output: String
    public var errors: String
    /// The command outlived its timeout and was killed.
    public var timedOut = false

    /// Standard output's lines, without the trailing empty one.
    public var lines: [String] { output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
    /// Standard error's lines.
    public var errorLines: [String] { errors.split(separator: "\n").map(String.init) }

    public init(status: Int32, output: String, errors: String, timedOut: Bool = false) {
        self.status = status
        self.output = output
        self.errors = errors
        self.timedOut = timedOut
    }
}

/// An executable running as a child of the test, its output collected in files (a large output
/// cannot block it, and what it printed so far can be read at any time).
public final class RunningExecutable: @unchecked Sendable {
    public let process = Process()
    private let scratch: String
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `executable arguments…` with `environment` changed (nil values removed), in
    /// `workingDirectory` (the test's own when nil).
    public init(_ executable: String, _ arguments: [String], environment: [String: String?] = [:], workingDirectory: String? = nil) throws {
        scratch = FileManager.default.temporaryDirectory.path + "/hangwatch-run-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: scratch + "/out", contents: nil)
        _ = FileManager.default.createFile(atPath: scratch + "/err", contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let workingDirectory { process.currentDirectoryURL = URL(fileURLWithPath: workingDirectory) }
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in environment { merged[key] = value }
        process.environment = merged
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + "/out"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + "/err"))
        process.standardInput = FileHandle.nullDevice
        let exited = exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
    }

    deinit {
        if process.isRunning {
            // SIGKILL: a signal mask inherited from the test runner may hold SIGTERM back.
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        try? FileManager.default.removeItem(atPath: scratch)
    }

    public var pid: Int32 { process.processIdentifier }

    /// Sends `number` while the process runs. Once it has exited (and been reaped), its pid may
    /// already be another process's: pids wrap at 32768 here, and the tests start thousands.
    public func signal(_ number: Int32) {
        if exited.wait(timeout: .now()) == .success {
            exited.signal()
            return
        }
        kill(pid, number)
    }

    /// What it has printed so far.
    public var output: String { String(decoding: FileManager.default.contents(atPath: scratch + "/out") ?? Data(), as: UTF8.self) }
    public var errors: String { String(decoding: FileManager.default.contents(atPath: scratch + "/err") ?? Data(), as: UTF8.self) }

    /// Waits for it to exit by itself within `timeout`; kills it otherwise (`timedOut`).
    public func finish(within timeout: TimeInterval) -> CommandResult {
        var timedOut = false
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            kill(pid, SIGKILL)
            exited.wait()
        }
        exited.signal()  // for deinit and a second finish
        return CommandResult(status: process.terminationStatus, output: output, errors: errors, timedOut: timedOut)
    }
}

/// Runs an executable the way a person would and returns what it printed; a run that outlives
/// `timeout` is killed.
public enum ExecutableRun {
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String?] = [:], workingDirectory: String? = nil,
        timeout: TimeInterval = 60
    ) throws -> CommandResult {
        try RunningExecutable(executable, arguments, environment: environment, workingDirectory: workingDirectory).finish(within: timeout)
    }
}
