import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// `hangwatch dump PID` against a live process: the library's `hangwatch-waits` service (release
/// build, made by `make test` in the library's package) deadlocked, and processes without HangWatch.
@Suite(.serialized) struct DumpCommandTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized.path
    static var waits: String { repository + "/.build/release/hangwatch-waits" }
    static var cli: String { BuiltExecutable.path("hangwatch") }

    /// A deadlocked service, asked twice (the request and its answer leave nothing behind): both
    /// threads of the cycle, their stacks at the lock each waits for, the cycle first, exit 0.
    @Test func aLiveTwoThreadDeadlockIsDumpedWithBothThreadsTheirStacksAndTheCycle() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.waits), "build it: swift build -c release --product hangwatch-waits")
        let directory = ReportDirectory("dump-deadlock")
        let service = try RunningExecutable(Self.waits, ["deadlock", "--reports", directory.path])
        defer {
            service.signal(SIGKILL)
            _ = service.finish(within: 10)
        }
        // Deadlocked (its report says so), and its watchdog has ticked (the heartbeat names it).
        #expect(Eventually.holds(timeout: 20) { directory.reports().contains { $0.context.verdict == .deadlocked } })
        let line = Eventually.value(timeout: 10, { service.output }, until: { $0.contains("holderTid") })
        let announced = try #require(line.split(separator: "\n").first { $0.hasPrefix("{") }, "\(line)")
        let ids = try JSONDecoder().decode([String: Int32].self, from: Data(announced.utf8))
        let (main, peer) = (try #require(ids["waiterTid"]), try #require(ids["holderTid"]))
        let pid = service.process.processIdentifier
        for _ in 0..<2 {
            let text = try ExecutableRun.run(Self.cli, ["dump", String(pid), "--dir", directory.path, "--color", "never"], timeout: 30)
            #expect(text.status == 0, "\(text.errors)")
            let lines = text.output.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("thread dump of waits (pid \(pid)") == true, "\(text.output)")
            #expect(lines.dropFirst().first?.hasPrefix("DEADLOCK  \(main) \"hangwatch-waits\" → \(peer) \"deadlock-peer\" → \(main)") == true, "\(text.output)")
            for tid in [main, peer] {
                let header = try #require(lines.firstIndex { $0.contains("tid \(tid)") }, "\(tid) missing: \(text.output)")
                #expect(lines[header].contains("blocked in futex for "), "\(lines[header])")
                #expect(lines[header + 1].contains("waits for mutex") && lines[header + 1].contains("held by thread \(tid == main ? peer : main)"))
                #expect(lines[(header + 2)...].prefix(4).contains { $0.contains("takeSecondLock") }, "\(lines[header...].prefix(6))")
            }
        }
        let json = try ExecutableRun.run(Self.cli, ["dump", String(pid), "--dir", directory.path, "--json"], timeout: 30)
        let dump = try HangReport.makeDecoder().decode(HangReport.self, from: Data(json.output.utf8))
        #expect(dump.source == "dump" && dump.context.verdict == .deadlocked)
        #expect(Set(dump.waitsFor?.deadlock ?? []) == [main, peer])
        #expect((dump.threads ?? []).count >= 3)
        // Answers are read and removed: nothing but the hang's report and the heartbeat is left.
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(left.allSatisfy { $0.hasPrefix("hang-") || $0.hasPrefix(".heartbeat-") }, "\(left)")
    }

    /// A process without HangWatch is never signalled (the default action would kill it): a clear
    /// error, non-zero, and it lives on.
    @Test func aProcessWithoutHangWatchGetsAClearErrorAndIsLeftAlone() throws {
        let sleeper = try RunningExecutable("/bin/sleep", ["30"])
        defer {
            sleeper.signal(SIGKILL)
            _ = sleeper.finish(within: 5)
        }
        let directory = ReportDirectory("dump-none")
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        let pid = sleeper.process.processIdentifier
        let result = try ExecutableRun.run(Self.cli, ["dump", String(pid), "--dir", directory.path], timeout: 30)
        #expect(result.status == 1, "\(result.status)")
        #expect(result.errors.contains("process \(pid) has no running HangWatch monitor writing to \(directory.path)"), "\(result.errors)")
        #expect(sleeper.process.isRunning)
        let gone = try ExecutableRun.run(Self.cli, ["dump", "999999", "--dir", directory.path], timeout: 30)
        #expect(gone.status == 1 && gone.errors.contains("no process 999999 is running"), "\(gone.errors)")
    }
}
