import Foundation
import HangWatch
import HangWatchTestSupport
import Logging
import Testing

/// A monitor started and stopped over and over (a service that reconfigures, tests that make one
/// per case) leaves nothing behind: memory flat (at most 1 KiB a cycle), no thread, no file.
///
/// Each source runs 2,000 measured cycles in every test run (about 5 s each); `make stress` runs
/// 10,000 (HANGWATCH_STRESS_LIFECYCLE_CYCLES). Measured with `hangwatch-faults lifecycle` before
/// the fixes (10,000 cycles): a run-loop monitor grew 2.4 KiB a cycle, a scope monitor 1.4 KiB, a
/// queue monitor 0.4 KiB; after, each under 10 bytes (docs/performance.md).
@Suite(.serialized) struct LifecycleTests {
    static let cycles = Int(ProcessInfo.processInfo.environment["HANGWATCH_STRESS_LIFECYCLE_CYCLES"] ?? "") ?? 2000
    static let warmUp = 300

    /// Resident memory of this process, in bytes (`/proc/self/statm`, field 2).
    static func residentBytes() -> Int {
        guard let data = FileHandle(forReadingAtPath: "/proc/self/statm")?.readDataToEndOfFile(),
            let field = String(decoding: data, as: UTF8.self).split(separator: " ").dropFirst().first, let pages = Int(field)
        else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The name of every thread of this process (`/proc/self/task/<tid>/comm`).
    static func threadNames() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).map { tid in
            let name = FileManager.default.contents(atPath: "/proc/self/task/\(tid)/comm").map { String(decoding: $0, as: UTF8.self) }
            return name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        }.sorted()
    }

    enum Source: String, CaseIterable, Sendable {
        case runLoop = "run loop", scopes, queue
    }

    @Test(arguments: Source.allCases)
    func startAndStopCyclesDoNotGrowTheProcess(_ source: Source) throws {
        let directory = ReportDirectory()
        let loop = LoopThread()
        defer { loop.stop() }
        let queue = DispatchQueue(label: "lifecycle")
        let monitor = try HangMonitor(
            configuration: .init(serviceName: "cycles", threshold: .milliseconds(250), reportDirectory: directory.path),
            logger: Logger(label: "cycles", factory: { _ in SwiftLogNoOpLogHandler() }))
        func cycle() throws {
            switch source {
            case .runLoop: try monitor.start(runLoop: loop.runLoop)
            case .scopes: try monitor.startWatchingScopes()
            case .queue: try monitor.start(queue: queue)
            }
            monitor.stop()
        }
        // Warm up: first-use allocations (the unwinder, the image table, caches, the code that
        // measures) are not growth.
        for _ in 0..<Self.warmUp { try cycle() }
        _ = Self.residentBytes()
        usleep(100_000)
        let threadsBefore = Self.threadNames()
        let before = Self.residentBytes()
        for _ in 0..<Self.cycles { try cycle() }
        usleep(100_000)
        let grown = Self.residentBytes() - before
        #expect(Double(grown) / Double(Self.cycles) <= 1024, "\(source): \(grown) bytes over \(Self.cycles) cycles")
        let threadsAfter = Self.threadNames()
        // The monitor's own threads (`hangwatch-…`) are joined at every stop: none may be left.
        let ours = { (names: [String]) in names.filter { $0.hasPrefix("hangwatch-") } }
        #expect(ours(threadsAfter).count <= ours(threadsBefore).count, "\(source): threads left behind: before \(threadsBefore), after \(threadsAfter)")
        // libdispatch's workers and the Swift pool's (the report writer's queue, the pool watch's
        // probe jobs) come and go by themselves, up to the CPU count and a few more; a busy machine
        // makes more of them wanted at once (10 threads after, 9 before, beside a busy CPU). A leak
        // would be one a cycle: thousands here.
        #expect(threadsAfter.count <= threadsBefore.count + 4, "\(source): threads left behind: before \(threadsBefore), after \(threadsAfter)")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(left.isEmpty, "\(source): files left behind: \(left)")
    }

    /// `stop()` and `start()` of one monitor called at once from two threads, over and over: every
    /// call returns (a stop waits for its start's lanes, and a start right after it never undoes
    /// that stop: `WatchdogTests.aStartRightAfterAStopNeverUndoesThatStop`), and the monitor ends
    /// stopped with no thread of its own left.
    @Test func aStartRacingAStopAlwaysReturns() throws {
        let directory = ReportDirectory()
        let queue = DispatchQueue(label: "race")
        let monitor = try HangMonitor(
            configuration: .init(serviceName: "race", threshold: .milliseconds(250), reportDirectory: directory.path),
            logger: Logger(label: "race", factory: { _ in SwiftLogNoOpLogHandler() }))
        let rounds = 500
        for round in 0..<rounds {
            try? monitor.start(queue: queue)
            let done = DispatchGroup()
            DispatchQueue.global().async(group: done) { monitor.stop() }
            DispatchQueue.global().async(group: done) { try? monitor.start(queue: queue) }
            guard done.wait(timeout: .now() + 10) == .success else {
                Issue.record("round \(round) of \(rounds): a stop racing a start did not return within 10 s")
                return
            }
        }
        monitor.stop()
        #expect(!monitor.isRunning)
        #expect(Eventually.holds { !Self.threadNames().contains("hangwatch-wdog") }, "\(Self.threadNames())")
    }

    /// One timer: a running monitor that pings a queue and watches the pool names one thread, its
    /// watchdog (an event-loop source adds its watcher, `hangwatch-loop`). The pings and the pool
    /// watch are lanes of the watchdog; until 2026-11-27 they had threads of their own
    /// (`hangwatch-ping`, `hangwatch-pool`).
    @Test func aRunningMonitorNamesOnlyItsWatchdogThread() async throws {
        let directory = ReportDirectory()
        let queue = DispatchQueue(label: "one-timer")
        let monitor = try HangMonitor(
            configuration: .init(serviceName: "one-timer", threshold: .milliseconds(100), reportDirectory: directory.path),
            logger: Logger(label: "one-timer", factory: { _ in SwiftLogNoOpLogHandler() }))
        try monitor.start(queue: queue)
        defer { monitor.stop() }
        // The queue answers its pings and the pool runs jobs (the pool watch probes and looks).
        for _ in 0..<5 {
            await Task.detached { usleep(1_000) }.value
            queue.sync {}
            try await Task.sleep(for: .milliseconds(30))
        }
        let ours = Set(Self.threadNames().filter { $0.hasPrefix("hangwatch-") })
        #expect(ours == ["hangwatch-wdog"], "\(Self.threadNames())")
    }
}
