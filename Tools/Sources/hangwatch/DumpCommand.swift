import ArgumentParser
import CThreadSignal
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchRendering
@_spi(Internal) import HangWatchReport

/// `hangwatch dump PID`: the threads of a running monitored process now, like jstack.
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Show what every thread of a running monitored process is doing now, and what it waits for.",
        usage: "hangwatch dump <pid> [<options>]",
        discussion: """
            The process's monitor is found by its heartbeat file (.heartbeat-PID) in the report \
            directory or one of its service subdirectories (the agent's spool), and asked with a \
            signal queued to the process: its watchdog takes every thread's state, time in that \
            state, stack (walked from /proc, no thread is signalled), what it waits for and who \
            holds it, and any wait cycle (a deadlock, printed first), and writes them next to its \
            reports. Asking takes permission to signal the process (its user, or root) and to \
            read its reports.

            Examples:
              hangwatch dump 4242
              hangwatch dump 4242 --service billing
              hangwatch dump 4242 --json | jq '.threads[] | select(.waitsFor != null)'
            """)

    @Argument(help: "The process id of a service that embeds HangWatch.")
    var pid: Int32

    @OptionGroup var directory: DirectoryOptions
    @OptionGroup var reading: ReadingOptions

    @Option(help: "Only this service's directory of the spool.")
    var service: String?

    @Option(help: ArgumentHelp("How long to wait for the answer: 5s, 500ms.", valueName: "duration"))
    var timeout: SecondsArgument = SecondsArgument(seconds: 5)

    @Option(help: "Frames of each stack to show.")
    var frames: Int = 24

    @Flag(help: "Print the dump as JSON (a report whose source is `dump`, symbolicated unless --no-symbolicate).")
    var json = false

    func validate() throws {
        if pid <= 0 { throw ValidationError("the pid must be positive") }
        if timeout.seconds <= 0 || timeout.seconds > 600 { throw ValidationError("--timeout must be between 1ms and 10m") }
        if frames < 1 { throw ValidationError("--frames must be at least 1") }
    }

    func run() throws {
        let library = ReportLibrary(directory: directory, reading: reading)
        try library.checkDirectory()
        let found = try DumpRequest.findMonitor(pid: pid, in: library.directory, service: service)
        let nonce = try DumpRequest.ask(pid: pid, watchdog: found.watchdog, signal: found.signal)
        let path = try DumpRequest.awaitAnswer(nonce: nonce, in: found.directories, pid: pid, timeout: timeout.seconds)
        defer { unlink(path) }
        let dump = try library.load(path)
        if json {
            print(String(decoding: try dump.encoded(), as: UTF8.self))
            return
        }
        print(ReportDetail(terminal: library.terminal, maxFrames: frames).renderDump(dump))
    }
}

/// Finding a process's monitor, asking it, and waiting for its answer.
enum DumpRequest {
    /// The directories that hold a live heartbeat of `pid` (where its monitors write), and the
    /// signal they answer a dump request on.
    static func findMonitor(pid: Int32, in root: String, service: String?) throws -> (directories: [String], signal: Int32, watchdog: Int32) {
        guard access("/proc/\(pid)", F_OK) == 0 else {
            throw CommandFailure(message: "no process \(pid) is running", exitCode: Exit.nothingMatched)
        }
        let candidates = service.map { [root + "/" + $0] }
            ?? [root] + ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted().map { root + "/" + $0 }
        let name = MonitorHeartbeat.fileName(pid: pid)
        let startTicks = ProcessStat.startTicks(pid)
        var directories: [String] = []
        var signal: Int32 = 0
        var watchdog: Int32 = 0
        var stale = false
        for directory in candidates {
            guard let heartbeat = try? MonitorHeartbeat.read(path: directory + "/" + name), heartbeat.pid == pid else { continue }
            guard heartbeat.startTimeTicks == startTicks, heartbeat.state != .stopped else {
                stale = true
                continue
            }
            directories.append(directory)
            if heartbeat.captureSignal > 0 && heartbeat.watchdogTID > 0 {
                (signal, watchdog) = (heartbeat.captureSignal, heartbeat.watchdogTID)
            }
        }
        guard !directories.isEmpty else {
            let why = stale
                ? "its heartbeat there is from a monitor that stopped, or from an earlier process with that pid"
                : "no \(name) in \(service.map { root + "/" + $0 } ?? root + " or its service directories")"
            throw CommandFailure(
                message: "process \(pid) has no running HangWatch monitor writing to \(root): \(why) (is HangWatch embedded, with heartbeats on, and is this its report directory?)",
                exitCode: Exit.nothingMatched)
        }
        guard signal > 0, access("/proc/\(pid)/task/\(watchdog)", F_OK) == 0 else {
            throw CommandFailure(
                message: "the monitor of process \(pid) does not answer thread dumps (it predates them, or its watchdog has not ticked yet)",
                exitCode: Exit.nothingMatched)
        }
        return (directories, signal, watchdog)
    }

    /// Queues the request to the monitor's watchdog thread (no other thread of the service is
    /// interrupted): the capture signal, its value the dump tag and a fresh nonce.
    static func ask(pid: Int32, watchdog: Int32, signal: Int32) throws -> UInt64 {
        let nonce = UInt64.random(in: 1..<(1 << 48))
        let value = (UInt64(0x4844) << 48) | nonce
        let sent = SystemCall.result("rt_tgsigqueueinfo") { hw_thread_sigqueue(pid, watchdog, signal, value) }
        if case .failure(let error) = sent {
            let hint = error.code == EPERM ? " (ask as the process's user, or as root)" : ""
            throw CommandFailure(message: "cannot signal process \(pid): \(error.reason.lowercased())\(hint)", exitCode: Exit.badInput)
        }
        return nonce
    }

    /// The path of the answer once it is written in one of `directories`.
    static func awaitAnswer(nonce: UInt64, in directories: [String], pid: Int32, timeout: Double) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        let name = ".dump-\(nonce).json"
        while Date() < deadline {
            for directory in directories where access(directory + "/" + name, F_OK) == 0 {
                return directory + "/" + name
            }
            usleep(20_000)
        }
        throw CommandFailure(
            message: "process \(pid) did not answer within \(Text.duration(timeout * 1000)) (its watchdog may be stuck, or busy with a hang's samples; try again, or a longer --timeout)",
            exitCode: Exit.badInput)
    }
}

/// What `/proc/<pid>/stat` says of a process.
enum ProcessStat {
    /// Field 22: the process's start time, clock ticks after boot.
    static func startTicks(_ pid: Int32) -> UInt64? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat"), let text = String(data: data, encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }
}
