import Foundation
import HangWatchReport
import Testing

@testable import HangWatchAgent

/// A spool in a temporary directory, with reports written the way monitors write them.
final class SpoolFixture {
    let root: String
    var spool: Spool { Spool(root: root) }

    init(_ name: String = #function) throws {
        root = FileManager.default.temporaryDirectory.path + "/hangwatch-agent-\(getpid())-" + name.filter { $0.isLetter }.prefix(40)
            + "-" + UUID().uuidString.prefix(6)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        chmod(root, 0o1770)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Writes a report for `service` that started `minutesAgo` minutes ago; returns its spool file.
    @discardableResult
    func report(
        service: String, minutesAgo: Double, sequence: Int, pid: Int32 = 4242, startTicks: UInt64 = 1,
        outcome: HangReport.Outcome = .recovered, padding: Int = 0
    ) throws -> Spool.File {
        let start = Date().addingTimeInterval(-minutesAgo * 60)
        let id = ReportTimestamp.compact(start) + "-\(service.isEmpty ? "root" : service)-\(pid)-\(sequence)"
        var report = Self.report(id: id, service: service.isEmpty ? "root" : service, start: start, pid: pid, startTicks: startTicks, outcome: outcome)
        if padding > 0 { report.mode = String(repeating: "x", count: padding) }
        let store = ReportStore(directory: spool.directory(of: service), access: .sharedWithAgent)
        try store.prepare()
        try store.write(report)
        return try #require(spool.file(service: service, name: ReportStore.fileName(forID: id)))
    }

    /// Writes `report` into `service`'s directory the way a monitor does; returns its spool file.
    @discardableResult
    func write(_ report: HangReport, service: String) throws -> Spool.File {
        let store = ReportStore(directory: spool.directory(of: service), access: .sharedWithAgent)
        try store.prepare()
        try store.write(report)
        return try #require(spool.file(service: service, name: ReportStore.fileName(forID: report.id)))
    }

    /// The path of `relative` in the spool.
    func path(_ relative: String) -> String { root + "/" + relative }

    /// A report of `service` whose id ends in `-<pid>-<sequence>`, started `start`.
    static func report(
        service: String, sequence: Int, start: Date = Date(), pid: Int32 = 4242, startTicks: UInt64 = 1,
        outcome: HangReport.Outcome = .recovered
    ) -> HangReport {
        let id = ReportTimestamp.compact(start) + "-\(service.isEmpty ? "root" : service)-\(pid)-\(sequence)"
        return report(id: id, service: service.isEmpty ? "root" : service, start: start, pid: pid, startTicks: startTicks, outcome: outcome)
    }

    static func report(id: String, service: String, start: Date, pid: Int32, startTicks: UInt64, outcome: HangReport.Outcome) -> HangReport {
        let frames = [HangReport.Frame(address: "0x1000", image: 0, offset: "0x10")]
        return HangReport(
            id: id, service: service, host: "h", pid: pid, process: .init(executable: "/srv/app", startTimeTicks: startTicks),
            thread: .init(tid: pid, name: "main", isMain: true), startedAt: start, detectedAt: start.addingTimeInterval(0.25),
            endedAt: outcome == .ongoing ? nil : start.addingTimeInterval(0.6), durationMs: outcome == .ongoing ? 400 : 600,
            thresholdMs: 250, outcome: outcome, activity: "afterWaiting", mode: nil,
            samples: [
                .init(offsetMs: 250, stack: 0, method: "signal", state: "R", syscall: nil, cpuMs: 1, runQueueMs: 0, pauseUs: 10, error: nil),
                .init(offsetMs: 450, stack: 0, method: "signal", state: "R", syscall: nil, cpuMs: 200, runQueueMs: 0, pauseUs: 10, error: nil),
            ],
            stacks: [.init(frames: [0], truncated: false)],
            heaviestStack: .init(stack: 0, sampleCount: 2, weightMs: 200, frames: frames), frames: frames,
            images: [.init(path: "/srv/app", buildId: "ab", base: "0x1000", size: 0x1000, isMainExecutable: true)],
            signature: "00", context: .init(
                verdict: .computing, onCpuRatio: 1, runQueueRatio: 0, blockedIn: nil, threadStates: [:], rssBytes: nil,
                loadAverage: nil, cpuCount: 2, watchdogOversleepMs: 0, debuggerAttached: false, processStopped: false),
            capture: .init(
                signal: 41, sampleIntervalMs: 50, samplesTaken: 2, samplesDropped: 0, maxFrames: 128, pauseMedianUs: 10,
                pauseMaxUs: 10, errors: [], reportsSuppressed: 0))
    }

    func write(_ text: String, to relative: String) throws {
        let path = root + "/" + relative
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    func exists(_ relative: String) -> Bool {
        var info = stat()
        return lstat(root + "/" + relative, &info) == 0
    }
}

/// A child process to test liveness against: `sleep`, started now, killed at the end.
final class ChildProcess {
    let process = Process()
    var pid: Int32 { process.processIdentifier }

    init() throws {
        process.executableURL = URL(fileURLWithPath: "/bin/sleep")
        process.arguments = ["600"]
        try process.run()
    }

    func kill(_ signal: Int32 = SIGKILL) {
        Glibc.kill(pid, signal)
    }

    func killAndReap() {
        if process.isRunning { Glibc.kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { killAndReap() }

    /// Its start time in clock ticks (`/proc/<pid>/stat` field 22).
    var startTicks: UInt64 {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) ?? 0 : 0
    }
}
