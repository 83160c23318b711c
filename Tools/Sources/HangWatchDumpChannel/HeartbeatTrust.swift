@_spi(Internal) import HangWatchReport

/// Whether `hangwatch dump` may act on what it read: a heartbeat names the signal to queue and the
/// thread to queue it to, and the CLI often runs as root, so a heartbeat is believed only when its
/// owner could have signalled the process anyway (the process's user, or root) and every value
/// that picks the signal and the thread is in range. Pure: the facts are read elsewhere
/// (`TrustedDirectory`, `ProcessFacts.read`), and every decision is a row of its table test.
enum HeartbeatTrust {
    /// What kind of file a name is, as `fstat` on the open descriptor (or `O_NOFOLLOW`) says.
    enum FileKind: Equatable, Sendable {
        case regular, directory, symlink, other

        var text: String {
            switch self {
            case .regular: "a regular file"
            case .directory: "a directory"
            case .symlink: "a symbolic link (never followed)"
            case .other: "a FIFO, socket or device"
            }
        }
    }

    /// A file's facts, from `fstat` on the descriptor that is then read (never `stat` then `open`).
    struct FileFacts: Equatable, Sendable {
        var kind: FileKind
        var links: UInt64 = 1
        var uid: UInt32 = 0
        /// The permission bits (`st_mode & 0o7777`).
        var mode: UInt32 = 0o600
        /// Its device and inode (`st_dev`, `st_ino`): the process must map this very file.
        var identity: FileIdentity?
    }

    /// The facts of the directory a file is in, from `fstat` on a descriptor opened with
    /// `O_NOFOLLOW | O_DIRECTORY` (a symlink or a file there: `kind` says which).
    struct DirectoryFacts: Equatable, Sendable {
        var kind: FileKind
        var uid: UInt32 = 0
        var mode: UInt32 = 0o700
    }

    /// The process asked for its dump, read from `/proc` after the heartbeat.
    struct ProcessFacts: Equatable, Sendable {
        /// The pid the user gave (this reader's `/proc`'s).
        var pid: Int32
        /// Its real uid (`/proc/<pid>/status`).
        var uid: UInt32
        /// `/proc/<pid>/stat` field 22; nil when unreadable (the process is gone).
        var startTicks: UInt64?
        /// Its threads (`/proc/<pid>/task`), by the ids its own pid namespace gives them (what its
        /// heartbeat says) -> this reader's.
        var threads: [Int32: Int32]
        /// Its pid in its own pid namespace (`NSpid`'s last value): what its heartbeat says it is.
        var namespacePID: Int32
        /// The inode of its pid namespace; nil when it cannot be read.
        var pidNamespace: UInt64?
        /// The files it maps shared (`/proc/<pid>/maps`); empty when they cannot be read.
        var mappedFiles: Set<FileIdentity>

        init(
            pid: Int32, uid: UInt32, startTicks: UInt64?, threads: [Int32: Int32], namespacePID: Int32? = nil, pidNamespace: UInt64? = nil,
            mappedFiles: Set<FileIdentity>
        ) {
            self.pid = pid
            self.uid = uid
            self.startTicks = startTicks
            self.threads = threads
            self.namespacePID = namespacePID ?? pid
            self.pidNamespace = pidNamespace
            self.mappedFiles = mappedFiles
        }
    }

    /// A page that could not be read as a heartbeat (too short, bad magic, always being updated,
    /// or not opened).
    struct Unreadable: Error, Equatable, Sendable {
        var reason: String
    }

    /// Everything read about one heartbeat file.
    struct Facts: Equatable, Sendable {
        var path: String
        var directory: DirectoryFacts
        /// Nil when the file was not opened (the directory is refused, or `open` failed: then
        /// `heartbeat` says why).
        var file: FileFacts?
        var heartbeat: Result<MonitorHeartbeat, Unreadable>
        var process: ProcessFacts
        /// `SIGRTMIN()...SIGRTMAX()` of this system, at run time.
        var realTimeSignals: ClosedRange<Int32>
    }

    /// A heartbeat believed: where, and how its monitor is asked for a dump.
    struct Monitor: Equatable, Sendable {
        var path: String
        var signal: Int32
        var watchdog: Int32
    }

    enum Verdict: Equatable, Sendable {
        case accepted(Monitor)
        case refused(Refusal)
    }

    /// A heartbeat or answer not believed: the path and the fact that failed.
    struct Refusal: Equatable, Sendable, CustomStringConvertible {
        var path: String
        var reason: Reason
        var description: String { "refusing \(path): \(reason)" }
    }

    /// Why a file is not believed.
    enum Reason: Equatable, Sendable, CustomStringConvertible {
        case directoryNotADirectory(FileKind)
        case unreadable(String)
        case notARegularFile(FileKind)
        case hardLinked(links: UInt64)
        case ownedByAnotherUser(uid: UInt32, pid: Int32, processUID: UInt32)
        case writableByOthers(mode: UInt32)
        case directoryOwnedByAnotherUser(uid: UInt32, fileUID: UInt32)
        case directoryWritableByOthers(mode: UInt32)
        case namesAnotherProcess(pid: Int32, expected: Int32)
        case monitorStopped
        case fromAnEarlierProcess(ticks: UInt64, processTicks: UInt64?, pid: Int32)
        case answersNoDumps
        case notARealTimeSignal(signal: Int32, range: ClosedRange<Int32>)
        case watchdogIsTheMainThread(tid: Int32)
        case watchdogNotAThread(tid: Int32, pid: Int32)
        case fromAnotherNamespace(namespace: UInt64, processNamespace: UInt64?, pid: Int32)
        case notMappedByTheProcess(pid: Int32)

        var description: String {
            switch self {
            case .directoryNotADirectory(let kind):
                return "its directory is \(kind.text), not a directory"
            case .unreadable(let reason):
                return "cannot be read as a heartbeat: \(reason)"
            case .notARegularFile(let kind):
                return "\(kind.text), not a regular file"
            case .hardLinked(let links):
                return "it has \(links) names (hard links); a monitor writes its files under one name only"
            case .ownedByAnotherUser(let uid, let pid, let processUID):
                return "owned by uid \(uid), but process \(pid) runs as uid \(processUID) (only its user or root may write what the CLI acts on)"
            case .writableByOthers(let mode):
                return "writable by its group or others (mode \(octal(mode))); a monitor writes it 0600 or 0640"
            case .directoryOwnedByAnotherUser(let uid, let fileUID):
                return "its directory is owned by uid \(uid), not by the file's owner (uid \(fileUID))"
            case .directoryWritableByOthers(let mode):
                return "its directory is writable by others (mode \(octal(mode))); run chmod o-w on it"
            case .namesAnotherProcess(let pid, let expected):
                return "it names process \(pid), not \(expected)"
            case .monitorStopped:
                return "its monitor has stopped"
            case .fromAnEarlierProcess(let ticks, let processTicks, let pid):
                let now = processTicks.map { "process \(pid) started at tick \($0)" } ?? "process \(pid) has exited"
                return "it is from an earlier process with pid \(pid) (started at tick \(ticks); \(now))"
            case .answersNoDumps:
                return "its monitor answers no thread dumps (it predates them, or its watchdog has not ticked yet)"
            case .notARealTimeSignal(let signal, let range):
                return "it names signal \(signal), not a real-time signal (\(range.lowerBound)...\(range.upperBound)); a dump is only ever asked with one"
            case .watchdogIsTheMainThread(let tid):
                return "it names the main thread (\(tid)) as the watchdog; a monitor's watchdog is never the main thread"
            case .watchdogNotAThread(let tid, let pid):
                return "it names thread \(tid) as the watchdog, but that is not a thread of process \(pid)"
            case .fromAnotherNamespace(let namespace, let processNamespace, let pid):
                let theirs = processNamespace.map { "process \(pid)'s is \($0)" } ?? "process \(pid)'s cannot be read"
                return "it is from a process in pid namespace \(namespace), but \(theirs)"
            case .notMappedByTheProcess(let pid):
                return "process \(pid) does not map this file (a monitor keeps its heartbeat mapped while it runs; this one was written by someone else, or by a process that is gone)"
            }
        }

        /// Written by the process, but not (or no longer) able to answer: a monitor that stopped,
        /// an earlier process with the same pid, a watchdog that has not ticked yet. Not a sign
        /// that anyone forged anything.
        var isStaleOrNotReady: Bool {
            switch self {
            case .monitorStopped, .fromAnEarlierProcess, .answersNoDumps, .watchdogNotAThread: true
            default: false
            }
        }

        private func octal(_ mode: UInt32) -> String { "0" + String(mode & 0o7777, radix: 8) }
    }

    /// Permission bits that make a file untrustworthy: anyone but its owner may write it.
    static let fileForeignWrite: UInt32 = 0o022
    /// Permission bits that make a directory untrustworthy: everyone may write it. (Group-write is
    /// allowed: a service directory in the agent's spool is 0770, its group bits the mask of the
    /// agent's ACL; a file there written by anyone but the process's user or root is refused by
    /// its owner anyway.)
    static let directoryForeignWrite: UInt32 = 0o002

    /// The verdict on one heartbeat: the first fact that fails, in the order the table lists them
    /// (the directory, the file, the directory's owner and mode, then the page's values).
    static func judge(_ facts: Facts) -> Verdict {
        func refuse(_ reason: Reason) -> Verdict { .refused(Refusal(path: facts.path, reason: reason)) }
        guard facts.directory.kind == .directory else { return refuse(.directoryNotADirectory(facts.directory.kind)) }
        guard let file = facts.file else {
            if case .failure(let problem) = facts.heartbeat { return refuse(.unreadable(problem.reason)) }
            return refuse(.unreadable("not opened"))
        }
        if let reason = fileRefusal(file, process: facts.process) { return refuse(reason) }
        guard facts.directory.uid == file.uid else {
            return refuse(.directoryOwnedByAnotherUser(uid: facts.directory.uid, fileUID: file.uid))
        }
        guard facts.directory.mode & directoryForeignWrite == 0 else { return refuse(.directoryWritableByOthers(mode: facts.directory.mode)) }
        let heartbeat: MonitorHeartbeat
        switch facts.heartbeat {
        case .failure(let problem): return refuse(.unreadable(problem.reason))
        case .success(let read): heartbeat = read
        }
        let process = facts.process
        guard heartbeat.pid == process.namespacePID else {
            return refuse(.namesAnotherProcess(pid: heartbeat.pid, expected: process.namespacePID))
        }
        if heartbeat.pidNamespace != 0, heartbeat.pidNamespace != process.pidNamespace {
            return refuse(.fromAnotherNamespace(namespace: heartbeat.pidNamespace, processNamespace: process.pidNamespace, pid: process.pid))
        }
        guard heartbeat.startTimeTicks == process.startTicks else {
            return refuse(.fromAnEarlierProcess(ticks: heartbeat.startTimeTicks, processTicks: process.startTicks, pid: process.pid))
        }
        guard heartbeat.state != .stopped else { return refuse(.monitorStopped) }
        guard heartbeat.captureSignal != 0, heartbeat.watchdogTID != 0 else { return refuse(.answersNoDumps) }
        guard facts.realTimeSignals.contains(heartbeat.captureSignal) else {
            return refuse(.notARealTimeSignal(signal: heartbeat.captureSignal, range: facts.realTimeSignals))
        }
        guard heartbeat.watchdogTID != process.namespacePID else { return refuse(.watchdogIsTheMainThread(tid: heartbeat.watchdogTID)) }
        guard let watchdog = process.threads[heartbeat.watchdogTID] else {
            return refuse(.watchdogNotAThread(tid: heartbeat.watchdogTID, pid: process.pid))
        }
        // Last: that the process maps this very file, which nobody can plant (a container's root
        // writes root-owned files, and a host daemon's pid and start time are easily guessed).
        guard let identity = file.identity, process.mappedFiles.contains(identity) else {
            return refuse(.notMappedByTheProcess(pid: process.pid))
        }
        return .accepted(Monitor(path: facts.path, signal: heartbeat.captureSignal, watchdog: watchdog))
    }

    /// Why a file the CLI would read (a heartbeat, or a monitor's answer) is not believed, or nil:
    /// a regular file with one name, owned by the process's user or root, that no one else may
    /// write.
    static func fileRefusal(_ file: FileFacts, process: ProcessFacts) -> Reason? {
        guard file.kind == .regular else { return .notARegularFile(file.kind) }
        guard file.links == 1 else { return .hardLinked(links: file.links) }
        guard file.uid == process.uid || file.uid == 0 else {
            return .ownedByAnotherUser(uid: file.uid, pid: process.pid, processUID: process.uid)
        }
        guard file.mode & fileForeignWrite == 0 else { return .writableByOthers(mode: file.mode) }
        return nil
    }

    /// Two believed heartbeats of one process that name different ways to ask it.
    struct Disagreement: Error, Equatable, Sendable, CustomStringConvertible {
        var first: Monitor
        var second: Monitor
        var pid: Int32

        var description: String {
            "the heartbeats of process \(pid) disagree on how to ask it for a dump: \(first.path) names signal \(first.signal) to thread "
                + "\(first.watchdog), \(second.path) names signal \(second.signal) to thread \(second.watchdog) (a process's monitors "
                + "share one watchdog, so one of them was not written by this process's monitor; remove it, or pass --service)"
        }
    }

    /// The one way to ask `pid`, when every believed heartbeat agrees on it (a process may run
    /// several monitors, each writing to its own directory); the first two that differ otherwise.
    static func agreeing(_ monitors: [Monitor], pid: Int32) -> Result<Monitor, Disagreement> {
        precondition(!monitors.isEmpty, "agreeing(_:) needs at least one believed heartbeat")
        let first = monitors[0]
        if let other = monitors.first(where: { $0.signal != first.signal || $0.watchdog != first.watchdog }) {
            return .failure(Disagreement(first: first, second: other, pid: pid))
        }
        return .success(first)
    }
}
