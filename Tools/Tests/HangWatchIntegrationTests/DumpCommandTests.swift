import Foundation
import HangWatchReport
import HangWatchTestSupport
import Testing

/// `hangwatch dump PID` against a live process: the library's `hangwatch-waits` service (release
/// build, made by `make test` in the library's package) deadlocked, the demo kept half busy
/// (`--recent`), and processes without HangWatch.
@Suite(.serialized) struct DumpCommandTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized.path
    static var waits: String { BuiltExecutable.releasePath("hangwatch-waits") }
    static var cli: String { BuiltExecutable.path("hangwatch") }
    static var demo: String { BuiltExecutable.path("hangwatch-demo") }

    /// `dump --recent` of the demo kept about half busy by 20 ms jobs (`hangwatch-demo --busy`),
    /// once its loop ran for more than the window: its run loop's 5 s in 50 blocks, about half busy
    /// by the blocks and by the ratio, its longest piece far under the threshold; the queue and the
    /// pool it also watches, each saying it has no recorder; exit 0. `--json` keeps every bucket,
    /// and the answers leave nothing behind. No hang is reported. `--recent` with `--tasks` is a
    /// usage error, and nothing is asked.
    @Test func theRecentWindowsOfAHalfBusyDemoShowItsLoopAboutHalfBusyAndTheWatchesWithoutARecorder() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.demo), "build the tools: \(Self.demo)")
        let directory = ReportDirectory("dump-recent")
        let service = try RunningExecutable(Self.demo, ["--reports", directory.path, "--busy"])
        defer {
            service.signal(SIGKILL)
            _ = service.finish(within: 10)
        }
        let announced = Eventually.value(timeout: 20, { service.output }, until: { $0.contains("watched until killed") })
        try #require(announced.contains("watched until killed"), "\(announced)")
        let since = DispatchTime.now().uptimeNanoseconds
        let pid = service.pid
        let heartbeat = directory.path + "/" + MonitorHeartbeat.fileName(pid: pid)
        #expect(Eventually.holds(timeout: 10) { FileManager.default.fileExists(atPath: heartbeat) }, "\(directory.listing())")
        // The window (5 s) all of the busy loop's.
        while DispatchTime.now().uptimeNanoseconds - since < 5_500_000_000 { usleep(100_000) }

        let text = try ExecutableRun.run(Self.cli, ["dump", "--recent", String(pid), "--dir", directory.path, "--color", "never"], timeout: 30)
        #expect(text.status == 0, "\(text.errors)")
        let lines = text.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first?.hasPrefix("recent windows of demo (pid \(pid), host ") == true, "\(text.output)")
        #expect(lines.dropFirst().first == "3 watches, 1 with a flight recorder", "\(text.output)")
        let loop = try #require(lines.firstIndex(of: "runloop \"hangwatch-demo\" tid \(pid) (main), threshold 250ms"), "\(text.output)")
        // `  5 s: ▅▅▄…  busy 52 %`: 50 blocks, then the ratio.
        let drawn = lines[loop + 1]
        let blocks = drawn.dropFirst("  5 s: ".count).prefix { "▁▂▃▄▅▆▇█".contains($0) }
        #expect(drawn.hasPrefix("  5 s: ") && blocks.count == 50, "\(drawn)")
        let percent = try #require(Int(drawn.split(separator: " ").dropLast().last ?? ""), "\(drawn)")
        print("dump --recent of the half-busy demo measured: \(drawn)")
        #expect(percent >= 30 && percent <= 75, "\(drawn)")
        // Most blocks are neither idle nor full: the load is spread over the window.
        #expect(blocks.filter { $0 != "▁" && $0 != "█" }.count >= 35, "\(drawn)")
        // `  cpu: ▁▁▁…··  on a CPU 2.4s, waiting 25ms`: the thread's wait for a CPU, block for
        // block under the window (the watchdog read it at its wakes while the loop was busy); the
        // jobs spin, so most of the half-busy window's time was on a CPU.
        let cpu = lines[loop + 2]
        print("dump --recent cpu line measured: \(cpu)")
        #expect(cpu.hasPrefix("  cpu: ") && cpu.dropFirst("  cpu: ".count).prefix { "▁▂▃▄▅▆▇█·".contains($0) }.count == 50, "\(cpu)")
        let onCPU = cpu.components(separatedBy: "on a CPU ").last?.prefix { $0 != "," } ?? ""
        #expect(onCPU.hasSuffix("s") && !onCPU.hasSuffix("ms"), "at least a second on a CPU: \(cpu)")
        let reading = lines[loop + 3]
        // (Where the thread waited for a CPU 10 % of its busy time or more, the reading says so
        // before the block's size: `, 12 % of it waiting for a CPU`, a busy machine's.)
        #expect(reading.hasPrefix("  busy \(percent) % in the last 5 s") && reading.contains(" (a block per 100ms); longest piece "), "\(reading)")
        let longest = reading.components(separatedBy: "longest piece ").last?.prefix { $0.isNumber }
        #expect(Int(longest ?? "").map { $0 >= 15 && $0 < 250 } == true, "\(reading)")
        // The lag since the recorder began: the 20 ms jobs (16 to 24 ms on the coarse clock) put
        // 99 % of the pieces at most 25 ms.
        print("dump --recent lag line measured: \(lines[loop + 4])")
        #expect(lines[loop + 4].hasPrefix("  lag since the recorder began: ") && lines[loop + 4].contains("; 99 % at most 25ms,"), "\(lines[loop + 4])")
        for watch in ["dispatch-queue ", "concurrency-pool, threshold 250ms"] {
            let header = try #require(lines.firstIndex { $0.hasPrefix(watch) }, "\(watch) missing: \(text.output)")
            #expect(lines[header + 1] == "  no window: only run loops and event loops keep a flight recorder", "\(lines[header + 1])")
        }

        let json = try ExecutableRun.run(Self.cli, ["dump", "--recent", String(pid), "--dir", directory.path, "--json"], timeout: 30)
        #expect(json.status == 0, "\(json.errors)")
        let dump = try HangReport.makeDecoder().decode(HangReport.self, from: Data(json.output.utf8))
        #expect(dump.source == "recent")
        let sources = try #require(dump.recent?.sources)
        try #require(sources.map(\.source) == ["runloop", "dispatch-queue", "concurrency-pool"], "\(sources.map(\.source))")
        let window = try #require(sources[0].window)
        #expect(window.buckets.count == 50 && window.bucketMs == 100 && window.windowMs == 5_000)
        #expect(window.busyRatio >= 0.3 && window.busyRatio <= 0.75, "\(window.busyRatio)")
        #expect(window.buckets.reduce(0) { $0 + $1.iterations } >= 60, "\(window.buckets)")
        #expect(sources[0].thread?.tid == pid && sources[0].thread?.isMain == true)
        let lag = try #require(sources[0].lag, "the run loop's lag histogram")
        #expect(lag.counts.count == LoopBusyHistogram.bucketCount && lag.boundsMs.last == 2_500)
        #expect(lag.counts[7] >= 60 && lag.counts[11...].allSatisfy { $0 == 0 }, "\(lag.counts)")
        #expect(sources[1].lag == nil && sources[2].lag == nil)

        let usage = try ExecutableRun.run(Self.cli, ["dump", "--recent", "--tasks", String(pid), "--dir", directory.path], timeout: 30)
        #expect(usage.status == 2 && usage.errors.contains("--tasks and --recent ask for different dumps: give one"), "\(usage.errors)")
        #expect(service.process.isRunning)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(left.allSatisfy { $0.hasPrefix(".heartbeat-") }, "no hang, no answer left: \(left)")
    }

    /// A deadlocked service, asked twice (the request and its answer leave nothing behind): both
    /// threads of the cycle, their stacks at the lock each waits for, the cycle first, exit 0. The
    /// same when both wait with a deadline (`NSLock.lock(before:)`: a timed wait is a deadlock
    /// while it lasts).
    @Test(arguments: ["deadlock", "timed-deadlock"])
    func aLiveTwoThreadDeadlockIsDumpedWithBothThreadsTheirStacksAndTheCycle(_ waitCase: String) throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.waits), "build it: \(BuiltExecutable.releaseBuildCommand("hangwatch-waits"))")
        let directory = ReportDirectory("dump-\(waitCase)")
        let service = try RunningExecutable(Self.waits, [waitCase, "--reports", directory.path])
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

    /// 50 dumps asked in a row, 4 at a time, of a deadlocked service: every call is answered with
    /// the dump or refused with a reason (busy, or the rate limit), none goes unanswered, and no
    /// answer is left behind.
    @Test func fiftyDumpsFourAtATimeAreEachAnsweredOrRefusedWithAReason() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.waits), "build it: \(BuiltExecutable.releaseBuildCommand("hangwatch-waits"))")
        let directory = ReportDirectory("dump-fifty")
        let service = try RunningExecutable(Self.waits, ["deadlock", "--reports", directory.path])
        defer {
            service.signal(SIGKILL)
            _ = service.finish(within: 10)
        }
        #expect(Eventually.holds(timeout: 20) { directory.reports().contains { $0.context.verdict == .deadlocked } })
        _ = Eventually.value(timeout: 10, { service.output }, until: { $0.contains("holderTid") })
        let pid = String(service.process.processIdentifier)
        var results: [CommandResult] = []
        for _ in 0..<13 {
            let batch = try (0..<min(4, 50 - results.count)).map { _ in
                try RunningExecutable(Self.cli, ["dump", pid, "--dir", directory.path, "--color", "never", "--timeout", "10s"])
            }
            results += batch.map { $0.finish(within: 30) }
        }
        #expect(results.count == 50)
        let served = results.filter { $0.status == 0 && $0.output.contains("DEADLOCK") }
        let refused = results.filter { $0.status == 1 && $0.errors.contains("refused the dump: ") }
        #expect(served.count + refused.count == 50, "\(results.filter { $0.status != 0 && !$0.errors.contains("refused") }.map(\.errors))")
        #expect(served.count >= 3, "\(served.count) served")
        #expect(refused.allSatisfy { $0.errors.contains("busy: ") || $0.errors.contains("rate limit: ") }, "\(refused.map(\.errors))")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".dump-") }
        #expect(left.isEmpty, "\(left)")
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

    // A forged heartbeat must not make root's `hangwatch dump` signal anything: whoever can write a
    // service's spool directory could otherwise name any process, SIGKILL, and its pid as the
    // watchdog. Each victim is a `/bin/sleep` (no handler: any signal but a real-time one kills it,
    // and so would a real-time one); it must outlive the dump.

    /// Runs `body` with a victim and the root of a fresh report directory (0755, root's); the
    /// victim is killed afterwards, whatever `body` did.
    static func withVictim(_ name: String = #function, _ body: (RunningExecutable, String) throws -> Void) throws {
        let victim = try RunningExecutable("/bin/sleep", ["60"])
        defer {
            victim.signal(SIGKILL)
            _ = victim.finish(within: 5)
        }
        let root = ReportDirectory(name).path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try body(victim, root)
    }

    /// Writes a heartbeat for `pid` (its real start time, a fresh tick) naming `signal` and
    /// `watchdog`, owned by `owner`, mode 0600, in `directory` (created 0700, owned by `owner`).
    static func writeHeartbeat(pid: Int32, signal: Int32, watchdog: Int32, in directory: String, owner: uid_t) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let ticks = try #require(Self.startTicks(pid))
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let heartbeat = MonitorHeartbeat(
            pid: pid, startTimeTicks: ticks, startedUnixMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000) - 1000,
            tickMonotonicNanoseconds: UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec),
            tickUnixMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000), intervalMilliseconds: 100, state: .watching, activityWord: 0,
            hangsDetected: 0, thresholdMicroseconds: 250_000, captureSignal: signal, watchdogTID: watchdog)
        let path = directory + "/" + MonitorHeartbeat.fileName(pid: pid)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(heartbeat.encoded()), attributes: [.posixPermissions: 0o600]))
        #expect(chown(path, owner, owner) == 0 && chown(directory, owner, owner) == 0)
        return path
    }

    /// `/proc/<pid>/stat` field 22: the process's start, clock ticks after boot.
    static func startTicks(_ pid: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? UInt64(fields[19]) : nil
    }

    /// Runs `hangwatch dump` on the victim; it must fail without a signal sent.
    static func dumpRefused(_ victim: RunningExecutable, root: String, _ extra: [String] = []) throws -> CommandResult {
        let result = try ExecutableRun.run(cli, ["dump", String(victim.pid), "--dir", root, "--timeout", "2s"] + extra, timeout: 30)
        #expect(result.status != 0, "\(result.output)")
        // Had a signal been sent, it would have been delivered by now.
        usleep(200_000)
        #expect(victim.process.isRunning, "the victim died: \(result.errors)")
        return result
    }

    @Test func rootRefusesAHeartbeatForgedByNobodyNamingSIGKILLAndTheVictimLives() throws {
        try #require(getuid() == 0, "run as root: the forger is nobody, the victim root's")
        try Self.withVictim { victim, root in
            let path = try Self.writeHeartbeat(pid: victim.pid, signal: SIGKILL, watchdog: victim.pid, in: root + "/forged", owner: 65534)
            let result = try Self.dumpRefused(victim, root: root)
            #expect(result.status == 3, "\(result.status)")
            #expect(result.errors.contains("refusing \(path): owned by uid 65534, but process \(victim.pid) runs as uid 0"), "\(result.errors)")
            #expect(result.errors.contains("process \(victim.pid) was not signalled"), "\(result.errors)")
        }
    }

    @Test func aHeartbeatThatIsASymlinkIsNotFollowedEvenToAGoodLookingOne() throws {
        try #require(getuid() == 0)
        try Self.withVictim { victim, root in
            // Root's, well-formed, in a directory the tool never looks in; a link to it in a service's.
            let target = try Self.writeHeartbeat(pid: victim.pid, signal: SIGKILL, watchdog: victim.pid, in: root + "-elsewhere", owner: 0)
            defer { try? FileManager.default.removeItem(atPath: root + "-elsewhere") }
            let service = root + "/billing"
            try FileManager.default.createDirectory(atPath: service, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let link = service + "/" + MonitorHeartbeat.fileName(pid: victim.pid)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
            for extra in [[], ["--service", "billing"]] {
                let result = try Self.dumpRefused(victim, root: root, extra)
                #expect(result.status == 3, "\(result.status)")
                #expect(result.errors.contains("refusing \(link): a symbolic link (never followed), not a regular file"), "\(result.errors)")
            }
        }
    }

    @Test func aHeartbeatOwnedRightThatNamesSIGTERMIsRefusedForItsSignal() throws {
        try #require(getuid() == 0)
        try Self.withVictim { victim, root in
            // Everything else believable: root's file in root's directory, for root's process.
            let path = try Self.writeHeartbeat(pid: victim.pid, signal: SIGTERM, watchdog: victim.pid, in: root + "/billing", owner: 0)
            let result = try Self.dumpRefused(victim, root: root)
            #expect(result.status == 3, "\(result.status)")
            #expect(result.errors.contains("refusing \(path): it names signal 15, not a real-time signal"), "\(result.errors)")
            // A real-time signal to the main thread: refused too (the watchdog is never the main thread).
            _ = try Self.writeHeartbeat(pid: victim.pid, signal: Self.realTimeSignalMinimum(), watchdog: victim.pid, in: root + "/billing", owner: 0)
            let main = try Self.dumpRefused(victim, root: root)
            #expect(main.status == 3 && main.errors.contains("refusing \(path): it names the main thread (\(victim.pid)) as the watchdog"), "\(main.errors)")
        }
    }

    @Test func serviceTakesANameNeverAPath() throws {
        try Self.withVictim { victim, root in
            for service in ["../x", "/etc", ".", "..", ""] {
                let result = try Self.dumpRefused(victim, root: root, ["--service", service])
                #expect(result.status == 2, "\(service): \(result.status) \(result.errors)")
                #expect(result.errors.contains("--service takes a service's name, never a path"), "\(result.errors)")
            }
        }
    }

    /// SIGRTMIN, as the C library says at run time.
    static func realTimeSignalMinimum() -> Int32 { __libc_current_sigrtmin() }
}
