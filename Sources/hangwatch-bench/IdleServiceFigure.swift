import Foundation

/// Figure 3b: an idle run-loop service's monitor threads, counted from outside the process. The
/// service is `hangwatch-faults idle` (the default configuration: heartbeat every 10 s, the pool
/// watch on), in a child process; after it settles, its threads' context switches are read from
/// `/proc/<pid>/task/*/status` over windows of `windowSeconds`.
struct IdleServiceWakeupFigure {
    var settleSeconds: Double
    var windowSeconds: Double
    var windows: Int
    /// False: the same service without the monitor (the baseline of the whole process's count).
    var monitored = true

    struct Outcome {
        /// Context switches of the monitor's threads (named `hangwatch-*`) in each window.
        var perWindow: [Int]
        /// Of the whole process in each window (the main thread's run loop and libdispatch's
        /// threads as well).
        var processPerWindow: [Int]
        /// The monitor's threads seen, by name, with their switches over all windows.
        var byThread: [String: Int]
    }

    /// `hangwatch-faults` next to this executable (both are built by `make bench`), or
    /// `HANGWATCH_FAULTS`.
    static func faultsExecutable() throws -> String {
        try ToolBinary.path(
            "hangwatch-faults", variable: "HANGWATCH_FAULTS",
            build: "swift build -c release --scratch-path .build-release --product hangwatch-faults")
    }

    func measure() throws -> Outcome {
        let reports = FileManager.default.temporaryDirectory.appendingPathComponent("hangwatch-bench-idle-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: reports) }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: try Self.faultsExecutable())
        let total = settleSeconds + windowSeconds * Double(windows) + 5
        child.arguments = ["idle", "--reports", reports, "--seconds", String(total)] + (monitored ? [] : ["--mode", "unmonitored"])
        let output = Pipe()
        child.standardOutput = output
        try child.run()
        defer {
            if child.isRunning { child.terminate() }
            child.waitUntilExit()
        }
        guard output.fileHandleForReading.availableData.starts(with: Data("started".utf8)) else {
            throw BenchFailure("hangwatch-faults idle did not start")
        }
        let pid = child.processIdentifier
        usleep(useconds_t(settleSeconds * 1_000_000))
        var outcome = Outcome(perWindow: [], processPerWindow: [], byThread: [:])
        var before = Self.switches(of: pid)
        for _ in 0..<windows {
            usleep(useconds_t(windowSeconds * 1_000_000))
            let after = Self.switches(of: pid)
            var monitor = 0
            var process = 0
            for (tid, thread) in after {
                let added = thread.switches - (before[tid]?.switches ?? 0)
                process += added
                if thread.name.hasPrefix("hangwatch") {
                    monitor += added
                    outcome.byThread[thread.name, default: 0] += added
                }
            }
            outcome.perWindow.append(monitor)
            outcome.processPerWindow.append(process)
            before = after
        }
        return outcome
    }

    /// Every thread of `pid`: its name and its context switches (voluntary and involuntary).
    static func switches(of pid: Int32) -> [Int32: (name: String, switches: Int)] {
        let directory = "/proc/\(pid)/task"
        var threads: [Int32: (name: String, switches: Int)] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            guard let tid = Int32(entry), let status = try? String(contentsOfFile: "\(directory)/\(entry)/status", encoding: .utf8)
            else { continue }
            var name = ""
            var count = 0
            for line in status.split(separator: "\n") {
                if line.hasPrefix("Name:") { name = line.dropFirst(5).trimmingCharacters(in: .whitespaces) }
                if line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                    count += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            threads[tid] = (name, count)
        }
        return threads
    }
}
