import Foundation
import HangWatchReport

/// The `hangwatch-faults` binary (built next to the test bundle) run as a child process the test
/// can stop, kill, starve or run with an interposed allocator or a faked wall clock. Its output is
/// collected as it comes; `finish(within:)` kills it when it overstays.
final class FaultHost: @unchecked Sendable {
    static var binary: String { BuiltExecutable.path("hangwatch-faults") }

    struct Outcome {
        /// Nil when the process had to be killed.
        var status: Int32?
        var standardOutput: String
        var standardError: String
    }

    let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private let collected = DispatchGroup()
    nonisolated(unsafe) private var outputData = Data()
    nonisolated(unsafe) private var errorData = Data()

    /// Starts `hangwatch-faults arguments…`, with `environment` added to the test's, optionally
    /// under `launcher` (e.g. `["taskset", "-c", "0"]`).
    init(_ arguments: [String], environment: [String: String] = [:], launcher: [String] = []) throws {
        // Through env(1), which execs it (same pid): started directly by Foundation with
        // libfaketime preloaded, the child lost its arguments.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = launcher + [Self.binary] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        for (pipe, isOutput) in [(output, true), (errors, false)] {
            collected.enter()
            Thread { [self] in
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                if isOutput { outputData = data } else { errorData = data }
                collected.leave()
            }.start()
        }
    }

    var pid: Int32 { process.processIdentifier }

    func signal(_ number: Int32) { kill(pid, number) }

    /// Waits for the process to exit by itself within `seconds`; kills it (status nil) otherwise.
    func finish(within seconds: Double) -> Outcome {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        let killed = process.isRunning
        if killed { kill(pid, SIGKILL) }
        process.waitUntilExit()
        collected.wait()
        return Outcome(
            status: killed ? nil : process.terminationStatus, standardOutput: String(decoding: outputData, as: UTF8.self),
            standardError: String(decoding: errorData, as: UTF8.self))
    }
}

extension HangReport {
    /// The symbols of every sampled stack (as written, or as named by symbolication), per sample.
    var sampledSymbols: [[String]] {
        samples.compactMap { sample in
            sample.stack.map { index in stacks[index].frames.map { frames[$0].symbol ?? frames[$0].address } }
        }
    }
}
