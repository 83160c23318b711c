import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing
import ToolsTestSupport

/// A spool others can write into is hostile input: entries that are not plain reports of their
/// directory's owner, files made to exhaust memory, a root swapped for a symlink, reports naming
/// processes and binaries that are not what they claim. The agent leaves each alone, says so, and
/// keeps running.
@Suite(.serialized) struct HostileSpoolTests {
    /// A demo report re-dated and renamed (`id` decides the file name).
    static func demoReport(id: String, startedAt: Date) throws -> HangReport {
        let source = try DemoReports.directory.get()
        let file = try #require(try ReportStore(directory: source).list().first)
        var report = try ReportReader().read(path: file.path)
        report.id = id
        report.detectedAt = startedAt.addingTimeInterval(report.detectedAt.timeIntervalSince(report.startedAt))
        report.endedAt = report.endedAt.map { startedAt.addingTimeInterval($0.timeIntervalSince(report.startedAt)) }
        report.startedAt = startedAt
        return report
    }

    static let longAgo = Date(timeIntervalSince1970: 946_684_800)

    /// `lstat` of a path given as raw bytes (a name that is not UTF-8).
    static func exists(rawPath bytes: [UInt8]) -> Bool {
        var info = stat()
        return (bytes + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { lstat($0.baseAddress!, &info) } } == 0
    }

    static func identity(_ path: String) -> (mode: mode_t, inode: ino_t, size: Int, modified: Int)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (info.st_mode, info.st_ino, info.st_size, info.st_mtim.tv_sec * 1_000_000_000 + info.st_mtim.tv_nsec)
    }

    @Test func entriesThatAreNotPlainReportsAreNeitherFollowedBlockedOnNorDeleted() throws {
        let root = try SpoolRoot()
        try DemoReports.copy(into: root.path, service: "billing")
        let billing = root.path + "/billing/"
        func name(_ sequence: Int) -> String { "hang-20000101T000000000Z-billing-1-\(sequence).json" }
        // Every hostile entry holds (or points at) a valid report from 2000: with a one-day
        // maximum age, retention would delete whatever it took for a report.
        let old = try Self.demoReport(id: "20000101T000000000Z-billing-1-0", startedAt: Self.longAgo).encoded()
        let outside = [root.path + ".outside-symlinked.json", root.path + ".outside-hardlinked.json"]
        for path in outside { #expect(FileManager.default.createFile(atPath: path, contents: old)) }
        defer { for path in outside { unlink(path) } }

        var hostile: [String: String] = [:]  // name → the reason the agent must log
        try FileManager.default.createSymbolicLink(atPath: billing + name(1), withDestinationPath: outside[0])
        hostile[name(1)] = "a symlink"
        #expect(link(outside[1], billing + name(2)) == 0)
        hostile[name(2)] = "a hard link (2 names for one file)"
        #expect(mkfifo(billing + name(3), 0o640) == 0)
        hostile[name(3)] = "a FIFO"
        let socket = try NotifySocket(abstract: false)
        #expect(rename(socket.address, billing + name(4)) == 0)
        hostile[name(4)] = "a socket"
        if mknod(billing + name(5), S_IFCHR | 0o640, dev_t(1 << 8 | 3)) == 0 { hostile[name(5)] = "a device node" }
        #expect(FileManager.default.createFile(atPath: billing + name(6), contents: old))
        #expect(chown(billing + name(6), 12345, 12345) == 0)
        hostile[name(6)] = "owned by uid 12345, not by its directory's owner (uid 0)"
        #expect(FileManager.default.createFile(atPath: billing + name(7), contents: old))
        #expect(chmod(billing + name(7), 0o666) == 0)
        hostile[name(7)] = "writable by everyone"
        // Not names a monitor writes: ignored without a word.
        let dotted = "hang-20000101T000000000Z-..-1-8.json"
        #expect(FileManager.default.createFile(atPath: billing + dotted, contents: old))
        let notUTF8 = Array(billing.utf8) + Array("hang-20000101T000000000Z-".utf8) + [0xff, 0xfe] + Array("-1-9.json".utf8)
        let created = (notUTF8 + [0]).withUnsafeBufferPointer {
            $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT | O_EXCL, 0o640) }
        }
        #expect(created >= 0)
        if created >= 0 { close(created) }
        defer { _ = (notUTF8 + [0]).withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { unlink($0.baseAddress!) } } }
        // A world-writable service directory with an old report in it.
        try FileManager.default.createDirectory(atPath: root.path + "/open", withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: root.path + "/open/" + name(10), contents: old))
        #expect(chmod(root.path + "/open", 0o777) == 0)
        // And one plain old report, which retention does delete.
        let store = ReportStore(directory: root.path + "/billing", access: .sharedWithAgent)
        try store.write(try Self.demoReport(id: "20000101T000000000Z-billing-1-11", startedAt: Self.longAgo))

        let before = Dictionary(uniqueKeysWithValues: (Array(hostile.keys) + [dotted]).map { ($0, Self.identity(billing + $0)) })
        let agent = try AgentProcess(
            root: root.path,
            arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_ENRICH=no", "--set", "HANGWATCHD_MAX_AGE=1d"])
        // Ready promptly: nothing blocked on the FIFO.
        try agent.waitUntilReady()
        let ready = try #require(agent.messages.first { $0.contains("READY=1") })
        #expect(ready.contains("STATUS=1 service, 5 reports"), "\(ready)")
        #expect(agent.log.contains("<6>report deleted hangwatch.path=\(billing)\(name(11)) hangwatch.reason=\"older than the maximum age\""), "\(agent.log)")

        let log = agent.log
        for (entry, reason) in hostile {
            let lines = log.split(separator: "\n").filter { $0.contains("spool entry left alone") && $0.contains(billing + entry) }
            #expect(lines.count == 1, "\(entry): \(log)")
            #expect(lines.first?.contains("hangwatch.reason=\"\(reason)\"") == true, "\(entry): \(lines)")
        }
        #expect(log.contains("<4>spool entry left alone hangwatch.path=\(root.path)/open hangwatch.reason=\"a service directory writable by everyone\""), "\(log)")
        #expect(!log.contains(dotted))
        // Nothing hostile was touched, and nothing outside.
        for (entry, identity) in before {
            let now = Self.identity(billing + entry)
            #expect(now?.mode == identity?.mode && now?.inode == identity?.inode && now?.size == identity?.size, "\(entry)")
        }
        #expect(Self.exists(rawPath: notUTF8))
        #expect(FileManager.default.fileExists(atPath: root.path + "/open/" + name(10)))
        for path in outside { #expect(FileManager.default.contents(atPath: path) == old) }
        #expect(!root.names("billing").contains(name(11)))

        // A further pass logs nothing new: one line per entry, not one per pass.
        let logged = agent.log.components(separatedBy: "spool entry left alone").count
        let seen = agent.messages.count
        agent.signal(SIGHUP)
        #expect(agent.waitForMessage(since: seen) { $0.contains("READY=1") } != nil)
        #expect(agent.log.components(separatedBy: "spool entry left alone").count == logged)
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0, "\(agent.log)")
    }

    @Test func aSparseGigabyteReportIsRefusedByItsSizeWithoutGrowingTheAgent() throws {
        let root = try SpoolRoot()
        try DemoReports.copy(into: root.path, service: "billing")
        let huge = root.path + "/billing/hang-20000101T000000000Z-billing-1-1.json"
        let fd = open(huge, O_WRONLY | O_CREAT | O_EXCL, 0o640)
        try #require(fd >= 0)
        #expect(ftruncate(fd, 1 << 30) == 0)
        close(fd)
        let agent = try AgentProcess(root: root.path, arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_ENRICH=no"])
        try agent.waitUntilReady()
        #expect(agent.log.contains("unreadable report left alone hangwatch.error=\"\(huge): 1073741824 bytes is over the"), "\(agent.log)")
        let status = try String(contentsOfFile: "/proc/\(agent.process.processIdentifier)/status", encoding: .utf8)
        let peak = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        let kilobytes = try #require(Int(peak.split(separator: " ", omittingEmptySubsequences: true)[1]))
        #expect(kilobytes < 200 * 1024, "\(peak)")
        #expect(Self.identity(huge)?.size == 1 << 30)
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0)
    }

    @Test func aRootSwappedForASymlinkIsNotWorkedThroughUntilItIsBack() throws {
        let root = try SpoolRoot()
        try DemoReports.copy(into: root.path, service: "billing")
        let agent = try AgentProcess(
            root: root.path,
            arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_ENRICH=no", "--set", "HANGWATCHD_MAX_AGE=1d",
                "--set", "HANGWATCHD_SCAN_INTERVAL=1s"])
        try agent.waitUntilReady()

        // Elsewhere: an old report retention would delete, and a provisional one of a dead
        // process it would finish.
        let elsewhere = root.path + ".elsewhere"
        let moved = root.path + ".moved"
        defer {
            // Whatever happened, the root is a directory again for its own clean-up.
            if (try? FileManager.default.destinationOfSymbolicLink(atPath: root.path)) != nil { unlink(root.path) }
            rename(moved, root.path)
            try? FileManager.default.removeItem(atPath: elsewhere)
        }
        let store = ReportStore(directory: elsewhere + "/billing", access: .sharedWithAgent)
        try store.prepare()
        let oldPath = try store.write(try Self.demoReport(id: "20000101T000000000Z-billing-1-1", startedAt: Self.longAgo))
        var provisional = try Self.demoReport(id: "20000101T000000000Z-billing-999999-2", startedAt: Date())
        provisional.pid = 999_999
        provisional.outcome = .ongoing
        provisional.endedAt = nil
        let provisionalPath = try store.write(provisional)
        let before = [oldPath, provisionalPath].map { FileManager.default.contents(atPath: $0) }

        let seen = agent.messages.count
        #expect(rename(root.path, moved) == 0)
        try FileManager.default.createSymbolicLink(atPath: root.path, withDestinationPath: elsewhere)
        let refusal = agent.waitForMessage(since: seen) { $0.contains("STATUS=spool unsafe, nothing done") }
        #expect(refusal?.contains("it is a symlink") == true, "\(agent.log)")
        #expect(agent.log.contains("<3>the spool root is unsafe; leaving it alone until it is restored"))
        // Several checks and a full scan later, nothing was read, finished or deleted through it.
        #expect(agent.waitForMessage(since: seen, timeout: 2.5) { $0.contains("WATCHDOG") || $0.contains("reports (") } == nil)
        #expect([oldPath, provisionalPath].map { FileManager.default.contents(atPath: $0) } == before)
        #expect(!agent.log.contains("report deleted"))
        #expect(!agent.log.contains("fatal hang"))
        #expect(agent.log.components(separatedBy: "the spool root is unsafe").count == 2, "logged once: \(agent.log)")
        #expect(agent.process.isRunning)

        // Put back: the agent carries on with its own spool.
        #expect(unlink(root.path) == 0)
        #expect(rename(moved, root.path) == 0)
        #expect(agent.waitForMessage(since: seen) { $0.contains("STATUS=1 service, 5 reports") } != nil, "\(agent.log)")
        #expect(agent.log.contains("<5>the spool root is safe again"))
        #expect([oldPath, provisionalPath].map { FileManager.default.contents(atPath: $0) } == before)
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0, "\(agent.log)")
    }

    @Test func aReportsPidAndBinaryPathsAreCheckedNotTrusted() throws {
        let root = try SpoolRoot()
        let agent = try AgentProcess(
            root: root.path,
            arguments: ["--set", "HANGWATCHD_SELF_THRESHOLD=0", "--set", "HANGWATCHD_ENRICH_DELAY=0s", "--set", "HANGWATCHD_MAX_AGE=1d"])
        try agent.waitUntilReady()
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["600"]
        try sleeper.run()
        defer {
            kill(sleeper.processIdentifier, SIGKILL)
            sleeper.waitUntilExit()
        }
        func startTicks(_ pid: Int32) throws -> UInt64 {
            let text = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            let fields = text[text.index(after: try #require(text.lastIndex(of: ")")))...].split(separator: " ")
            return try #require(UInt64(fields[19]))
        }
        let fifo = root.path + ".binary-fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let store = ReportStore(directory: root.path + "/billing", access: .sharedWithAgent)
        try store.prepare()
        let agentPid = agent.process.processIdentifier
        // (pid, start time, should be finished as): a live unrelated process and the agent itself
        // are left alone; a start time that differs means the writer is gone.
        let cases: [(pid: Int32, ticks: UInt64, reason: String?)] = [
            (sleeper.processIdentifier, try startTicks(sleeper.processIdentifier), nil),
            (sleeper.processIdentifier, try startTicks(sleeper.processIdentifier) + 1, "pid reused"),
            (agentPid, try startTicks(agentPid), nil),
            (agentPid, 1, "pid reused"),
        ]
        for (index, entry) in cases.enumerated() {
            // Those left alone are two days old: only a hang still going on in a live process
            // outlives the one-day limit. Those finished are new, so they stay to be read.
            let started = Date().addingTimeInterval(entry.reason == nil ? -2 * 86_400 : -1)
            var report = try Self.demoReport(id: ReportTimestamp.compact(started) + "-billing-\(entry.pid)-\(index)", startedAt: started)
            report.pid = entry.pid
            report.process.startTimeTicks = entry.ticks
            report.outcome = .ongoing
            report.endedAt = nil
            report.symbolication = nil
            // Binaries that are not binaries: a FIFO would block an open, /etc/shadow is no ELF.
            for image in report.images.indices { report.images[image].path = index == 1 ? fifo : "/etc/shadow" }
            for frame in report.frames.indices { report.frames[frame].symbol = nil }
            try store.write(report)
        }
        func report(_ index: Int) -> HangReport? { root.reports("billing").first { $0.id.hasSuffix("-\(index)") } }
        #expect(Eventually.holds(timeout: 20, interval: 0.02) { report(1)?.symbolication != nil && report(3)?.symbolication != nil }, "\(agent.log)")
        for (index, entry) in cases.enumerated() {
            let written = try #require(report(index), "\(index)")
            #expect(written.outcome == (entry.reason == nil ? .ongoing : .processExited), "\(index)")
            #expect(written.processExit?.reason == entry.reason, "\(index)")
        }
        let problems = report(1)?.symbolication?.problems ?? []
        #expect(problems == ["\(fifo): not a regular file"], "\(problems)")
        let shadow = report(3)?.symbolication?.problems ?? []
        #expect(shadow.count == 1 && shadow.allSatisfy { $0.hasPrefix("/etc/shadow: ") && !$0.contains("root:") }, "\(shadow)")
        // The live process was only looked at, never signalled or traced.
        let status = try String(contentsOfFile: "/proc/\(sleeper.processIdentifier)/status", encoding: .utf8)
        #expect(status.contains("State:\tS (sleeping)"), "\(status)")
        #expect(status.contains("TracerPid:\t0"))
        agent.signal(SIGTERM)
        #expect(agent.waitForExit() == 0, "\(agent.log)")
    }
}
