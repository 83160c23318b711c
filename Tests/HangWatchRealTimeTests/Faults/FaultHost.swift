import Foundation
import HangWatchTestSupport
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

    private let running: RunningExecutable

    /// Starts `hangwatch-faults arguments…`, with `environment` added to the test's, optionally
    /// under `launcher` (e.g. `["taskset", "-c", "0"]`).
    init(_ arguments: [String], environment: [String: String] = [:], launcher: [String] = []) throws {
        // Through env(1), which execs it (same pid): started directly by Foundation with
        // libfaketime preloaded, the child lost its arguments.
        running = try RunningExecutable("/usr/bin/env", launcher + [Self.binary] + arguments, environment: environment)
    }

    var pid: Int32 { running.pid }

    func signal(_ number: Int32) { running.signal(number) }

    /// What it has printed so far.
    var output: String { running.output }

    /// Waits for the process to exit by itself within `seconds`; kills it (status nil) otherwise.
    func finish(within seconds: Double) -> Outcome {
        let result = running.finish(within: seconds)
        return Outcome(status: result.timedOut ? nil : result.status, standardOutput: result.output, standardError: result.errors)
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
