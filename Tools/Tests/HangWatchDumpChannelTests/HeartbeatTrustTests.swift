import Foundation
@_spi(Internal) import HangWatchReport
import Testing

@testable import HangWatchDumpChannel

/// What `hangwatch dump` believes of a heartbeat it found (it often runs as root, and the heartbeat
/// picks the signal and the thread it is sent to): one row per fact that can fail, and the row
/// where every fact holds. Process 4242 runs as uid 1000, started at tick 777, threads 4242 (main),
/// 4243 (the watchdog) and 4244, and maps the heartbeat (device 0xfe00, inode 16228453); the
/// real-time signals are 34...64. In the container's rows it is pid 1 of pid namespace 4026532175,
/// its threads 1, 2 and 3 there.
@Suite struct HeartbeatTrustTests {
    static let path = "/var/lib/hangwatch/reports/billing/.heartbeat-4242"
    static let page = FileIdentity(device: 0xfe00, inode: 16_228_453)
    static let process = HeartbeatTrust.ProcessFacts(
        pid: 4242, uid: 1000, startTicks: 777, threads: [4242: 4242, 4243: 4243, 4244: 4244], mappedFiles: [page])
    static let container = HeartbeatTrust.ProcessFacts(
        pid: 4242, uid: 1000, startTicks: 777, threads: [1: 4242, 2: 4243, 3: 4244], namespacePID: 1, pidNamespace: 4_026_532_175,
        mappedFiles: [page])

    static func heartbeat(
        pid: Int32 = 4242, ticks: UInt64 = 777, state: MonitorHeartbeat.State = .watching, signal: Int32 = 35, watchdog: Int32 = 4243,
        pidNamespace: UInt64 = 0
    ) -> MonitorHeartbeat {
        MonitorHeartbeat(
            pid: pid, startTimeTicks: ticks, startedUnixMilliseconds: 1, tickMonotonicNanoseconds: 2, tickUnixMilliseconds: 3,
            intervalMilliseconds: 100, state: state, activityWord: 0, hangsDetected: 0, thresholdMicroseconds: 250_000,
            captureSignal: signal, watchdogTID: watchdog, pidNamespace: pidNamespace)
    }

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var directory = HeartbeatTrust.DirectoryFacts(kind: .directory, uid: 1000, mode: 0o770)
        var file: HeartbeatTrust.FileFacts? = HeartbeatTrust.FileFacts(kind: .regular, links: 1, uid: 1000, mode: 0o640, identity: HeartbeatTrustTests.page)
        var heartbeat: Result<MonitorHeartbeat, HeartbeatTrust.Unreadable> = .success(HeartbeatTrustTests.heartbeat())
        var process = HeartbeatTrustTests.process
        /// The refusal, or nil: accepted (signal 35 to thread 4243).
        var refused: HeartbeatTrust.Reason?
        /// Words the refusal's text says (beside the path, which every refusal names).
        var says: [String] = []
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "the service's own heartbeat, in its 0770 spool directory"),
        Row(name: "root's heartbeat in root's directory, for a service of another user",
            directory: .init(kind: .directory, uid: 0, mode: 0o700), file: .init(kind: .regular, uid: 0, mode: 0o600, identity: page)),
        Row(name: "the directory is a symlink", directory: .init(kind: .symlink), file: nil,
            refused: .directoryNotADirectory(.symlink), says: ["directory is a symbolic link"]),
        Row(name: "the directory is a file", directory: .init(kind: .regular), file: nil,
            refused: .directoryNotADirectory(.regular), says: ["not a directory"]),
        Row(name: "the file could not be opened", file: nil, heartbeat: .failure(.init(reason: "cannot open it: permission denied")),
            refused: .unreadable("cannot open it: permission denied"), says: ["permission denied"]),
        Row(name: "the file is a symlink", file: .init(kind: .symlink), heartbeat: .failure(.init(reason: "not read")),
            refused: .notARegularFile(.symlink), says: ["symbolic link", "not a regular file"]),
        Row(name: "the file is a FIFO", file: .init(kind: .other, uid: 1000), refused: .notARegularFile(.other), says: ["FIFO"]),
        Row(name: "the file is a directory", file: .init(kind: .directory, uid: 1000), refused: .notARegularFile(.directory)),
        Row(name: "the file is a hard link", file: .init(kind: .regular, links: 2, uid: 1000, mode: 0o600),
            refused: .hardLinked(links: 2), says: ["2 names"]),
        Row(name: "the file is owned by another user (nobody forging a heartbeat)",
            directory: .init(kind: .directory, uid: 65534, mode: 0o700), file: .init(kind: .regular, uid: 65534, mode: 0o600),
            refused: .ownedByAnotherUser(uid: 65534, pid: 4242, processUID: 1000), says: ["owned by uid 65534, but process 4242 runs as uid 1000"]),
        Row(name: "the file is group-writable", file: .init(kind: .regular, uid: 1000, mode: 0o660),
            refused: .writableByOthers(mode: 0o660), says: ["mode 0660"]),
        Row(name: "the file is world-writable", file: .init(kind: .regular, uid: 1000, mode: 0o646),
            refused: .writableByOthers(mode: 0o646), says: ["mode 0646"]),
        Row(name: "the directory is another user's", directory: .init(kind: .directory, uid: 0, mode: 0o755),
            refused: .directoryOwnedByAnotherUser(uid: 0, fileUID: 1000), says: ["owned by uid 0", "file's owner (uid 1000)"]),
        Row(name: "the directory is world-writable", directory: .init(kind: .directory, uid: 1000, mode: 0o777),
            refused: .directoryWritableByOthers(mode: 0o777), says: ["mode 0777"]),
        Row(name: "the directory is world-writable and sticky", directory: .init(kind: .directory, uid: 1000, mode: 0o1777),
            refused: .directoryWritableByOthers(mode: 0o1777), says: ["mode 01777"]),
        Row(name: "the page is not a heartbeat", heartbeat: .failure(.init(reason: "bad magic or state")),
            refused: .unreadable("bad magic or state"), says: ["cannot be read as a heartbeat: bad magic"]),
        Row(name: "the page names another process", heartbeat: .success(heartbeat(pid: 4243)),
            refused: .namesAnotherProcess(pid: 4243, expected: 4242), says: ["names process 4243, not 4242"]),
        Row(name: "the page is from an earlier process with the pid", heartbeat: .success(heartbeat(ticks: 700)),
            refused: .fromAnEarlierProcess(ticks: 700, processTicks: 777, pid: 4242), says: ["earlier process", "tick 700", "tick 777"]),
        Row(name: "the process exited meanwhile", process: .init(pid: 4242, uid: 1000, startTicks: nil, threads: [:], mappedFiles: []),
            refused: .fromAnEarlierProcess(ticks: 777, processTicks: nil, pid: 4242), says: ["has exited"]),
        Row(name: "the monitor stopped", heartbeat: .success(heartbeat(state: .stopped)), refused: .monitorStopped, says: ["stopped"]),
        Row(name: "the monitor answers no dumps", heartbeat: .success(heartbeat(signal: 0, watchdog: 0)),
            refused: .answersNoDumps, says: ["answers no thread dumps"]),
        Row(name: "the watchdog has not ticked yet", heartbeat: .success(heartbeat(watchdog: 0)), refused: .answersNoDumps),
        Row(name: "SIGKILL", heartbeat: .success(heartbeat(signal: 9)),
            refused: .notARealTimeSignal(signal: 9, range: 34...64), says: ["signal 9, not a real-time signal (34...64)"]),
        Row(name: "SIGTERM", heartbeat: .success(heartbeat(signal: 15)), refused: .notARealTimeSignal(signal: 15, range: 34...64)),
        Row(name: "one past SIGRTMAX", heartbeat: .success(heartbeat(signal: 65)), refused: .notARealTimeSignal(signal: 65, range: 34...64)),
        Row(name: "a signal the C library keeps for itself (32)", heartbeat: .success(heartbeat(signal: 32)),
            refused: .notARealTimeSignal(signal: 32, range: 34...64)),
        Row(name: "a negative signal", heartbeat: .success(heartbeat(signal: -1)), refused: .notARealTimeSignal(signal: -1, range: 34...64)),
        Row(name: "SIGRTMIN", heartbeat: .success(heartbeat(signal: 34))),
        Row(name: "SIGRTMAX", heartbeat: .success(heartbeat(signal: 64))),
        Row(name: "the watchdog named is the main thread", heartbeat: .success(heartbeat(watchdog: 4242)),
            refused: .watchdogIsTheMainThread(tid: 4242), says: ["main thread (4242)"]),
        Row(name: "the watchdog named is another process's thread", heartbeat: .success(heartbeat(watchdog: 1)),
            refused: .watchdogNotAThread(tid: 1, pid: 4242), says: ["thread 1", "not a thread of process 4242"]),
        Row(name: "a file the process does not map (planted: every other fact copied from it)",
            file: .init(kind: .regular, uid: 1000, mode: 0o600, identity: .init(device: 0xfe00, inode: 99)),
            refused: .notMappedByTheProcess(pid: 4242), says: ["process 4242 does not map this file"]),
        Row(name: "a file whose identity was not read", file: .init(kind: .regular, uid: 1000, mode: 0o600),
            refused: .notMappedByTheProcess(pid: 4242)),
        Row(name: "a process whose maps could not be read",
            process: .init(pid: 4242, uid: 1000, startTicks: 777, threads: [4242: 4242, 4243: 4243], mappedFiles: []),
            refused: .notMappedByTheProcess(pid: 4242)),
        Row(name: "a container's process: pid 1 and watchdog 2 in its namespace are 4242 and 4243 here",
            heartbeat: .success(heartbeat(pid: 1, watchdog: 2, pidNamespace: 4_026_532_175)), process: container),
        Row(name: "a container's heartbeat naming the host's pid (4242 is not its pid there)",
            heartbeat: .success(heartbeat(pid: 4242, watchdog: 2, pidNamespace: 4_026_532_175)), process: container,
            refused: .namesAnotherProcess(pid: 4242, expected: 1), says: ["names process 4242, not 1"]),
        Row(name: "a heartbeat of another namespace's pid 1",
            heartbeat: .success(heartbeat(pid: 1, watchdog: 2, pidNamespace: 4_026_532_999)), process: container,
            refused: .fromAnotherNamespace(namespace: 4_026_532_999, processNamespace: 4_026_532_175, pid: 4242),
            says: ["pid namespace 4026532999", "process 4242's is 4026532175"]),
        Row(name: "a container's heartbeat naming the host's tid of its watchdog",
            heartbeat: .success(heartbeat(pid: 1, watchdog: 4243, pidNamespace: 4_026_532_175)), process: container,
            refused: .watchdogNotAThread(tid: 4243, pid: 4242)),
        Row(name: "a container's heartbeat naming its main thread", heartbeat: .success(heartbeat(pid: 1, watchdog: 1, pidNamespace: 4_026_532_175)),
            process: container, refused: .watchdogIsTheMainThread(tid: 1)),
    ]

    @Test(arguments: rows) func aHeartbeatIsBelievedOnlyWhenEveryFactHolds(_ row: Row) {
        let facts = HeartbeatTrust.Facts(
            path: Self.path, directory: row.directory, file: row.file, heartbeat: row.heartbeat, process: row.process, realTimeSignals: 34...64)
        let verdict = HeartbeatTrust.judge(facts)
        guard let reason = row.refused else {
            let signal = (try? row.heartbeat.get())?.captureSignal ?? 0
            #expect(verdict == .accepted(.init(path: Self.path, signal: signal, watchdog: 4243)))
            return
        }
        #expect(verdict == .refused(.init(path: Self.path, reason: reason)))
        guard case .refused(let refusal) = verdict else { return }
        #expect(refusal.description.hasPrefix("refusing \(Self.path): "), "\(refusal)")
        for words in row.says {
            #expect(refusal.description.contains(words), "\(refusal)")
        }
    }

    @Test func onlyAStoppedMonitorAnEarlierProcessOrAnUnreadyWatchdogIsNotTakenForAForgery() {
        let benign: [HeartbeatTrust.Reason] = [
            .monitorStopped, .fromAnEarlierProcess(ticks: 1, processTicks: 2, pid: 3), .answersNoDumps, .watchdogNotAThread(tid: 1, pid: 2),
        ]
        #expect(benign.allSatisfy { $0.isStaleOrNotReady })
        let forged: [HeartbeatTrust.Reason] = [
            .directoryNotADirectory(.symlink), .unreadable("x"), .notARegularFile(.symlink), .hardLinked(links: 2),
            .ownedByAnotherUser(uid: 1, pid: 2, processUID: 3), .writableByOthers(mode: 0o666), .directoryOwnedByAnotherUser(uid: 1, fileUID: 2),
            .directoryWritableByOthers(mode: 0o777), .namesAnotherProcess(pid: 1, expected: 2), .notARealTimeSignal(signal: 9, range: 34...64),
            .watchdogIsTheMainThread(tid: 1), .notMappedByTheProcess(pid: 1), .fromAnotherNamespace(namespace: 1, processNamespace: 2, pid: 3),
        ]
        #expect(!forged.contains { $0.isStaleOrNotReady })
    }

    /// An answer file is checked like a heartbeat's file: the directory was checked with it.
    @Test(arguments: [
        (HeartbeatTrust.FileFacts(kind: .regular, uid: 1000, mode: 0o600), HeartbeatTrust.Reason?.none),
        (HeartbeatTrust.FileFacts(kind: .regular, uid: 0, mode: 0o600), nil),
        (HeartbeatTrust.FileFacts(kind: .symlink), .notARegularFile(.symlink)),
        (HeartbeatTrust.FileFacts(kind: .regular, links: 3, uid: 1000), .hardLinked(links: 3)),
        (HeartbeatTrust.FileFacts(kind: .regular, uid: 65534), .ownedByAnotherUser(uid: 65534, pid: 4242, processUID: 1000)),
        (HeartbeatTrust.FileFacts(kind: .regular, uid: 1000, mode: 0o606), .writableByOthers(mode: 0o606)),
    ])
    func anAnswerIsReadOnlyWhenItsFileIsTheProcesssUsersOrRoots(_ file: HeartbeatTrust.FileFacts, _ refusal: HeartbeatTrust.Reason?) {
        #expect(HeartbeatTrust.fileRefusal(file, process: Self.process) == refusal)
    }

    @Test func heartbeatsThatAgreeAreOneMonitorAndOnesThatDisagreeAreAnErrorNamingBoth() throws {
        let root = HeartbeatTrust.Monitor(path: "/r/.heartbeat-4242", signal: 35, watchdog: 4243)
        let billing = HeartbeatTrust.Monitor(path: "/r/billing/.heartbeat-4242", signal: 35, watchdog: 4243)
        #expect(HeartbeatTrust.agreeing([root, billing], pid: 4242) == .success(root))
        #expect(HeartbeatTrust.agreeing([billing], pid: 4242) == .success(billing))
        for other in [
            HeartbeatTrust.Monitor(path: "/r/cart/.heartbeat-4242", signal: 36, watchdog: 4243),
            HeartbeatTrust.Monitor(path: "/r/cart/.heartbeat-4242", signal: 35, watchdog: 4244),
        ] {
            guard case .failure(let disagreement) = HeartbeatTrust.agreeing([root, billing, other], pid: 4242) else {
                Issue.record("\(other) agreed")
                continue
            }
            #expect(disagreement.first == root && disagreement.second == other)
            let text = disagreement.description
            #expect(text.contains("/r/.heartbeat-4242 names signal 35 to thread 4243"), "\(text)")
            #expect(text.contains("/r/cart/.heartbeat-4242 names signal \(other.signal) to thread \(other.watchdog)"), "\(text)")
            #expect(text.contains("heartbeats of process 4242 disagree"), "\(text)")
        }
    }

    @Test(arguments: [
        ("billing", String?.none), ("billing-2.eu", nil), ("..billing", nil), ("", "is empty"), (".", "is ."), ("..", "is .."),
        ("../x", "holds a /"), ("/etc", "holds a /"), ("a/b", "holds a /"), ("a\0b", "holds a NUL"),
    ])
    func serviceIsANameNeverAPath(_ name: String, _ problem: String?) {
        #expect(DumpRequest.serviceNameProblem(name) == problem)
    }

    @Test(arguments: [
        ("busy: another dump is being taken\n", "busy: another dump is being taken"),
        ("rate limit: at most 6 dumps a minute; try again in 8 s\nsecond line\n", "rate limit: at most 6 dumps a minute; try again in 8 s"),
        ("  \u{1B}[31mred\u{7} \n", "?[31mred?"),
        ("", "no reason given"), ("\n\n", "no reason given"),
    ])
    func aRefusalIsItsFirstLineWithNoControlCharacters(_ text: String, _ reason: String) {
        #expect(DumpRequest.refusalReason(Data(text.utf8)) == reason)
    }
}
