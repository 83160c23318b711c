import CThreadSignal
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import HangWatchReading
import HangWatchRendering
@_spi(Internal) import HangWatchReport

/// Finding a process's monitor, asking it, and waiting for its answer. Nothing read is acted on
/// before `HeartbeatTrust` believes it: the CLI often runs as root, and a forged heartbeat would
/// otherwise pick the signal and the thread root sends it to.
package enum DumpRequest {
    /// A believed monitor: the directories of its heartbeats (where it answers), how to ask it,
    /// and the process (whose user, or root, must own the answer).
    package struct Found {
        var directories: [TrustedDirectory]
        package var signal: Int32
        package var watchdog: Int32
        var process: HeartbeatTrust.ProcessFacts
    }

    /// What the monitor wrote back.
    package enum Answer: Equatable {
        /// `.dump-N.json`: a report whose source is `dump`.
        case dump(Data, path: String)
        /// `.dump-N.refused`: why there is no dump (busy, rate limit), one line.
        case refused(String)
    }

    /// The most an answer may hold: a dump of thousands of threads is a few MiB, a task dump of
    /// 100,000 tasks about 21 MiB (docs/performance.md).
    static let maxDumpBytes: UInt64 = 256 << 20
    static let maxRefusalBytes: UInt64 = 4 << 10

    /// What makes `name` no service's name (a directory in the report directory, never a path),
    /// or nil: empty, `.`, `..`, or holding `/` or NUL.
    package static func serviceNameProblem(_ name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name == "." || name == ".." { return "is \(name)" }
        if name.contains("/") { return "holds a /" }
        if name.contains("\0") { return "holds a NUL" }
        return nil
    }

    /// The believed monitor of `pid` writing to `root` (or only to its `service` directory).
    package static func findMonitor(pid: Int32, in root: String, service: String?) throws -> Found {
        guard access("/proc/\(pid)", F_OK) == 0 else {
            throw CommandFailure(message: "no process \(pid) is running", exitCode: Exit.nothingMatched)
        }
        let rootDirectory = try openRoot(root)
        // Its heartbeat is named as its own pid namespace numbers it (a container's pid 1 writes
        // `.heartbeat-1-<namespace>`): looked up first, checked again after the heartbeat is read.
        guard let before = ProcessFacts.read(pid) else {
            throw CommandFailure(message: "process \(pid) exited", exitCode: Exit.nothingMatched)
        }
        let name = MonitorHeartbeat.fileName(pid: before.namespacePID, pidNamespace: before.pidNamespace)
        var accepted: [(HeartbeatTrust.Monitor, TrustedDirectory)] = []
        var refusals: [HeartbeatTrust.Refusal] = []
        var process: HeartbeatTrust.ProcessFacts?
        let candidates: [String?] = service.map { [$0] } ?? [nil] + (rootDirectory.names() ?? []).sorted()
        for candidate in candidates {
            guard let read = try heartbeatFacts(name, in: rootDirectory, candidate, pid: pid, explicit: service != nil) else { continue }
            let (facts, directory) = read
            process = facts.process
            switch HeartbeatTrust.judge(facts) {
            case .accepted(let monitor): accepted.append((monitor, directory ?? rootDirectory))
            case .refused(let refusal): refusals.append(refusal)
            }
        }
        guard let process, let first = accepted.first else {
            throw noMonitor(pid: pid, root: root, service: service, name: name, refusals: refusals)
        }
        for refusal in refusals where !refusal.reason.isStaleOrNotReady {
            Terminal.warn("hangwatch: warning: \(refusal)")
        }
        if case .failure(let disagreement) = HeartbeatTrust.agreeing(accepted.map(\.0), pid: pid) {
            throw CommandFailure(message: disagreement.description, exitCode: Exit.badInput)
        }
        return Found(directories: accepted.map(\.1), signal: first.0.signal, watchdog: first.0.watchdog, process: process)
    }

    private static func openRoot(_ root: String) throws -> TrustedDirectory {
        switch TrustedDirectory.open(root: root) {
        case .directory(let directory):
            return directory
        case .failed(let error):
            throw CommandFailure(message: ErrorText.cannot(.read, root, code: error.code, option: "--dir"), exitCode: Exit.badInput)
        case .absent, .notADirectory:
            throw CommandFailure(message: ReportDirectoryChoice.missing(root, origin: .option, code: ENOENT), exitCode: Exit.badInput)
        }
    }

    /// The facts of the heartbeat `name` in `root` or its subdirectory `candidate`, read file
    /// first, process after; nil when there is none there. The subdirectory is opened without
    /// following a symlink; a symlink is judged (refused) only when a heartbeat is behind it or
    /// the user named it.
    private static func heartbeatFacts(
        _ name: String, in root: TrustedDirectory, _ candidate: String?, pid: Int32, explicit: Bool
    ) throws -> (HeartbeatTrust.Facts, TrustedDirectory?)? {
        var directory: TrustedDirectory?
        var directoryFacts = root.facts
        var path = root.path + "/" + name
        var file: HeartbeatTrust.FileFacts?
        var heartbeat: Result<MonitorHeartbeat, HeartbeatTrust.Unreadable> = .failure(.init(reason: "not read"))
        if let candidate {
            path = root.path + "/" + candidate + "/" + name
            switch root.directory(candidate) {
            case .directory(let opened):
                (directory, directoryFacts) = (opened, opened.facts)
            case .absent:
                guard explicit else { return nil }
                throw CommandFailure(
                    message: "no service directory \(root.path)/\(candidate) (the services are its subdirectories: hangwatch list shows them)",
                    exitCode: Exit.nothingMatched)
            case .notADirectory(let kind):
                guard explicit || (kind == .symlink && root.exists(followingSymlinks: candidate + "/" + name)) else { return nil }
                directoryFacts = .init(kind: kind)
            case .failed(let error):
                guard explicit else { return nil }
                throw CommandFailure(message: ErrorText.cannot(.read, root.path + "/" + candidate, code: error.code), exitCode: Exit.badInput)
            }
        }
        if directoryFacts.kind == .directory {
            switch (directory ?? root).open(name) {
            case .absent:
                return nil
            case .symlink:
                file = .init(kind: .symlink)
            case .failed(let error):
                heartbeat = .failure(.init(reason: "cannot open it: \(error.reason.lowercased())"))
            case .file(let opened):
                file = opened.facts
                if opened.facts.kind == .regular { heartbeat = opened.heartbeat() }
            }
        }
        guard let process = ProcessFacts.read(pid) else {
            throw CommandFailure(message: "process \(pid) exited", exitCode: Exit.nothingMatched)
        }
        let facts = HeartbeatTrust.Facts(
            path: path, directory: directoryFacts, file: file, heartbeat: heartbeat, process: process, realTimeSignals: ProcessFacts.realTimeSignals)
        return (facts, directory)
    }

    /// Why no monitor is asked: a heartbeat not believed (exit 3), or none that is live (exit 1).
    private static func noMonitor(pid: Int32, root: String, service: String?, name: String, refusals: [HeartbeatTrust.Refusal]) -> CommandFailure {
        let untrusted = refusals.filter { !$0.reason.isStaleOrNotReady }
        if !untrusted.isEmpty {
            return CommandFailure(
                message: untrusted.map(\.description).joined(separator: "; ") + "; process \(pid) was not signalled", exitCode: Exit.badInput)
        }
        let stale = refusals.filter { reason in
            switch reason.reason {
            case .monitorStopped, .fromAnEarlierProcess: true
            default: false
            }
        }
        if let notReady = refusals.first(where: { !stale.contains($0) }) {
            return CommandFailure(
                message: "the monitor of process \(pid) does not answer thread dumps: \(notReady); process \(pid) was not signalled",
                exitCode: Exit.nothingMatched)
        }
        let why = stale.isEmpty
            ? "no \(name) in \(service.map { root + "/" + $0 } ?? root + " or its service directories")"
            : "its heartbeat there is from a monitor that stopped, or from an earlier process with that pid (\(stale[0]))"
        return CommandFailure(
            message: "process \(pid) has no running HangWatch monitor writing to \(root): \(why) (is HangWatch embedded, with heartbeats on, and is this its report directory?)",
            exitCode: Exit.nothingMatched)
    }

    /// What a request asks for: every thread, every Swift task (the nonce's bit 47), or the current
    /// window of every flight recorder (bit 46). A monitor that predates task dumps, or recent-window
    /// dumps, answers such a request with a thread dump, which the caller tells.
    package enum Kind: Sendable {
        case threads
        case tasks
        case recent

        /// The nonce's bits that ask for the tasks and for the recent windows.
        static let tasksBit: UInt64 = 1 << 47
        static let recentBit: UInt64 = 1 << 46

        /// A fresh nonce for this kind of request (48 bits, never 0): 46 random bits (never all
        /// zero), and the kind's bit.
        package func nonce() -> UInt64 {
            let random = UInt64.random(in: 1..<Self.recentBit)
            switch self {
            case .threads: return random
            case .tasks: return random | Self.tasksBit
            case .recent: return random | Self.recentBit
            }
        }
    }

    /// Why `answer`, process `pid`'s answer to a request of `kind`, is not what was asked for, or
    /// nil: a monitor that predates task dumps, or recent-window dumps, answers those with a thread
    /// dump (exit 1, naming the command that shows what it did answer).
    package static func mismatch(_ answer: HangReport, asked kind: Kind, pid: Int32) -> CommandFailure? {
        switch kind {
        case .tasks where answer.tasks == nil:
            return CommandFailure(
                message: "process \(pid) answered with a thread dump, not its tasks: its HangWatch predates task dumps (hangwatch dump \(pid) shows its threads)",
                exitCode: Exit.nothingMatched)
        case .recent where answer.recent == nil:
            return CommandFailure(
                message: "process \(pid) answered with a thread dump, not its recent windows: its HangWatch predates recent-window dumps (hangwatch dump \(pid) shows its threads)",
                exitCode: Exit.nothingMatched)
        default:
            return nil
        }
    }

    /// Queues the request to the monitor's watchdog thread (no other thread of the service is
    /// interrupted): the capture signal, its value the dump tag and a fresh nonce.
    package static func ask(pid: Int32, watchdog: Int32, signal: Int32, kind: Kind = .threads) throws -> UInt64 {
        let nonce = kind.nonce()
        let value = (UInt64(0x4844) << 48) | nonce
        let sent = SystemCall.result("rt_tgsigqueueinfo") { hw_thread_sigqueue(pid, watchdog, signal, value) }
        if case .failure(let error) = sent {
            let hint = error.code == EPERM ? " (ask as the process's user, or as root)" : ""
            throw CommandFailure(message: "cannot signal process \(pid): \(error.reason.lowercased())\(hint)", exitCode: Exit.badInput)
        }
        return nonce
    }

    /// The monitor's answer once it is written in one of the monitor's directories: checked like
    /// a heartbeat, read, and removed.
    package static func awaitAnswer(nonce: UInt64, from found: Found, timeout: Double) throws -> Answer {
        let pid = found.process.pid
        let deadline = Date().addingTimeInterval(timeout)
        let (dumpName, refusalName) = (".dump-\(nonce).json", ".dump-\(nonce).refused")
        while Date() < deadline {
            for directory in found.directories {
                if let data = try take(dumpName, in: directory, process: found.process, limit: maxDumpBytes) {
                    return .dump(data, path: directory.path + "/" + dumpName)
                }
                if let data = try take(refusalName, in: directory, process: found.process, limit: maxRefusalBytes) {
                    return .refused(refusalReason(data))
                }
            }
            usleep(20_000)
        }
        throw CommandFailure(
            message: "process \(pid) did not answer within \(Text.duration(timeout * 1000)) (its watchdog may be stuck, or busy with a hang's samples; try again, or a longer --timeout)",
            exitCode: Exit.badInput)
    }

    /// The answer `name` in `directory`, once there: believed (as a heartbeat's file is), read
    /// up to `limit` bytes, and removed. Nil while it is not there. One not believed is left
    /// alone (it is not the monitor's).
    private static func take(_ name: String, in directory: TrustedDirectory, process: HeartbeatTrust.ProcessFacts, limit: UInt64) throws -> Data? {
        let path = directory.path + "/" + name
        let file: TrustedDirectory.File
        switch directory.open(name) {
        case .absent:
            return nil
        case .symlink:
            throw untrustedAnswer(HeartbeatTrust.Refusal(path: path, reason: .notARegularFile(.symlink)), pid: process.pid)
        case .failed(let error):
            throw CommandFailure(message: ErrorText.cannot(.read, path, code: error.code), exitCode: Exit.badInput)
        case .file(let opened):
            file = opened
        }
        if let reason = HeartbeatTrust.fileRefusal(file.facts, process: process) {
            throw untrustedAnswer(HeartbeatTrust.Refusal(path: path, reason: reason), pid: process.pid)
        }
        defer { directory.remove(name) }
        do {
            return try file.contents(limit: limit)
        } catch let large as TrustedDirectory.File.TooLarge {
            throw CommandFailure(
                message: "refusing \(path): \(large.size) bytes, more than an answer may hold (\(large.limit)); removed", exitCode: Exit.badInput)
        } catch is TrustedDirectory.File.Grew {
            throw CommandFailure(message: "refusing \(path): it grew while read (a monitor writes its answer whole); removed", exitCode: Exit.badInput)
        } catch {
            throw CommandFailure(message: ErrorText.message(for: error), exitCode: Exit.badInput)
        }
    }

    private static func untrustedAnswer(_ refusal: HeartbeatTrust.Refusal, pid: Int32) -> CommandFailure {
        CommandFailure(message: "\(refusal); left as it is, and no answer of process \(pid) shown", exitCode: Exit.badInput)
    }

    /// The reason in a `.refused` answer: its first line, trimmed, control characters shown as
    /// `?` (it goes to a terminal).
    package static func refusalReason(_ data: Data) -> String {
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true).first ?? ""
        let printable = String(line.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        let trimmed = String(printable.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
        return trimmed.isEmpty ? "no reason given" : trimmed
    }
}
