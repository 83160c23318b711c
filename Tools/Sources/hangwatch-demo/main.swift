import Foundation
import HangWatch
import HangWatchReport
import HangWatchSymbolication

// hangwatch-demo: runs a small service on RunLoop.main that hangs on purpose in several ways,
// with HangWatch watching, then prints a summary of every report it wrote.
//
//   hangwatch-demo [--reports DIR]    (default ./hangwatch-reports)
//       DIR is created if missing; an earlier demo run's reports are removed only from a directory
//       the demo created itself: nothing else is ever deleted.
//   hangwatch-demo --reports DIR --hang-forever
//       hangs once, computing, until the process is killed: a fatal hang, as a systemd watchdog
//       kill or the OOM killer would end it (the agent then finishes its provisional report).
//   hangwatch-demo --reports DIR --main-queue
//       the same service shape without a run loop: dispatchMain(), the main queue watched by
//       pinging it (as an `async` @main service would be); one 800 ms hang, then exits.
//   hangwatch-demo --reports DIR --busy
//       keeps RunLoop.main about half busy with short jobs (20 ms of work, then 20 ms asleep: never
//       a hang) and watches a serial queue too, until killed: what `hangwatch dump --recent PID`
//       shows (BusyMode.swift).

func parseArguments() -> (reportDirectory: String, hangForever: Bool, mainQueue: Bool, busy: Bool) {
    var directory = "./hangwatch-reports"
    var hangForever = false
    var mainQueue = false
    var busy = false
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        switch argument {
        case "--hang-forever":
            hangForever = true
        case "--main-queue":
            mainQueue = true
        case "--busy":
            busy = true
        case "--reports":
            guard let value = arguments.popFirst() else {
                FileHandle.standardError.write(Data("hangwatch-demo: --reports needs a directory\n".utf8))
                exit(2)
            }
            directory = value
        case "-h", "--help":
            print("usage: hangwatch-demo [--reports DIR] [--hang-forever | --main-queue | --busy]")
            exit(0)
        default:
            FileHandle.standardError.write(Data("hangwatch-demo: unknown argument \(argument)\n".utf8))
            exit(2)
        }
    }
    if [hangForever, mainQueue, busy].filter({ $0 }).count > 1 {
        FileHandle.standardError.write(Data("hangwatch-demo: --hang-forever, --main-queue and --busy are different runs: give one\n".utf8))
        exit(2)
    }
    return (directory, hangForever, mainQueue, busy)
}
let (reportDirectory, hangForever, mainQueue, busy) = parseArguments()

/// The scenarios, in order, each with the delay before it starts.
struct Scenario {
    var name: String
    var expectsReport: Bool
    var run: @Sendable () -> Void
}

let cacheLock = NSLock()
let scenarios: [Scenario] = [
    Scenario(name: "slow timer callback (700 ms computing)", expectsReport: true) {
        _ = Timer.scheduledTimer(withTimeInterval: 0.01, repeats: false) { _ in
            _ = DemoService.recomputePricing(milliseconds: 700)
        }
    },
    Scenario(name: "slow main-queue block (500 ms computing)", expectsReport: true) {
        DispatchQueue.main.async { _ = DemoService.parseInventorySnapshot(milliseconds: 500) }
    },
    Scenario(name: "lock wait (600 ms blocked on a mutex, labelled route=GET /cart)", expectsReport: true) {
        let holder = Thread {
            cacheLock.lock()
            usleep(650_000)
            cacheLock.unlock()
        }
        holder.start()
        // In a request's labels: the report carries them (`hangwatch list --label route=GET /cart`).
        _ = Timer.scheduledTimer(withTimeInterval: 0.05, repeats: false) { _ in
            HangMonitor.withLabels(["route": "GET /cart", "tenant": "acme"]) { DemoService.waitForCacheLock(cacheLock) }
        }
    },
    Scenario(name: "nested run loop in a custom mode (idle 300 ms, then 400 ms computing)", expectsReport: true) {
        _ = Timer.scheduledTimer(withTimeInterval: 0.01, repeats: false) { _ in
            DemoService.runModalSession(idleMilliseconds: 300, hangMilliseconds: 400)
        }
    },
    Scenario(name: "synchronous sleep (600 ms in usleep, labelled route=GET /checkout)", expectsReport: true) {
        _ = Timer.scheduledTimer(withTimeInterval: 0.01, repeats: false) { _ in
            HangMonitor.withLabels(["route": "GET /checkout", "tenant": "acme"]) { DemoService.flushAuditLogSynchronously(milliseconds: 600) }
        }
    },
    Scenario(name: "short burst (100 ms, under the threshold)", expectsReport: false) {
        _ = Timer.scheduledTimer(withTimeInterval: 0.01, repeats: false) { _ in
            _ = DemoService.recomputePricing(milliseconds: 100)
        }
    },
]

if !hangForever && !busy { DemoDirectory.prepare(reportDirectory) }
let configuration = HangMonitor.Configuration(
    serviceName: "demo", threshold: .milliseconds(250), reportDirectory: reportDirectory)
let monitor: HangMonitor
do {
    monitor = try HangMonitor(configuration: configuration)
    if mainQueue {
        try monitor.startWatchingMainQueue()
    } else {
        try monitor.start()
    }
} catch {
    FileHandle.standardError.write(Data("hangwatch-demo: \(error)\n".utf8))
    exit(1)
}

if hangForever {
    print("HangWatch demo: hanging until killed (pid \(getpid())), reports in \(reportDirectory)")
    _ = Timer.scheduledTimer(withTimeInterval: 0.1, repeats: false) { _ in
        while true { _ = DemoService.recomputePricing(milliseconds: 1000) }
    }
    RunLoop.main.run()
}

if busy { runBusy(configuration: configuration, reportDirectory: reportDirectory) }

if mainQueue {
    print("HangWatch demo: watching the main queue under dispatchMain(), threshold 250 ms, reports in \(reportDirectory)")
    DispatchQueue.main.asyncAfter(deadline: .now() + 0.5) {
        print("  1. slow main-queue block (800 ms computing)")
        _ = DemoService.recomputePricing(milliseconds: 800)
        DispatchQueue.main.asyncAfter(deadline: .now() + 1.0) {
            monitor.stop()
            summarize(directory: reportDirectory, expected: 1)
        }
    }
    dispatchMain()
}

print("HangWatch demo: watching RunLoop.main, threshold 250 ms, reports in \(reportDirectory)")
for (index, scenario) in scenarios.enumerated() {
    _ = Timer.scheduledTimer(withTimeInterval: 0.5 + Double(index) * 1.4, repeats: false) { _ in
        print("  \(index + 1). \(scenario.name)")
        scenario.run()
    }
}
let expectedReports = scenarios.filter(\.expectsReport).count
_ = Timer.scheduledTimer(withTimeInterval: 0.5 + Double(scenarios.count) * 1.4 + 0.5, repeats: false) {
    [reportDirectory] _ in
    monitor.stop()
    summarize(directory: reportDirectory, expected: expectedReports)
}
RunLoop.main.run()

func summarize(directory: String, expected: Int) -> Never {
    let store = ReportStore(directory: directory)
    // This run's reports: the directory may hold others (an earlier run's, or anyone's).
    var reports: [(path: String, report: HangReport)] = []
    var failures = 0
    for file in (try? store.list()) ?? [] {
        do {
            let report = try ReportReader().read(path: file.path)
            if report.pid == getpid() { reports.append((file.path, report)) }
        } catch {
            failures += 1
            print("cannot read \(file.path): \(error)")
        }
    }
    print("\n\(reports.count) hang reports written (expected \(expected)):\n")
    let symbolicator = Symbolicator()
    for (path, report) in reports {
        var report = report
        symbolicator.symbolicate(&report)
        print(HangReportSummary(maxFrames: 8).render(report))
        print("  file: \(path)\n")
    }
    exit(reports.count == expected && failures == 0 ? 0 : 1)
}

/// The demo's report directory. The demo clears only what it made: in a directory it created
/// (marked by `.hangwatch-demo`) it removes its earlier runs' reports and nothing else; a directory
/// it did not create is left as it is, and the summary counts this run's reports only.
enum DemoDirectory {
    static let marker = ".hangwatch-demo"

    static func prepare(_ path: String) {
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        guard fileManager.fileExists(atPath: path, isDirectory: &isDirectory) else {
            // New: made here (as the monitor would make it), and marked as the demo's.
            do {
                try ReportStore(directory: path).prepare()
                _ = fileManager.createFile(atPath: path + "/" + marker, contents: Data("made by hangwatch-demo\n".utf8))
            } catch {
                FileHandle.standardError.write(Data("hangwatch-demo: \(error)\n".utf8))
                exit(1)
            }
            return
        }
        guard isDirectory.boolValue, fileManager.fileExists(atPath: path + "/" + marker) else {
            print("hangwatch-demo: \(path) was not made by the demo; everything in it is kept")
            return
        }
        let store = ReportStore(directory: path)
        for file in (try? store.list()) ?? [] {
            // Only reports of the demo's own service.
            guard let report = try? ReportReader().read(path: file.path), report.service == "demo" else { continue }
            unlink(file.path)
        }
    }
}
