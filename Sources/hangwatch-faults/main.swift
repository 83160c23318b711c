import Foundation
import HangWatch
import HangWatchReport
import Logging

// hangwatch-faults: a service that misbehaves on request, for the fault-injection tests. Each
// scenario runs in a child process the test can kill, stop, starve, run out of disk, or run with
// an allocator interposed; none is part of the product.
//
//   hangwatch-faults loop --reports DIR --library PATH --function NAME --seconds S
//       HangMonitor on RunLoop.main (1 ms samples); a timer calls NAME(stop, progress) from the
//       shared library PATH, which loops until `stop` is set S seconds later: one hang. Exits 0
//       once the report is written and the monitor stopped.
//   hangwatch-faults spin --reports DIR --seconds S [--count N] [--gap-ms G] [--limits default]
//       N hangs of S seconds computing, G ms apart (default 1, 200). Exits 0 after printing the
//       monitor's statistics and its peak RSS as one JSON line. The rate limit and repeat folding
//       are off unless `--limits default`.
//   hangwatch-faults write-reports --reports DIR --template REPORT
//       rewrites the report REPORT under new ids, as fast as it can, until killed.
//   hangwatch-faults pool --reports DIR --mode block|hold|healthy|yield|idle|rest [--seconds S] [--count N]
//                         [--priority high|medium|low|background]
//       starves the cooperative pool (or keeps it busy but healthy): PoolScenario.swift.
//   hangwatch-faults labels --reports DIR
//       hangs under labels (HangMonitor.withLabels) on the run loop, on the main actor and in
//       pool jobs, and right after them without (LabelScenario.swift).
//   hangwatch-faults queued --reports DIR --mode pool|main --count N [--seconds S] (QueuedScenario.swift)
//   hangwatch-faults idle --reports DIR --seconds S [--mode unmonitored|no-pool]
//       a run-loop service at rest for S seconds, monitored with the default configuration (or
//       not monitored at all: the baseline) (IdleScenario.swift).
//   hangwatch-faults lifecycle --reports DIR --source run-loop|scopes|queue --count N [--warm-up W]
//       starts and stops one monitor W + N times; prints the growth of resident memory over the
//       last N as one JSON line (Lifecycle.swift).
//   hangwatch-faults limits --reports DIR --mode wall|cpu --ms N [--counter FILE]
//   hangwatch-faults pageout --reports DIR --file PATH
//       one hang computing N ms (of wall time, or of its own CPU time) for a test that put the
//       process in a cgroup (a CPU quota, a freezer), or faulting a file's evicted pages in;
//       prints what the thread's and the cgroup's own counters measured (ContainerScenario.swift).
//   hangwatch-faults saturate --reports DIR --seconds S [--ms N] [--file PATH]
//       a run loop busy N ms of every 20 (default 19) for S seconds, in pieces of 1 to 50 ms under
//       the 200 ms threshold, its heartbeat every second; 2 ms of 20 until PATH exists
//       (SaturationScenario.swift).
//   hangwatch-faults mainactor --reports DIR --mode one|many|saturated [--count N] [--ms M]
//                              [--source run-loop|main-queue]
//       main-actor jobs holding RunLoop.main or the main queue: one long one, a backlog of short
//       ones, or near misses then a hang (MainActorScenario.swift).
//
// Exit codes: 0 done, 2 bad arguments, 3 the monitor could not start.

struct Options {
    var scenario = ""
    var reports = ""
    var library = ""
    var function = ""
    var template = ""
    var seconds = 1.0
    var count = 1
    var gapMilliseconds = 200
    var defaultLimits = false
    var mode = "block"
    var source = "run-loop"
    var warmUp = 500
    /// The hold mode's task priority (its pool: `high` runs on the user-initiated pool's workers).
    var priority = TaskPriority.medium
    /// `limits`: how long to compute; the cgroup file whose throttled time to read around it.
    var milliseconds = 0
    var counter: String?
    /// `pageout`: the file to map; `saturate`: the file whose appearance saturates the loop.
    var file = ""
}

func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("hangwatch-faults: \(message)\n".utf8))
    exit(code)
}

func parseOptions() -> Options {
    var options = Options()
    var arguments = CommandLine.arguments.dropFirst()
    guard let scenario = arguments.popFirst() else { fail("usage: hangwatch-faults loop|spin|write-reports|pool|queued|labels|idle|lifecycle|limits|pageout|saturate|mainactor --reports DIR ...") }
    options.scenario = scenario
    while let name = arguments.popFirst() {
        guard let value = arguments.popFirst() else { fail("\(name) needs a value") }
        switch name {
        case "--reports": options.reports = value
        case "--library": options.library = value
        case "--function": options.function = value
        case "--template": options.template = value
        case "--seconds": options.seconds = Double(value) ?? -1
        case "--count": options.count = Int(value) ?? -1
        case "--gap-ms": options.gapMilliseconds = Int(value) ?? -1
        case "--mode":
            guard ["block", "hold", "healthy", "yield", "idle", "rest", "pool", "main", "unmonitored", "no-pool", "wall", "cpu", "one", "many", "saturated"].contains(value) else {
                fail("--mode takes block, hold, healthy, yield, idle, rest (pool), pool, main (queued), unmonitored, no-pool (idle), wall, cpu (limits) or one, many, saturated (mainactor)")
            }
            options.mode = value
        case "--source": options.source = value
        case "--ms": options.milliseconds = Int(value) ?? -1
        case "--counter": options.counter = value
        case "--file": options.file = value
        case "--warm-up": options.warmUp = Int(value) ?? -1
        case "--priority":
            let priorities: [String: TaskPriority] = ["high": .high, "medium": .medium, "low": .low, "background": .background]
            guard let priority = priorities[value] else { fail("--priority takes high, medium, low or background") }
            options.priority = priority
        case "--limits":
            guard value == "default" else { fail("--limits takes only `default`") }
            options.defaultLimits = true
        default: fail("unknown option \(name)")
        }
    }
    guard !options.reports.isEmpty else { fail("--reports is required") }
    guard options.seconds >= 0, options.count >= 1, options.gapMilliseconds >= 0, options.warmUp >= 0, options.milliseconds >= 0 else {
        fail("bad number")
    }
    return options
}

func startMonitor(_ options: Options, sampleInterval: Duration) -> HangMonitor {
    var configuration = HangMonitor.Configuration(
        serviceName: "faults", threshold: .milliseconds(200), reportDirectory: options.reports)
    configuration.sampleInterval = sampleInterval
    // These scenarios count the loop source's samples; the pool source has its own (`pool`).
    configuration.watchesConcurrencyPool = false
    if !options.defaultLimits {
        configuration.repeatWindow = .zero
        configuration.reportsPerMinute = 1000
        configuration.reportBurst = 1000
    }
    return startedMonitor(configuration)
}

/// A monitor of `configuration`, made and started by `start` (by default on the main run loop);
/// a monitor that cannot be made or started fails the host with code 3 (every scenario's
/// "the monitor did not start").
func startedMonitor(
    _ configuration: HangMonitor.Configuration, logger: Logger = Logger(label: "hangwatch"),
    start: (HangMonitor) throws -> Void = { try $0.start() }
) -> HangMonitor {
    do {
        let monitor = try HangMonitor(configuration: configuration, logger: logger)
        try start(monitor)
        return monitor
    } catch {
        fail("the monitor did not start: \(error)", code: 3)
    }
}

/// Waits (running the loop) until the monitor has written `count` reports, up to `seconds`.
func waitForReports(_ monitor: HangMonitor, count: Int, seconds: Double = 20) {
    let deadline = Date().addingTimeInterval(seconds)
    while monitor.statistics.reportsWritten + monitor.statistics.writeFailures < count && Date() < deadline {
        RunLoop.main.run(until: Date().addingTimeInterval(0.02))
    }
}

typealias LoopFunction = @convention(c) (UnsafeMutablePointer<Int32>, UnsafeMutablePointer<Int>) -> Void

func runLibraryLoop(_ options: Options) -> Never {
    guard let handle = dlopen(options.library, RTLD_NOW) else { fail("dlopen \(options.library): \(String(cString: dlerror()))") }
    guard let symbol = dlsym(handle, options.function) else { fail("no function \(options.function) in \(options.library)") }
    let loop = unsafeBitCast(symbol, to: LoopFunction.self)
    let monitor = startMonitor(options, sampleInterval: .milliseconds(1))
    let stop = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    let progress = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    stop.initialize(to: 0)
    progress.initialize(to: 0)
    nonisolated(unsafe) let flag = stop
    nonisolated(unsafe) let counter = progress
    let seconds = options.seconds
    Thread {
        usleep(UInt32(seconds * 1_000_000))
        flag.pointee = 1
    }.start()
    RunLoop.main.add(Timer(fire: Date().addingTimeInterval(0.05), interval: 0, repeats: false) { _ in loop(flag, counter) }, forMode: .default)
    RunLoop.main.run(until: Date().addingTimeInterval(0.1))
    waitForReports(monitor, count: 1)
    monitor.stop()
    print("{\"iterations\":\(progress.pointee),\"reportsWritten\":\(monitor.statistics.reportsWritten)}")
    exit(0)
}

@inline(never)
func spinComputing(seconds: Double) -> UInt64 {
    // Monotonic: the tests change the wall clock under this process.
    let end = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    var x: UInt64 = 1
    while DispatchTime.now().uptimeNanoseconds < end {
        for _ in 0..<1000 { x = x &* 6364136223846793005 &+ 1 }
    }
    return x
}

func runSpins(_ options: Options) -> Never {
    let monitor = startMonitor(options, sampleInterval: .milliseconds(20))
    nonisolated(unsafe) var sink: UInt64 = 0
    for index in 0..<options.count {
        RunLoop.main.run(until: Date().addingTimeInterval(Double(options.gapMilliseconds) / 1000))
        RunLoop.main.add(Timer(fire: Date(), interval: 0, repeats: false) { _ in sink &+= spinComputing(seconds: options.seconds) }, forMode: .default)
        RunLoop.main.run(until: Date().addingTimeInterval(0.01))
        let deadline = Date().addingTimeInterval(5)
        while monitor.statistics.hangsDetected < index + 1 && Date() < deadline {
            RunLoop.main.run(until: Date().addingTimeInterval(0.02))
        }
    }
    RunLoop.main.run(until: Date().addingTimeInterval(0.1))
    monitor.stop()
    let statistics = monitor.statistics
    // VmHWM, not getrusage's ru_maxrss: a child spawned with vfork keeps its parent's peak.
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }?.split(separator: " ").dropFirst().first ?? "-1"
    print(
        "{\"hangsDetected\":\(statistics.hangsDetected),\"reportsWritten\":\(statistics.reportsWritten),"
            + "\"writeFailures\":\(statistics.writeFailures),\"hangsFolded\":\(statistics.hangsFolded),"
            + "\"hangsSuppressed\":\(statistics.hangsSuppressed),\"maxRSSKiB\":\(peak),\"sink\":\(sink % 2)}")
    exit(0)
}

func runReportWrites(_ options: Options) -> Never {
    var report: HangReport
    do {
        report = try ReportReader().read(path: options.template)
    } catch {
        fail("cannot read the template report: \(error)")
    }
    let store = ReportStore(directory: options.reports)
    do { try store.prepare() } catch { fail("cannot prepare \(options.reports): \(error)", code: 3) }
    var serial = 0
    while true {
        serial += 1
        report.id = "fault-\(getpid())-\(serial)"
        _ = try? store.write(report)
    }
}

let options = parseOptions()
switch options.scenario {
case "loop": runLibraryLoop(options)
case "spin": runSpins(options)
case "write-reports": runReportWrites(options)
case "pool": runPool(options, mode: options.mode)
case "queued": runQueued(options)
case "lifecycle": runLifecycle(options)
case "labels": runLabels(options)
case "idle": runIdle(options)
case "limits": runLimits(options)
case "pageout": runPageout(options)
case "saturate": runSaturate(options)
case "mainactor": runMainActor(options)
default: fail("unknown scenario \(options.scenario)")
}
