import Foundation
import HangWatch
import HangWatchReport
import Synchronization

/// What `hangwatch dump --tasks` costs (issue 61): one dump of `tasks` live tasks (each parked on
/// a continuation two async calls deep, as a service's requests waiting on something would be),
/// asked as the CLI asks (the capture signal with the dump tag and a nonce with the tasks bit),
/// in a child process of its own (`--tasks-child N`: the bench keeps no 100,000 tasks around).
/// The child serves "requests" meanwhile, a task every millisecond that computes ~20 µs and
/// finishes, and measures each one's latency (enqueued to done): its p99 over the seconds a dump
/// takes, beside the p99 of the same stretch with no dump. Also: the dump's own time (the
/// monitor's `tookMs`, and until the answer was there), the answer's size, and the memory the dump
/// took at its peak (the process's peak resident set, reset just before: `/proc/self/clear_refs`).
struct TaskDumpFigure {
    var tasks: Int
    var dumps: Int

    struct Outcome: Codable {
        var tasks: Int
        var listed: Int
        /// The monitor's own time for each dump, ms.
        var tookMs: [Double]
        /// From the request to the answer on disk, ms.
        var answeredMs: [Double]
        var answerBytes: Int
        /// Peak resident set above the one before the dump, bytes (the largest of the dumps).
        var peakBytes: Int
        var p99WithoutMs: Double
        var p99DuringMs: Double
        var requestsWithout: Int
        var requestsDuring: Int
    }

    /// Runs the child and reads its one JSON line.
    func measure() throws -> Outcome {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--tasks-child", String(tasks), String(dumps)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last(where: { $0.hasPrefix("{") }) else {
            throw BenchError.setup("the task dump child said nothing (status \(process.terminationStatus))")
        }
        return try JSONDecoder().decode(Outcome.self, from: Data(line.utf8))
    }

    // The child.

    final class Parked: Sendable {
        let continuations = Mutex<[CheckedContinuation<Void, Never>]>([])
        let count = Atomic<Int>(0)
    }

    @inline(never)
    static func waitForReply(_ parked: Parked) async {
        await withCheckedContinuation { continuation in
            parked.continuations.withLock { $0.append(continuation) }
            parked.count.add(1, ordering: .releasing)
        }
    }

    @inline(never)
    static func handle(_ parked: Parked) async { await waitForReply(parked) }

    @inline(never)
    static func request(_ started: UInt64) async -> UInt64 {
        var value: UInt64 = started
        let until = monotonicNanoseconds() + 20_000
        while monotonicNanoseconds() < until { value = value &* 6364136223846793005 &+ 1 }
        return value == 0 ? 0 : monotonicNanoseconds() - started
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Requests, one a millisecond, each's latency recorded (µs) while `recording` is set.
    final class Requests: @unchecked Sendable {
        let latencies = Mutex<[Double]>([])
        let recording = Atomic<Bool>(false)
        let stop = Atomic<Bool>(false)

        func run() {
            Thread.detachNewThread { [self] in
                while !stop.load(ordering: .relaxed) {
                    let started = TaskDumpFigure.monotonicNanoseconds()
                    Task.detached {
                        let latency = await TaskDumpFigure.request(started)
                        if self.recording.load(ordering: .relaxed) { self.latencies.withLock { $0.append(Double(latency) / 1000) } }
                    }
                    usleep(1000)
                }
            }
        }

        /// The latencies recorded over `body`.
        func during(_ body: () throws -> Void) rethrows -> [Double] {
            latencies.withLock { $0 = [] }
            recording.store(true, ordering: .relaxed)
            try body()
            recording.store(false, ordering: .relaxed)
            usleep(50_000)
            return latencies.withLock { $0 }
        }
    }

    static func residentBytes(_ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    static func child(tasks: Int, dumps: Int) throws -> Never {
        let parked = Parked()
        for _ in 0..<tasks { Task.detached { await handle(parked) } }
        while parked.count.load(ordering: .acquiring) < tasks { usleep(1000) }
        let directory = NSTemporaryDirectory() + "hangwatch-bench-tasks-\(getpid())"
        let monitor = try HangMonitor(configuration: .init(serviceName: "bench-tasks", threshold: .seconds(5), reportDirectory: directory))
        try monitor.startWatchingMainQueue()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let heartbeatPath = directory + "/" + MonitorHeartbeat.fileName(pid: getpid())
        var signal: Int32 = 0
        for _ in 0..<500 where signal == 0 {
            signal = (try? MonitorHeartbeat.read(path: heartbeatPath))?.captureSignal ?? 0
            usleep(10_000)
        }
        guard signal > 0 else { throw BenchError.setup("the monitor answers no dumps") }
        let requests = Requests()
        requests.run()
        usleep(300_000)
        var outcome = Outcome(
            tasks: tasks, listed: 0, tookMs: [], answeredMs: [], answerBytes: 0, peakBytes: 0, p99WithoutMs: 0, p99DuringMs: 0, requestsWithout: 0,
            requestsDuring: 0)
        var during: [Double] = []
        for _ in 0..<dumps {
            try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
            let before = residentBytes("VmRSS")
            let started = monotonicNanoseconds()
            var answer: Data?
            during += requests.during {
                let nonce = UInt64.random(in: 1..<(1 << 47)) | 1 << 47
                var value = sigval()
                value.sival_ptr = UnsafeMutableRawPointer(bitPattern: UInt((0x4844 as UInt64) << 48 | nonce))
                sigqueue(getpid(), signal, value)
                let path = directory + "/.dump-\(nonce).json"
                while answer == nil, monotonicNanoseconds() - started < 120_000_000_000 {
                    answer = FileManager.default.contents(atPath: path)
                    if answer == nil { usleep(5_000) }
                }
                try? FileManager.default.removeItem(atPath: path)
            }
            outcome.answeredMs.append(Double(monotonicNanoseconds() - started) / 1e6)
            outcome.peakBytes = max(outcome.peakBytes, residentBytes("VmHWM") - before)
            guard let answer, let report = try? HangReport.decode(answer), let dump = report.tasks else { throw BenchError.setup("no task dump answered") }
            outcome.tookMs.append(dump.scan.tookMs)
            outcome.listed = dump.tasks.count
            outcome.answerBytes = answer.count
            usleep(200_000)
        }
        // The same stretch with no dump.
        let stretch = UInt32(min(20_000_000, max(1_000_000, Int((outcome.answeredMs.max() ?? 1000) * 1000))))
        let without = requests.during { usleep(stretch) }
        requests.stop.store(true, ordering: .relaxed)
        outcome.p99WithoutMs = Statistics.percentile(without, 0.99) / 1000
        outcome.p99DuringMs = Statistics.percentile(during, 0.99) / 1000
        outcome.requestsWithout = without.count
        outcome.requestsDuring = during.count
        let line = String(decoding: try JSONEncoder().encode(outcome), as: UTF8.self)
        print(line)
        exit(0)
    }
}

extension TaskDumpFigure {
    /// Figure 23: 1,000, 10,000 and 100,000 live tasks (1,000 and 10,000 with --quick), three
    /// dumps each (the monitor's burst).
    @MainActor static func addFigures(quick: Bool) throws {
        let sizes = quick ? [1_000, 10_000] : [1_000, 10_000, 100_000]
        if quick { card.leaveOut("23-tasks-100k-answer", reason: "--quick parks 10,000 tasks at most") }
        for tasks in sizes {
            let outcome = try TaskDumpFigure(tasks: tasks, dumps: 3).measure()
            guard outcome.listed >= tasks else { throw BenchError.setup("a dump of \(tasks) tasks listed \(outcome.listed)") }
            let answered = Statistics.median(outcome.answeredMs)
            let label = "\(tasks / 1000)k tasks"
            let shown = "\(format(answered, 0)) ms (the census \(format(Statistics.median(outcome.tookMs), 0)) ms)"
            let name = "task dump of \(label): request to answer, median of 3 (the monitor's census)"
            switch tasks {
            case 10_000: add("23", name, shown, goal: "23-tasks-10k-answer", answered)
            case 100_000: add("23", name, shown, goal: "23-tasks-100k-answer", answered)
            default: add("23", name, shown)
            }
            let perTask = Double(outcome.peakBytes) / Double(max(1, outcome.listed))
            let memory = "\(outcome.listed) listed, answer \(outcome.answerBytes >> 10) KiB, peak +\(outcome.peakBytes >> 20) MiB (\(format(perTask, 0)) B/task)"
            if tasks == sizes.last {
                add("23", "  \(label): answer size, peak memory of a dump", memory, goal: "23-tasks-memory", perTask)
            } else {
                add("23", "  \(label): answer size, peak memory of a dump", memory)
            }
            add("23", "  \(label): request p99 during dumps / without (\(outcome.requestsDuring) / \(outcome.requestsWithout) requests)",
                "\(format(outcome.p99DuringMs, 2)) / \(format(outcome.p99WithoutMs, 2)) ms")
        }
    }
}
