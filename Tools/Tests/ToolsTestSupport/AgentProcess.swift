import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// The built `hangwatchd`, started the way systemd starts it: with a notify socket the test owns,
/// optionally a watchdog, and its log (standard error) in a file.
package final class AgentProcess {
    package let process = Process()
    package let notify: NotifySocket
    package let logPath: String
    package private(set) var messages: [String] = []

    package init(
        root: String, arguments: [String] = [], config: String? = nil, watchdogMicroseconds: UInt64? = nil,
        abstractSocket: Bool = false, environment overrides: [String: String?] = [:]
    ) throws {
        notify = try NotifySocket(abstract: abstractSocket)
        logPath = root + ".log"
        // An empty configuration file: every setting comes from the defaults and the arguments.
        let config = config ?? root + ".empty.env"
        if !FileManager.default.fileExists(atPath: config) { _ = FileManager.default.createFile(atPath: config, contents: Data()) }
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("hangwatchd"))
        process.arguments = ["--report-root", root, "--config", config, "--set", "HANGWATCHD_CHECK_INTERVAL=200ms",
            // Any free port: tests run agents side by side.
            "--set", "HANGWATCHD_METRICS_LISTEN=127.0.0.1:0",
        ] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.address
        // As systemd does when standard error is the journal: the log file's device and inode.
        environment["JOURNAL_STREAM"] = Self.deviceAndInode(logPath)
        if let watchdogMicroseconds { environment["WATCHDOG_USEC"] = String(watchdogMicroseconds) }
        // nil removes a variable.
        for (key, value) in overrides { environment[key] = value }
        process.environment = environment
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    /// `device:inode` of `path`, the way `$JOURNAL_STREAM` names a stream.
    package static func deviceAndInode(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return "\(info.st_dev):\(info.st_ino)"
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: logPath)
        try? FileManager.default.removeItem(atPath: (logPath as NSString).deletingPathExtension + ".empty.env")
    }

    package var log: String { String(decoding: FileManager.default.contents(atPath: logPath) ?? Data(), as: UTF8.self) }

    /// Collects notify messages until one, from message number `since` on, satisfies `condition`
    /// (or `timeout` passes); returns it.
    @discardableResult
    package func waitForMessage(since: Int = 0, timeout: Double = 20, _ condition: (String) -> Bool) -> String? {
        if let known = messages.dropFirst(since).first(where: condition) { return known }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            guard let message = notify.receive(timeout: min(0.25, max(0.01, deadline.timeIntervalSinceNow))) else {
                // Nothing more will come from a process that has exited.
                if !process.isRunning, notify.receive(timeout: 0.05) == nil { break }
                continue
            }
            messages.append(message)
            if condition(message) { return message }
        }
        return nil
    }

    /// The metrics endpoint's port, from the agent's log.
    package var metricsPort: Int? {
        guard let range = log.range(of: #"address=http://127\.0\.0\.1:(\d+)/metrics"#, options: .regularExpression) else { return nil }
        return Int(log[range].split(separator: ":").last?.split(separator: "/").first ?? "")
    }

    package func waitUntilReady() throws {
        try #require(waitForMessage { $0.contains("READY=1") } != nil, "not ready: \(log)")
    }

    package func signal(_ number: Int32) {
        // Not once it has exited: its pid may be another process's by now.
        guard process.isRunning else { return }
        kill(process.processIdentifier, number)
    }

    /// Waits for the process to exit (at most `timeout`); its status, or nil if it is still running.
    package func waitForExit(timeout: Double = 30) -> Int32? {
        Eventually.holds(timeout: timeout) { !process.isRunning }
        guard !process.isRunning else { return nil }
        return process.terminationStatus
    }
}

/// A spool root for one test (mode 1770, like the installed one).
package final class SpoolRoot {
    package let path: String

    package init(_ name: String = #function) throws {
        path = FileManager.default.temporaryDirectory.path + "/hangwatchd-e2e-\(getpid())-" + name.filter { $0.isLetter }.prefix(40)
            + "-" + UUID().uuidString.prefix(6)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        chmod(path, 0o1770)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    package func reports(_ service: String) -> [HangReport] {
        ((try? ReportStore(directory: path + "/" + service).list()) ?? []).compactMap { try? ReportReader().read(path: $0.path) }
    }

    package func names(_ service: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path + "/" + service)) ?? []).sorted()
    }
}
