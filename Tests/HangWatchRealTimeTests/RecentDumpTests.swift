import Foundation
@testable import HangWatch
import HangWatchReport
import HangWatchTestSupport
import Synchronization
import Testing

/// `hangwatch dump --recent` end to end in this process: a real run loop's flight recorder, written
/// by its real observers, asked for through the real dump path (the capture signal queued to the
/// process with the dump tag and bit 46 of the nonce, the watchdog's dump lane, the answer in the
/// report directory). No hang happens. Generous bounds: the machine may be busy.
@Suite(.serialized) struct RecentDumpTests {
    /// The recent windows of this process's monitor writing to `directory`, once its heartbeat is there.
    func recent(_ directory: ReportDirectory) throws -> HangReport {
        let heartbeat = directory.path + "/" + MonitorHeartbeat.fileName(pid: getpid())
        try #require(Eventually.holds(timeout: 5) { FileManager.default.fileExists(atPath: heartbeat) }, "no heartbeat: \(directory.listing())")
        return try DumpAsking.dump(pid: getpid(), directory: directory.path, tasks: false, recent: true, timeout: 10)
    }

    /// `CLOCK_MONOTONIC`, ns.
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// A loop kept about half busy by a repeating timer (each firing computes 20 ms; the next is
    /// scheduled 20 ms after it returns) for 6 s, asked then: the window's busy ratio is within
    /// 0.15 of the share of the last 5 s the firings took by the test's own clock, and between 0.3
    /// and 0.75; every piece is far under the threshold; no hang is reported.
    @Test func aLoopHalfBusyReadsAboutHalfBusyWithoutAHang() throws {
        let (directory, loop, monitor) = try startMonitoredLoop(threshold: .milliseconds(250))
        defer {
            monitor.stop()
            loop.stop()
        }
        let firings = Mutex<[(start: UInt64, end: UInt64)]>([])
        let stop = Atomic<Bool>(false)
        let started = Self.now()
        loop.perform {
            let timer = Timer(fire: Date(timeIntervalSinceNow: 0.01), interval: 0.02, repeats: true) { timer in
                guard !stop.load(ordering: .relaxed) else { return timer.invalidate() }
                let start = Self.now()
                _ = spinInTestHang(milliseconds: 20)
                let end = Self.now()
                firings.withLock { $0.append((start, end)) }
            }
            RunLoop.current.add(timer, forMode: .default)
        }
        while Self.now() - started < 6_000_000_000 { usleep(50_000) }
        let asked = Self.now()
        let report = try recent(directory)
        stop.store(true, ordering: .relaxed)
        // What the firings took of the 5 s before the question, by the test's clock.
        let from = asked - 5_000_000_000
        let spun = firings.withLock { $0 }.reduce(UInt64(0)) { sum, firing in
            sum + (firing.end > from ? firing.end - max(firing.start, from) : 0)
        }
        let expected = Double(spun) / 5e9

        #expect(report.source == "recent")
        let sources = try #require(report.recent?.sources)
        let loopSource = try #require(sources.first { $0.thread?.tid == loop.tid }, "\(sources)")
        #expect(loopSource.source == "runloop" && loopSource.service == "tests" && loopSource.thresholdMs == 250)
        let window = try #require(loopSource.window, "\(loopSource)")
        print("recent window measured: busyRatio \(window.busyRatio), expected \(expected) by the test's clock, longest \(loopSource.longestMs ?? -1) ms, \(window.reading)")
        #expect(window.buckets.count == 50 && window.windowMs == 5_000)
        #expect(abs(window.busyRatio - expected) < 0.15, "\(window.busyRatio) vs \(expected)")
        #expect(window.busyRatio > 0.3 && window.busyRatio < 0.75, "\(window.busyRatio) \(window.reading)")
        #expect(window.reading.hasPrefix("busy "), "\(window.reading)")
        let longest = try #require(loopSource.longestMs)
        #expect(longest >= 15 && longest < 200, "\(longest)")
        #expect(window.buckets.reduce(0) { $0 + $1.iterations } >= 50, "\(window.buckets)")
        // The watchdog read the thread at each busy edge (every 40 ms or so, kept 100 ms apart):
        // the window is covered up to its last reading, the thread on a CPU about the share the
        // firings took (they spin).
        let cpu = try #require(window.cpu, "\(window.reading)")
        print("recent window CPU: \(cpu)")
        #expect(cpu.coveredMs >= 3_500 && cpu.coveredMs <= 5_000, "\(cpu)")
        #expect(cpu.onCpuMs / cpu.coveredMs > 0.25 && cpu.onCpuMs / cpu.coveredMs < 0.8, "\(cpu), expected about \(expected)")
        #expect(directory.reports().isEmpty, "no hang: \(directory.listing())")
    }

    /// An idle loop reads under 10 % busy; a second watch of the process, of a serial queue (which
    /// keeps no recorder), is listed and says it has none.
    @Test func anIdleLoopReadsUnderTenPercentAndAQueueSaysItHasNoRecorder() throws {
        let (directory, loop, monitor) = try startMonitoredLoop(threshold: .milliseconds(250))
        let queue = DispatchQueue(label: "recent-dump-tests")
        let queueMonitor = try HangMonitor(configuration: directory.configuration(threshold: .milliseconds(250)))
        try queueMonitor.start(queue: queue)
        defer {
            queueMonitor.stop()
            monitor.stop()
            loop.stop()
        }
        let report = try recent(directory)
        let sources = try #require(report.recent?.sources)
        let loopSource = try #require(sources.first { $0.source == "runloop" && $0.thread?.tid == loop.tid }, "\(sources)")
        let window = try #require(loopSource.window)
        print("recent window of an idle loop measured: busyRatio \(window.busyRatio), \(window.reading)")
        #expect(window.busyRatio < 0.1, "\(window.busyRatio)")
        #expect(window.reading.hasPrefix("idle in the last 5 s"), "\(window.reading)")
        #expect((loopSource.busyNowMs ?? 0) < 50, "\(String(describing: loopSource.busyNowMs))")
        let queueSource = try #require(sources.first { $0.source == "dispatch-queue" }, "the queue's watch is listed: \(sources)")
        #expect(queueSource.window == nil && queueSource.noRecorder == "only run loops and event loops keep a flight recorder", "\(queueSource)")
        #expect(sources.firstIndex { $0.source == "runloop" }! < sources.firstIndex { $0.source == "dispatch-queue" }!, "in the order they began")
    }
}
