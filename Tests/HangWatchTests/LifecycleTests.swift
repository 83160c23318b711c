import Foundation
import HangWatch
import HangWatchTestSupport
import Testing

/// A monitor started and stopped over and over (a service that reconfigures, tests that make one
/// per case) should leave nothing behind: memory flat (≤ 1 KiB a cycle), no thread, no file.
///
/// Run by `make stress` (HANGWATCH_STRESS_LIFECYCLE_CYCLES=10000: about 40 s). Known today: a
/// monitor on a run loop grows ~2.5 KiB a cycle, one watching scopes ~1.7 KiB, one pinging a queue
/// ~0.3 KiB; attaching a thread (the unwinder's warm-up included) accounts for ~0.3 KiB a call.
@Suite(.serialized) struct LifecycleTests {
    static let cycles = Int(ProcessInfo.processInfo.environment["HANGWATCH_STRESS_LIFECYCLE_CYCLES"] ?? "")

    /// Resident memory of this process, in bytes (`/proc/self/statm`, field 2).
    static func residentBytes() -> Int {
        guard let data = FileHandle(forReadingAtPath: "/proc/self/statm")?.readDataToEndOfFile(),
            let field = String(decoding: data, as: UTF8.self).split(separator: " ").dropFirst().first, let pages = Int(field)
        else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
    }

    @Test(.enabled(if: cycles != nil, "make stress runs it (HANGWATCH_STRESS_LIFECYCLE_CYCLES)"))
    func startAndStopCyclesDoNotGrowTheProcess() throws {
        let cycles = try #require(Self.cycles)
        let directory = ReportDirectory()
        let loop = LoopThread()
        defer { loop.stop() }
        let monitor = try HangMonitor(
            configuration: .init(serviceName: "cycles", threshold: .milliseconds(250), reportDirectory: directory.path))
        func cycle() throws {
            try monitor.start(runLoop: loop.runLoop)
            monitor.stop()
        }
        // Warm up: first-use allocations (the unwinder, the image table, caches) are not growth.
        for _ in 0..<500 { try cycle() }
        let threadsBefore = Self.threadCount()
        let before = Self.residentBytes()
        for _ in 0..<cycles { try cycle() }
        let grown = Self.residentBytes() - before
        let perCycle = Double(grown) / Double(cycles)
        withKnownIssue("a run-loop monitor grows ~2.5 KiB a start/stop cycle (issue 17)") {
            #expect(perCycle <= 1024, "\(grown) bytes over \(cycles) cycles")
        }
        #expect(Self.threadCount() <= threadsBefore, "threads left behind")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(left.isEmpty, "files left behind: \(left)")
    }
}
