import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// The release-built `hangwatch-tasks` service running its task population, ready to be asked.
final class TaskHost {
    static var path: String { BuiltExecutable.releasePath("hangwatch-tasks") }

    let directory: ReportDirectory
    let process: RunningExecutable
    /// What it printed once every task was parked.
    let pid: Int32
    let holderTid: Int32

    init(_ arguments: [String] = [], name: String = #function) throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.path), "build it: \(BuiltExecutable.releaseBuildCommand("hangwatch-tasks"))")
        directory = ReportDirectory(name)
        let process = try RunningExecutable(Self.path, ["--reports", directory.path] + arguments)
        self.process = process
        let output = Eventually.value(timeout: 60, { process.output }, until: { $0.contains("holderTid") })
        let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("{") }, "no ready line: \(output) \(process.errors)")
        let facts = try JSONDecoder().decode([String: Int32].self, from: Data(line.utf8))
        pid = try #require(facts["pid"])
        holderTid = try #require(facts["holderTid"])
        // Its watchdog has ticked (the heartbeat names the signal a request is sent with).
        let heartbeat = directory.path + "/" + MonitorHeartbeat.fileName(pid: pid)
        try #require(Eventually.holds(timeout: 20) { ((try? MonitorHeartbeat.read(path: heartbeat))?.captureSignal ?? 0) != 0 })
    }

    deinit {
        process.signal(SIGKILL)
        _ = process.finish(within: 10)
        try? FileManager.default.removeItem(atPath: directory.path)
    }

    /// A task dump of it, symbolicated.
    func tasks() throws -> HangReport {
        try DumpAsking.dump(pid: pid, directory: directory.path, tasks: true)
    }
}

extension HangReport {
    /// A task's chain by name (short names, `(async)` dropped), innermost first.
    func chainNames(_ indices: [Int]) -> [String] {
        indices.map { index in
            guard frames.indices.contains(index) else { return "?" }
            var name = FrameNaming.displayName(frames[index], images: images)
            if name.hasSuffix(" (async)") { name = String(name.dropLast(8)) }
            return name.replacingOccurrences(of: "hangwatch_tasks.", with: "").replacingOccurrences(of: "hangwatch_faults.", with: "")
        }
    }
}
