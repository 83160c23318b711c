import CoreFoundation
import Foundation
import HangWatch

// hangwatch-faults lifecycle --reports DIR --source run-loop|scopes|queue --count N [--warm-up W]
//     One HangMonitor started and stopped W times (default 500: first-use caches), then N times
//     more, measured. Prints one JSON line: the source, the cycles, resident memory before and
//     after the measured cycles (`/proc/self/statm`), the growth per cycle, and the threads left.
//     A release build of this is what valgrind (`--leak-check=full`, massif) can read.

/// Resident memory of this process in bytes (`/proc/self/statm`, field 2).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
        let field = text.split(separator: " ").dropFirst().first, let pages = Int(field)
    else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func threadCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? 0
}

/// A thread running its own run loop until the process ends (the monitored loop of `run-loop`).
final class LifecycleLoop: @unchecked Sendable {
    private(set) var runLoop: RunLoop!
    private let ready = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [self] in
            runLoop = RunLoop.current
            RunLoop.current.add(Timer(fire: .distantFuture, interval: 3600, repeats: true) { _ in }, forMode: .default)
            ready.signal()
            while true { _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(1)) }
        }
        thread.name = "lifecycle-loop"
        thread.start()
        ready.wait()
    }
}

func runLifecycle(_ options: Options) -> Never {
    let configuration = HangMonitor.Configuration(serviceName: "cycles", threshold: .milliseconds(250), reportDirectory: options.reports)
    let monitor: HangMonitor
    do { monitor = try HangMonitor(configuration: configuration) } catch { fail("the monitor did not start: \(error)", code: 3) }
    let cycle: () throws -> Void
    switch options.source {
    case "run-loop":
        let loop = LifecycleLoop()
        cycle = {
            try monitor.start(runLoop: loop.runLoop)
            monitor.stop()
        }
    case "scopes":
        cycle = {
            try monitor.startWatchingScopes()
            monitor.stop()
        }
    case "queue":
        let queue = DispatchQueue(label: "lifecycle-queue")
        cycle = {
            try monitor.start(queue: queue)
            monitor.stop()
        }
    default:
        fail("--source is run-loop, scopes or queue")
    }
    do {
        for _ in 0..<options.warmUp { try cycle() }
        // Threads that stopped a moment ago are gone before the count; the measuring code has run
        // once (its first run touches pages of its own).
        usleep(100_000)
        _ = residentBytes()
        let threadsBefore = threadCount()
        let before = residentBytes()
        for _ in 0..<options.count { try cycle() }
        usleep(100_000)
        let after = residentBytes()
        let perCycle = Double(after - before) / Double(max(1, options.count))
        print(
            "{\"source\":\"\(options.source)\",\"warmUp\":\(options.warmUp),\"cycles\":\(options.count),"
                + "\"rssBeforeBytes\":\(before),\"rssAfterBytes\":\(after),\"bytesPerCycle\":\(String(format: "%.1f", perCycle)),"
                + "\"threadsBefore\":\(threadsBefore),\"threadsAfter\":\(threadCount())}")
    } catch {
        fail("a cycle failed: \(error)", code: 3)
    }
    exit(0)
}
