import Foundation
@testable import HangWatch
@_spi(Internal) import HangWatchReport
import HangWatchTestSupport
import Testing

/// Faults injected into a whole process (`hangwatch-faults`, a misbehaving service): storms of
/// loader, C++ unwinder and allocator calls sampled every millisecond, an interposed allocator,
/// SIGSTOP, CPU starvation, `kill -9` mid-write, a full or read-only disk.
/// A deadlock shows as a child that has to be killed, never as a stuck test. (docs/reliability.md,
/// cases 2, 3, 11, 12 and 13.)
@Suite(.serialized) struct ProcessFaultTests {
    let library: FaultLibrary

    init() throws {
        library = try FaultLibrary.shared.get()
    }

    static var isRoot: Bool { getuid() == 0 }

    /// Enough captures to have hit the thread anywhere in its storm. A 2 s hang sampled every
    /// millisecond with at most 100 samples kept takes about 310 (the interval doubles each time
    /// the cap halves the samples: 1.6 s for the first 300); a watchdog that shares its CPU with
    /// other work wakes late and takes fewer (287 beside one busy CPU). Half is plenty.
    static let manySamples = 150

    /// Runs one of the fault library's loops as a 2 s hang in a child sampled every millisecond.
    func runLoop(
        _ function: String, in path: String, directory: ReportDirectory, environment: [String: String] = [:]
    ) throws -> (FaultHost.Outcome, HangReport?) {
        let host = try FaultHost(
            ["loop", "--reports", directory.path, "--library", path, "--function", function, "--seconds", "2"],
            environment: environment)
        let outcome = host.finish(within: 60)
        return (outcome, directory.reports().first)
    }

    enum Storm: String, CaseIterable, Sendable {
        case loader = "hangwatch_fault_dl_iterate_storm"
        case cxxExceptions = "hangwatch_fault_throw_storm"
    }

    /// Case 2: the thread takes the loader's lock (dl_iterate_phdr; the C++ unwinder's lookups)
    /// thousands of times a second while it is sampled every millisecond. libunwind's own lookup
    /// would take that lock inside the signal handler: a self-deadlock. It must never be reached.
    @Test(arguments: Storm.allCases)
    func aThreadInsideTheLoaderOrTheCXXUnwinderIsSampledWithoutDeadlock(_ storm: Storm) throws {
        let directory = ReportDirectory("storm-\(storm)")
        let path = storm == .loader ? library.path : library.cxxPath
        let (outcome, report) = try runLoop(storm.rawValue, in: path, directory: directory)
        #expect(outcome.status == 0, "\(storm): the child deadlocked or failed: \(outcome.standardError.suffix(2000))")
        let hang = try #require(report, "\(storm): no report")
        #expect(hang.capture.samplesTaken >= Self.manySamples, "\(storm): \(hang.capture.samplesTaken) samples")
        // At worst a few captures found the thread with signals blocked for a moment, asleep on the
        // loader's lock (the watchdog's own symbol lookups take it), or late to answer on a busy
        // machine (and the capture after a late one busy): what a handler stuck in the loader
        // would cause by the hundred. Never a failed unwind or send.
        let harmless: Set = ["timeout", "capture busy", "signal blocked", "thread slept at the capture"]
        let errors = hang.capture.errors.reduce(0) { $0 + $1.count }
        #expect(
            hang.capture.errors.allSatisfy { harmless.contains($0.kind) } && errors <= max(5, hang.capture.samplesTaken / 20),
            "\(storm): \(errors) of \(hang.capture.samplesTaken) captures failed: \(hang.capture.errors)")
        #expect(hang.heaviestStackContains(storm.rawValue), "\(storm): \(hang.heaviestSymbols)")
        // Samples caught it inside the loader (or the unwinder it drives), holding the lock.
        let inside = hang.sampledSymbols.filter { $0.first { $0.contains("dl_iterate_phdr") || $0.contains("Unwind") } != nil }
        #expect(inside.count >= 5, "\(storm): \(inside.count) samples inside the loader")
    }

    /// Case 3: the thread allocates and frees in a loop (arena locks held much of the time) while
    /// sampled every millisecond. An interposed allocator counts allocations made on the alternate
    /// signal stack, i.e. by the handler: there must be none.
    @Test func theHandlerNeverAllocatesEvenWhenTheThreadHoldsTheAllocatorsLock() throws {
        let directory = ReportDirectory()
        let (outcome, report) = try runLoop(
            "hangwatch_fault_malloc_storm", in: library.path, directory: directory,
            environment: ["LD_PRELOAD": library.allocationCounter])
        #expect(outcome.status == 0, "the child deadlocked or failed: \(outcome.standardError.suffix(2000))")
        let counts = try #require(
            outcome.standardError.split(separator: "\n").last { $0.hasPrefix("hangwatch-allocations") },
            "the interposer did not report: \(outcome.standardError.suffix(2000))")
        let fields = Dictionary(
            uniqueKeysWithValues: counts.split(separator: " ").dropFirst().compactMap { field -> (String, Int)? in
                let parts = field.split(separator: "=")
                return parts.count == 2 ? (String(parts[0]), Int(parts[1]) ?? -1) : nil
            })
        #expect(fields["calls"] ?? 0 > 100_000, "the storm did not run: \(counts)")
        #expect(fields["in-signal-handler"] == 0, "\(counts)")
        let hang = try #require(report)
        #expect(hang.capture.samplesTaken >= Self.manySamples, "\(hang.capture.samplesTaken) samples")
        #expect(hang.capture.errors.isEmpty, "\(hang.capture.errors)")
        // Interrupted inside the allocator (the interposer's or libc's code) in some samples.
        let inside = hang.sampledSymbols.filter { $0.prefix(4).contains { $0.contains("malloc") || $0.contains("free") } }
        #expect(inside.count >= 5, "\(inside.count) samples inside the allocator")
    }

    /// Case 11: the process is stopped (SIGSTOP) during a hang, then continued. The time it spent
    /// stopped is not the code's: the report says the process was stopped, by SIGSTOP, and for how
    /// long.
    @Test func aProcessStoppedDuringAHangIsFlaggedStopped() throws {
        let directory = ReportDirectory()
        let host = try FaultHost(["spin", "--reports", directory.path, "--seconds", "2"])
        let provisional = directory.waitFor(timeout: 20) { $0.contains { $0.outcome == .ongoing } }
        try #require(provisional.contains { $0.outcome == .ongoing }, "the hang was not detected")
        host.signal(SIGSTOP)
        usleep(2_000_000)  // the fault: two seconds stopped
        host.signal(SIGCONT)
        let outcome = host.finish(within: 30)
        #expect(outcome.status == 0)
        let report = try #require(directory.waitForFinished(1).first)
        #expect(report.context.processStopped)
        #expect(report.context.verdict == .stopped, "\(report.context.verdict)")
        #expect(report.durationMs >= 2000, "the stop is part of the hang's duration: \(report.durationMs)")
        // Told apart from a freeze: the SIGCONT that ended it was stamped; the stop is apart from
        // the busy time.
        #expect(report.context.stoppedBy == "SIGSTOP", "\(report.context.stoppedBy ?? "nil"): \(report.context.stopEvidence ?? "")")
        let stopped = try #require(report.context.stoppedMs)
        #expect(stopped >= 1500 && stopped <= 2500, "stopped \(stopped) ms of the 2000")
        #expect(report.context.busyMs.map { abs($0 - (report.durationMs - stopped)) < 0.01 } == true)
    }

    /// Case 11: three busy processes share one CPU with the hung one. It gets a quarter of the CPU:
    /// the report blames the machine (starved), not the code.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset"), "taskset (util-linux) is not installed"))
    func aHangOnAnOverloadedCPUIsFlaggedStarved() throws {
        let directory = ReportDirectory()
        let hogs = try (0..<3).map { _ in
            let hog = Process()
            hog.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
            hog.arguments = ["-c", "0", "/bin/sh", "-c", "while :; do :; done"]
            try hog.run()
            return hog
        }
        defer { hogs.forEach { kill($0.processIdentifier, SIGKILL); $0.waitUntilExit() } }
        let host = try FaultHost(["spin", "--reports", directory.path, "--seconds", "2"], launcher: ["taskset", "-c", "0"])
        let outcome = host.finish(within: 60)
        #expect(outcome.status == 0)
        let report = try #require(directory.waitForFinished(1).first)
        #expect(report.context.verdict == .starved, "\(report.context.verdict), on-CPU \(report.context.onCpuRatio ?? -1)")
        #expect((report.context.runQueueRatio ?? 0) > 0.4, "\(report.context.runQueueRatio ?? -1)")
    }

    /// Case 12: `kill -9` lands at random points of report writes, again and again. No partial
    /// or corrupt report is ever visible; the temporary files left behind are removed later.
    @Test func killingTheWriterAtAnyPointNeverLeavesAPartialReport() throws {
        let directory = ReportDirectory()
        let template = try #require(Self.templateReport(), "no template report")
        try ReportStore(directory: directory.path).prepare()
        var kills = 0
        var seen = Set<String>()
        for round in 0..<Self.killRounds {
            let before = try ReportStore(directory: directory.path).list().count
            let host = try FaultHost(["write-reports", "--reports", directory.path, "--template", template])
            // Once it writes, let it write a little longer: a different point of a write each time.
            Eventually.holds(interval: 0.002) { ((try? ReportStore(directory: directory.path).list().count) ?? 0) > before }
            usleep(UInt32((round * 7919) % 20_000))  // the fault's timing: a different point of a write each round
            host.signal(SIGKILL)
            _ = host.finish(within: 10)
            kills += 1
            for file in try ReportStore(directory: directory.path).list() where !seen.contains(file.name) {
                #expect(throws: Never.self, "a partial or corrupt report after kill \(kills): \(file.name)") {
                    _ = try ReportReader().read(path: file.path)
                }
                seen.insert(file.name)
            }
        }
        #expect(seen.count >= Self.killRounds, "too few writes to test anything: \(seen.count)")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        let leftovers = names.filter { $0.hasPrefix(ReportStore.temporaryPrefix) }
        // Young leftovers stay (their writer might still be running); old ones go.
        let store = ReportStore(directory: directory.path)
        #expect(try store.removeStaleTemporaryFiles(olderThan: 3600) == 0)
        #expect(try store.removeStaleTemporaryFiles(olderThan: 3600, now: Date().addingTimeInterval(7200)) == leftovers.count)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).allSatisfy { !$0.hasPrefix(ReportStore.temporaryPrefix) })
    }

    /// Case 14: one service hangs again and again (250 ms hangs, 100 ms apart) with the default
    /// limits, next to another service's reports. The rate limit and repeat folding bound its
    /// files, its memory stays bounded, and the other service's reports are untouched.
    /// (`make stress` runs it for a minute.)
    @Test func aServiceThatHangsOverAndOverKeepsDiskAndMemoryBounded() throws {
        let seconds = Double(ProcessInfo.processInfo.environment["HANGWATCH_STRESS_SOAK_SECONDS"] ?? "") ?? 5
        let spool = ReportDirectory()
        let noisy = spool.path + "/noisy"
        let quiet = ReportStore(directory: spool.path + "/quiet")
        try quiet.prepare()
        let template = try ReportReader().read(path: try #require(Self.templateReport()))
        var before: [String: Data] = [:]
        for index in 1...3 {
            var report = template
            report.id = "quiet-\(index)"
            let path = try quiet.write(report)
            before[path] = try Data(contentsOf: URL(fileURLWithPath: path))
        }
        let hangs = max(10, Int(seconds / 0.35))
        let host = try FaultHost([
            "spin", "--reports", noisy, "--seconds", "0.25", "--count", String(hangs), "--gap-ms", "100", "--limits", "default",
        ])
        let outcome = host.finish(within: seconds * 3 + 60)
        #expect(outcome.status == 0, "\(outcome.standardError.suffix(2000))")
        let statistics = try #require(Self.statistics(outcome.standardOutput))
        let detected = statistics["hangsDetected"] ?? 0
        #expect(detected >= hangs * 8 / 10, "\(statistics)")
        let files = try ReportStore(directory: noisy).list()
        let minutes = (seconds / 60).rounded(.up)
        #expect(Double(files.count) <= 10 + 6 * minutes, "\(files.count) files for \(detected) hangs")
        #expect((statistics["hangsFolded"] ?? 0) + (statistics["hangsSuppressed"] ?? 0) >= detected - files.count, "\(statistics)")
        #expect(statistics["maxRSSKiB"] ?? .max < 200 << 10, "\(statistics)")
        for (path, data) in before {
            #expect((try? Data(contentsOf: URL(fileURLWithPath: path))) == data, "\(path) changed")
        }
        #expect(try quiet.list().count == 3)
    }

    static var killRounds: Int { Int(ProcessInfo.processInfo.environment["HANGWATCH_STRESS_KILLS"] ?? "") ?? 25 }

    /// A real report, written by a monitor in a child, padded to a few hundred KiB so that each
    /// write takes a while.
    static func templateReport() -> String? {
        let directory = ReportDirectory("template")
        let host = try? FaultHost(["spin", "--reports", directory.path, "--seconds", "0.4"])
        guard host?.finish(within: 30).status == 0, var report = directory.reports().first else { return nil }
        while report.frames.count < 4000 { report.frames += report.frames }
        report.id = "template"
        let store = ReportStore(directory: directory.path + "-template")
        try? store.prepare()
        return try? store.write(report)
    }

    /// Case 13: a full disk. The service runs on; every failed write is counted; the failure is
    /// logged once (not once per report); nothing partial is left; once space is back, reports
    /// are written again. (A small tmpfs: needs root, as CI has.)
    @Test(.enabled(if: isRoot, "needs root (mounts a tmpfs)")) func aFullDiskIsCountedAndLoggedOnceAndLeavesNothingPartial() throws {
        let mount = try SmallFilesystem(bytes: 256 << 10)
        defer { mount.remove() }
        let directory = try mount.reportDirectory()
        let filler = mount.path + "/filler"
        mount.fill(filler)
        let full = try FaultHost(["spin", "--reports", directory, "--seconds", "0.4", "--count", "3"])
        let outcome = full.finish(within: 60)
        #expect(outcome.status == 0, "the service did not run on: \(outcome.standardError.suffix(2000))")
        let statistics = try #require(Self.statistics(outcome.standardOutput))
        #expect(statistics["hangsDetected"] == 3)
        #expect(statistics["reportsWritten"] == 0)
        #expect(statistics["writeFailures"] ?? 0 >= 3)
        let logged = outcome.standardError.split(separator: "\n").filter { $0.contains("cannot write hang report") }
        #expect(logged.count == 1, "\(logged)")
        #expect(logged.first?.contains("no space") == true, "\(logged)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "something partial was left")
        // Space again: reports are written again.
        unlink(filler)
        let freed = try FaultHost(["spin", "--reports", directory, "--seconds", "0.4", "--count", "1"])
        #expect(freed.finish(within: 60).status == 0)
        #expect(try ReportStore(directory: directory).list().count == 1)
    }

    /// Case 13: a read-only filesystem (root ignores permission bits, not a read-only mount).
    @Test(.enabled(if: isRoot, "needs root (mounts a tmpfs)")) func aReadOnlyFilesystemIsCountedAndLoggedOnce() throws {
        let mount = try SmallFilesystem(bytes: 1 << 20)
        defer { mount.remove() }
        let directory = try mount.reportDirectory()
        try mount.remountReadOnly()
        let host = try FaultHost(["spin", "--reports", directory, "--seconds", "0.4", "--count", "2"])
        let outcome = host.finish(within: 60)
        #expect(outcome.status == 0, "\(outcome.standardError.suffix(2000))")
        let statistics = try #require(Self.statistics(outcome.standardOutput))
        #expect(statistics["hangsDetected"] == 2)
        #expect(statistics["writeFailures"] ?? 0 >= 2)
        #expect(outcome.standardError.split(separator: "\n").filter { $0.contains("cannot write hang report") }.count == 1)
    }

    static func statistics(_ output: String) -> [String: Int]? {
        guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Int]
        else { return nil }
        return object
    }
}

/// A tmpfs of a few hundred KiB mounted for one test (root only).
struct SmallFilesystem {
    let path: String

    init(bytes: Int) throws {
        path = FileManager.default.temporaryDirectory.path + "/hangwatch-fs-\(getpid())-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try Self.run(["mount", "-t", "tmpfs", "-o", "size=\(bytes)", "tmpfs", path])
    }

    /// A private (0700) report directory on it.
    func reportDirectory() throws -> String {
        let directory = path + "/reports"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        chmod(directory, 0o700)
        return directory
    }

    /// Writes `file` until the filesystem is full.
    func fill(_ file: String) {
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        defer { close(fd) }
        let block = [UInt8](repeating: 0x55, count: 4096)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
    }

    func remountReadOnly() throws { try Self.run(["mount", "-o", "remount,ro", path]) }

    func remove() {
        try? Self.run(["umount", "-l", path])
        try? FileManager.default.removeItem(atPath: path)
    }

    static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw HangMonitorError.captureUnavailable(reason: "\(arguments.joined(separator: " ")) failed")
        }
    }
}
