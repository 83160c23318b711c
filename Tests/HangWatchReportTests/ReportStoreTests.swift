import Foundation
import HangWatchReport
import Synchronization
import HangWatchTestSupport
import Testing

@Suite struct ReportStoreTests {
    @Test func createsAPrivateDirectoryAndPrivateFiles() throws {
        let directory = ReportFixtures.temporaryDirectory() + "/nested/reports"
        let store = ReportStore(directory: directory)
        try store.prepare()
        let path = try store.write(ReportFixtures.report())
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
        let fileMode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
        #expect(fileMode == 0o600)
        #expect(path.hasSuffix("/hang-20261122T010203123Z-billing-42-1.json"))
    }

    /// Shared with the agent: the group bits carry the ACL mask that lets the agent's user in.
    @Test func sharedWithTheAgentDirectoriesAre0770AndReports0640() throws {
        let saved = umask(0o022)
        defer { umask(saved) }
        let directory = ReportFixtures.temporaryDirectory() + "/billing"
        let store = ReportStore(directory: directory, access: .sharedWithAgent)
        try store.prepare()
        let path = try store.write(ReportFixtures.report())
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
        let fileMode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        // The umask still applies where the file system has no default ACL.
        #expect(directoryMode == 0o750)
        #expect(fileMode == 0o640)
        // A group-writable directory is fine when shared, a world-writable one never.
        #expect(chmod(directory, 0o770) == 0)
        try store.prepare()
        #expect(chmod(directory, 0o777) == 0)
        #expect(throws: ReportStoreError.self) { try store.prepare() }
        #expect(throws: ReportStoreError.self) { try ReportStore(directory: directory).prepare() }
    }

    @Test func writeLeavesNoTemporaryFiles() throws {
        let store = ReportStore(directory: ReportFixtures.temporaryDirectory())
        try store.prepare()
        for index in 0..<5 {
            try store.write(ReportFixtures.report(id: "20261122T01020\(index)000Z-billing-42-\(index)"))
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: store.directory)
        #expect(names.count == 5)
        #expect(names.allSatisfy { ReportStore.isReportFileName($0) })
    }

    @Test func rewritingAReportReplacesIt() throws {
        let store = ReportStore(directory: ReportFixtures.temporaryDirectory())
        try store.prepare()
        try store.write(ReportFixtures.report(outcome: .ongoing))
        try store.write(ReportFixtures.report(durationMs: 900, outcome: .recovered))
        let files = try store.list()
        #expect(files.count == 1)
        let report = try ReportReader().read(path: files[0].path)
        #expect(report.outcome == .recovered)
        #expect(report.durationMs == 900)
    }

    @Test func aReaderNeverSeesAPartialReport() async throws {
        let store = ReportStore(directory: ReportFixtures.temporaryDirectory())
        try store.prepare()
        // A large report makes a torn write likely if writes were not atomic.
        let big = ReportFixtures.report(frames: 4000)
        try store.write(big)
        let path = store.path(forID: big.id)
        let stop = Atomic<Bool>(false)
        let writer = Thread {
            var report = big
            var count = 0.0
            while !stop.load(ordering: .relaxed) {
                count += 1
                report.durationMs = count
                try? store.write(report)
            }
        }
        writer.start()
        var reads = 0
        // Reads for 1.5 s and at least 11 times, whichever takes longer: a sanitized build reads a
        // report this large several times more slowly. Two minutes at most.
        let started = Date()
        while reads <= 10 || Date().timeIntervalSince(started) < 1.5, Date().timeIntervalSince(started) < 120 {
            let report = try ReportReader().read(path: path)
            #expect(report.frames.count == 4000)
            reads += 1
        }
        stop.store(true, ordering: .relaxed)
        #expect(reads > 10)
    }

    @Test func refusesADirectoryThatIsASymlink() throws {
        let base = ReportFixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: base + "/real", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: base + "/link", withDestinationPath: base + "/real")
        #expect(throws: ReportStoreError.notADirectory(base + "/link")) { try ReportStore(directory: base + "/link").prepare() }
    }

    @Test func refusesADirectoryOthersCanWriteInto() throws {
        let directory = ReportFixtures.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        chmod(directory, 0o777)
        do {
            try ReportStore(directory: directory).prepare()
            Issue.record("accepted a world-writable directory")
        } catch let error as ReportStoreError {
            #expect("\(error)".contains("writable by group or others"))
        }
        chmod(directory, 0o1777)  // sticky: like /tmp, acceptable
        try ReportStore(directory: directory).prepare()
    }

    @Test func listsOnlyRegularReportFilesOldestFirst() throws {
        let store = ReportStore(directory: ReportFixtures.temporaryDirectory())
        try store.prepare()
        try store.write(ReportFixtures.report(id: "20261122T020000000Z-b-1-2"))
        try store.write(ReportFixtures.report(id: "20261122T010000000Z-b-1-1"))
        try FileManager.default.createSymbolicLink(atPath: store.directory + "/hang-link.json", withDestinationPath: "/etc/passwd")
        try FileManager.default.createDirectory(atPath: store.directory + "/hang-dir.json", withIntermediateDirectories: false)
        FileManager.default.createFile(atPath: store.directory + "/notes.txt", contents: Data("x".utf8))
        #expect(mkfifo(store.directory + "/hang-fifo.json", 0o600) == 0)
        let names = try store.list().map(\.name)
        #expect(names == ["hang-20261122T010000000Z-b-1-1.json", "hang-20261122T020000000Z-b-1-2.json"])
    }

    @Test func retentionRemovesTheOldestBeyondTheCount() throws {
        let store = ReportStore(directory: ReportFixtures.temporaryDirectory())
        try store.prepare()
        for index in 1...6 {
            try store.write(ReportFixtures.report(id: "20261122T01000\(index)000Z-b-1-\(index)"))
        }
        let removed = try store.applyRetention(RetentionPolicy(maxReports: 4, maxBytes: 1 << 30))
        #expect(removed == ["hang-20261122T010001000Z-b-1-1.json", "hang-20261122T010002000Z-b-1-2.json"])
        #expect(try store.list().count == 4)
    }

    @Test func retentionRemovesTheOldestBeyondTheBytesButKeepsProtectedOnes() throws {
        let store = ReportStore(directory: ReportFixtures.temporaryDirectory())
        try store.prepare()
        for index in 1...4 {
            try store.write(ReportFixtures.report(id: "20261122T01000\(index)000Z-b-1-\(index)"))
        }
        let size = try store.list()[0].size
        let removed = try store.applyRetention(
            RetentionPolicy(maxReports: 100, maxBytes: size * 2), keeping: ["20261122T010001000Z-b-1-1"])
        #expect(removed == ["hang-20261122T010002000Z-b-1-2.json", "hang-20261122T010003000Z-b-1-3.json"])
        #expect(try store.list().map(\.id) == ["20261122T010001000Z-b-1-1", "20261122T010004000Z-b-1-4"])
    }

    @Test func removesOnlyStaleTemporaryFiles() throws {
        let store = ReportStore(directory: ReportFixtures.temporaryDirectory())
        try store.prepare()
        let stale = store.directory + "/.hang-x.json.1.1.tmp"
        let fresh = store.directory + "/.hang-y.json.1.2.tmp"
        FileManager.default.createFile(atPath: stale, contents: Data("{".utf8))
        FileManager.default.createFile(atPath: fresh, contents: Data("{".utf8))
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: stale)
        #expect(try store.removeStaleTemporaryFiles(olderThan: 3600) == 1)
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(FileManager.default.fileExists(atPath: fresh))
    }

    /// Thread dumps' answers nobody took go once stale; reports, heartbeats and fresh answers stay.
    @Test func removesOnlyStaleDumpAnswers() throws {
        let store = ReportStore(directory: ReportFixtures.temporaryDirectory())
        try store.prepare()
        let old = Date().addingTimeInterval(-120)
        for name in [".dump-1.json", ".dump-2.refused", ".dump-3.json", ".heartbeat-7", ".dump-4.txt"] {
            _ = FileManager.default.createFile(atPath: store.directory + "/" + name, contents: Data("x".utf8))
            if name != ".dump-3.json" {
                try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: store.directory + "/" + name)
            }
        }
        #expect(try store.removeStaleDumpAnswers(olderThan: 60) == 2)
        let left = try FileManager.default.contentsOfDirectory(atPath: store.directory).sorted()
        #expect(left == [".dump-3.json", ".dump-4.txt", ".heartbeat-7"], "\(left)")
        #expect(ReportStore.isDumpAnswerName(".dump-9.refused") && !ReportStore.isDumpAnswerName(".dump-9.tmp"))
    }

    @Test func aFullDiskIsReportedAsOutOfSpace() {
        let error = ReportStoreError.writeFailed(path: "/x", errno: ENOSPC, reason: "No space left on device")
        #expect(error.isOutOfSpace)
        #expect(!ReportStoreError.writeFailed(path: "/x", errno: EACCES, reason: "denied").isOutOfSpace)
    }

    /// Root writes through any mode bits; as root the write runs on a thread of its own whose
    /// filesystem user is `nobody` (the kernel then drops its file capabilities for that thread
    /// alone), so the mode is what refuses it, as it is for a service's own user.
    @Test func writingIntoAReadOnlyDirectoryFailsWithAClearError() throws {
        let store = ReportStore(directory: ReportFixtures.temporaryDirectory())
        try store.prepare()
        defer { try? FileManager.default.removeItem(atPath: store.directory) }
        // The control: the same store writes while the directory is writable.
        let written = try store.write(ReportFixtures.report())
        #expect(FileManager.default.fileExists(atPath: written))
        chmod(store.directory, 0o500)
        defer { chmod(store.directory, 0o700) }
        let outcome = UnprivilegedThread.run { () -> Result<String, any Error> in
            Result { try store.write(ReportFixtures.report(id: "20261122T010203124Z-billing-42-2")) }
        }
        guard case .failure(let error) = outcome else {
            Issue.record("a read-only directory was written to: \(outcome)")
            return
        }
        guard case .writeFailed(let path, let code, let reason) = error as? ReportStoreError else {
            Issue.record("not a write failure: \(error)")
            return
        }
        #expect(code == EACCES && path.hasPrefix(store.directory), "\(path): \(reason)")
        #expect("\(error)".contains(store.directory), "the message names the directory: \(error)")
    }
}

/// Runs a body on a thread of its own whose filesystem user id is `nobody` when the process is
/// root (glibc's `setfsuid` changes the calling thread only; from 0 to another id the kernel clears
/// that thread's file capabilities, CAP_DAC_OVERRIDE among them), and restores it after.
enum UnprivilegedThread {
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        typealias SetFilesystemUser = @convention(c) (UInt32) -> Int32
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            var previous: Int32?
            if geteuid() == 0, let symbol = dlsym(nil, "setfsuid") {
                previous = unsafeBitCast(symbol, to: SetFilesystemUser.self)(65534)
            }
            let value = body()
            if let previous, let symbol = dlsym(nil, "setfsuid") {
                _ = unsafeBitCast(symbol, to: SetFilesystemUser.self)(UInt32(previous))
            }
            result.withLock { $0 = value }
            done.signal()
        }
        thread.start()
        done.wait()
        return result.withLock { $0! }
    }
}
