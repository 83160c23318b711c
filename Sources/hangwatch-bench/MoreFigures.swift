import CoreFoundation
import Foundation
import HangWatch
import HangWatchReport
import HangWatchSymbolication

/// Figure 3: wake-ups of the watchdog while the loop sleeps.
struct IdleWakeupFigure {
    var seconds: Double

    /// Context switches of the watchdog thread over `seconds` of an idle, sleeping loop.
    func measure() throws -> Int {
        let loop = BenchLoop()
        defer { loop.stop() }
        let variant = try HangWatchVariant(name: "idle")
        defer { variant.removeReports() }
        variant.attach(to: loop)
        var watchdogs = ProcessThreads.tids(named: "hangwatch-wdog")
        for _ in 0..<100 where watchdogs.isEmpty {
            usleep(10_000)
            watchdogs = ProcessThreads.tids(named: "hangwatch-wdog")
        }
        // Settle: the watchdog parks after the loop's last activity, and the pool watch, one of its
        // lanes, rests once every pool thread has been idle for a second (its probes and looks
        // until then are the watchdog's wake-ups too: 16 in the first 1.25 s, docs/performance.md).
        usleep(2_000_000)
        let before = watchdogs.compactMap(ProcessThreads.contextSwitches).reduce(0, +)
        usleep(useconds_t(seconds * 1_000_000))
        let after = watchdogs.compactMap(ProcessThreads.contextSwitches).reduce(0, +)
        variant.detach()
        return after - before
    }
}

/// The cooperative pool's watch at rest: the whole process's voluntary context switches and CPU
/// time over `seconds` of an idle monitored loop, with the pool watch on and off (each run once,
/// side by side in one process).
struct PoolWatchIdleFigure {
    var seconds: Double

    struct Outcome {
        var contextSwitches: Int
        var cpuMilliseconds: Double
    }

    func measure(pool: Bool) throws -> Outcome {
        let loop = BenchLoop()
        defer { loop.stop() }
        let variant = try HangWatchVariant(name: "pool-\(pool)", pool: pool)
        defer { variant.removeReports() }
        variant.attach(to: loop)
        // Settle: the first probe prepares its worker, the watchdog parks, and the pool watch,
        // having found every pool thread idle for a second, rests (until a job is enqueued).
        usleep(2_000_000)
        var before = rusage()
        getrusage(RUSAGE_SELF.rawValue, &before)
        usleep(useconds_t(seconds * 1_000_000))
        var after = rusage()
        getrusage(RUSAGE_SELF.rawValue, &after)
        variant.detach()
        func milliseconds(_ time: timeval) -> Double { Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
        return Outcome(
            contextSwitches: after.ru_nvcsw - before.ru_nvcsw,
            cpuMilliseconds: milliseconds(after.ru_utime) + milliseconds(after.ru_stime) - milliseconds(before.ru_utime)
                - milliseconds(before.ru_stime))
    }
}

/// Figures 2c and 4, counted by valgrind (instructions, allocations): exact and repeatable, whatever
/// else the machine does. Each variant runs N and 2N iterations in a child process; the difference
/// over N is the per-iteration figure, free of start-up costs. Instructions are counted on the
/// loop's thread only, inside its `CFRunLoopRunSpecific` (the iteration, its observers and the
/// latch's wake of the watchdog): the monitor's other threads (the watchdog's waits, which depend
/// on how valgrind schedules them) moved the whole process's count by about 100 instructions per
/// iteration from run to run; their cost is in figures 1 and 2.
struct ValgrindFigure {
    var iterations: Int

    static var valgrind: String? {
        ["/usr/bin/valgrind", "/usr/local/bin/valgrind"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// A copy of this executable without its debug information, for valgrind 3.19, which cannot
    /// read the DWARF 5 that Swift's compiler writes; nil without objcopy. The caller removes it.
    static func strippedCopy() throws -> String? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/objcopy") else { return nil }
        let original = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let executable = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-valgrind-\(getpid())"
        try? FileManager.default.removeItem(atPath: executable)
        try FileManager.default.copyItem(atPath: original, toPath: executable)
        let strip = Process()
        strip.executableURL = URL(fileURLWithPath: "/usr/bin/objcopy")
        strip.arguments = ["--strip-debug", executable]
        try strip.run()
        strip.waitUntilExit()
        return executable
    }

    struct Counts {
        var instructionsPerIteration: [Variant: Double] = [:]
        var allocationsPerIteration: [Variant: Double] = [:]
    }

    func measure(variants: [Variant]) throws -> Counts? {
        guard let valgrind = Self.valgrind, let executable = try Self.strippedCopy() else { return nil }
        defer { try? FileManager.default.removeItem(atPath: executable) }
        var counts = Counts()
        for variant in variants {
            func run(_ tool: [String], _ count: Int, _ pattern: String) throws -> Double {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: valgrind)
                process.arguments = tool + [executable, "--valgrind-child", variant.rawValue, String(count)]
                let errors = Pipe()
                process.standardError = errors
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                guard let line = text.split(separator: "\n").first(where: { $0.contains(pattern) }) else {
                    throw CocoaError(.fileReadCorruptFile)
                }
                let digits = line.split(separator: pattern.last == ":" ? ":" : " ").last.map {
                    $0.filter { $0.isNumber }
                }
                if pattern == "total heap usage" {
                    // "total heap usage: 1,234 allocs, 1,200 frees, 56,789 bytes allocated"
                    let allocs = line.components(separatedBy: "usage:").last?.split(separator: " ").first ?? ""
                    return Double(allocs.filter { $0.isNumber }) ?? .nan
                }
                return Double(digits ?? "") ?? .nan
            }
            let callgrind = ["--tool=callgrind", "--callgrind-out-file=/dev/null", "--toggle-collect=CFRunLoopRunSpecific"]
            let single = try run(callgrind, iterations, "Collected")
            let double = try run(callgrind, iterations * 2, "Collected")
            counts.instructionsPerIteration[variant] = (double - single) / Double(iterations)
            let memcheck = ["--tool=memcheck", "--leak-check=no"]
            let singleAllocations = try run(memcheck, iterations, "total heap usage")
            let doubleAllocations = try run(memcheck, iterations * 2, "total heap usage")
            counts.allocationsPerIteration[variant] = (doubleAllocations - singleAllocations) / Double(iterations)
        }
        return counts
    }

    /// The child: attach `variant`, run `iterations`, exit.
    static func child(variant: Variant, iterations: Int) throws -> Never {
        let loop = BenchLoop()
        let baseline: Baseline? =
            switch variant {
            case .none: nil
            case .floor: FloorObserver()
            case .naive: NaiveMonitor()
            // (The pool watch off: under valgrind, its looks every sample interval, a cost per
            // second that figure 15 measures, would be counted as a cost per iteration.)
            case .hangwatch: try HangWatchVariant(threshold: .seconds(10), name: "valgrind-\(getpid())", pool: false)
            case .histogram: try HangWatchVariant(threshold: .seconds(10), name: "valgrind-\(getpid())", loopHistogram: true, pool: false)
            }
        baseline?.attach(to: loop)
        _ = loop.run(iterations: iterations, workNanoseconds: 0)
        baseline?.detach()
        (baseline as? HangWatchVariant)?.removeReports()
        exit(0)
    }
}

/// Figure 7: symbolication of a real report (a ~50-frame stack, ~20 samples), cold (nothing
/// open), warm (the images already open, a different report), and again (the same report).
struct SymbolicationFigure {
    func measure() throws -> (frames: Int, samples: Int, coldMilliseconds: Double, warmMilliseconds: Double, againMilliseconds: Double) {
        let loop = BenchLoop()
        defer { loop.stop() }
        let variant = try HangWatchVariant(threshold: .milliseconds(100), name: "symbolication")
        defer { variant.removeReports() }
        variant.attach(to: loop)
        let gaps = GapRecorder(thresholdNanoseconds: 1_000_000_000)
        // Eleven hangs at different depths: different reports of the same binaries.
        for depth in 30..<41 {
            loop.sync { _ = hangAtDepth(depth, milliseconds: 1100, gaps: gaps) }
        }
        variant.detach()
        let reports = variant.reports().sorted { $0.startedAt < $1.startedAt }
        guard let report = reports.last, reports.count >= 2 else { throw CocoaError(.fileNoSuchFile) }
        let start = Statistics.monotonicSeconds()
        let symbolicator = Symbolicator()
        var cold = report
        symbolicator.symbolicate(&cold)
        let coldTime = Statistics.monotonicSeconds() - start
        var warm: [Double] = []
        for other in reports.dropLast() {
            var copy = other
            let begin = Statistics.monotonicSeconds()
            symbolicator.symbolicate(&copy)
            warm.append(Statistics.monotonicSeconds() - begin)
        }
        var again: [Double] = []
        for _ in 0..<9 {
            var copy = report
            let begin = Statistics.monotonicSeconds()
            symbolicator.symbolicate(&copy)
            again.append(Statistics.monotonicSeconds() - begin)
        }
        let frames = report.heaviestStack?.frames.count ?? 0
        return (frames, report.samples.count, coldTime * 1000, Statistics.median(warm) * 1000, Statistics.median(again) * 1000)
    }
}

/// Figure 8: memory the monitor adds to the process, and report size for a long hang.
struct MemoryFigure {
    var longHangSeconds: Double

    static func residentBytes() -> Double {
        let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let pages = Double(text.split(separator: " ").dropFirst().first ?? "") ?? .nan
        return pages * Double(sysconf(Int32(_SC_PAGESIZE)))
    }

    struct Outcome {
        var addedResidentBytes: Double
        var reportBytes: Int
        var samples: Int
        var samplesTaken: Int
        var writeMilliseconds: Double
    }

    func measure() throws -> Outcome {
        let loop = BenchLoop()
        defer { loop.stop() }
        let before = Self.residentBytes()
        let variant = try HangWatchVariant(threshold: .milliseconds(250), name: "memory")
        defer { variant.removeReports() }
        variant.attach(to: loop)
        let gaps = GapRecorder(thresholdNanoseconds: 1_000_000_000)
        loop.sync { _ = hangAtDepth(38, milliseconds: Int(longHangSeconds * 1000), gaps: gaps) }
        let after = Self.residentBytes()
        variant.detach()
        guard let report = variant.reports().first,
            let file = try ReportStore(directory: variant.directory).list().first
        else { throw CocoaError(.fileNoSuchFile) }
        // Time to write that report again, atomically (with its fsyncs).
        let store = ReportStore(directory: variant.directory)
        var times: [Double] = []
        for _ in 0..<5 {
            let start = Statistics.monotonicSeconds()
            try store.write(report)
            times.append(Statistics.monotonicSeconds() - start)
        }
        return Outcome(
            addedResidentBytes: after - before, reportBytes: Int(file.size), samples: report.samples.count,
            samplesTaken: report.capture.samplesTaken, writeMilliseconds: Statistics.median(times) * 1000)
    }
}
