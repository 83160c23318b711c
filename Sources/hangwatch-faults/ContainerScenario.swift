import Foundation
import HangWatch
@_spi(Internal) import HangWatchReport

#if canImport(CoreFoundation)
import CoreFoundation
#endif

#if canImport(Glibc)
import Glibc
#endif

// hangwatch-faults limits --reports DIR --mode wall|cpu --ms N [--counter FILE]
//     One hang on RunLoop.main (threshold 200 ms, samples every 50 ms, the default): a timer
//     computes for N ms of wall time (`wall`) or of the thread's own CPU time (`cpu`: a freeze
//     or a limit then lengthens it). The test puts the process in a cgroup (a CPU quota, a
//     freezer) before it starts. Prints one JSON line of what the thread's own counters and
//     the cgroup's measured around the computing: wall, on-CPU and run-queue ms (schedstat), the
//     throttled ms of FILE (a cgroup's cpu.stat or cpu.stat.local), and the monitor's counts.
// hangwatch-faults pageout --reports DIR --file PATH
//     Maps PATH (read-only, shared), reads every page, evicts them (MADV_PAGEOUT, with MADV_RANDOM
//     so that no readahead brings them back), then reads every page again on RunLoop.main: one
//     hang spent faulting pages in. Prints the thread's major faults over it.
//
// Both print `started` once the monitor runs and the loop has been idle a moment.

/// The calling thread's `schedstat`: ns on a CPU, ns waiting for one.
private func ownSchedule() -> (run: UInt64, wait: UInt64) {
    let fields = ((try? String(contentsOfFile: "/proc/thread-self/schedstat", encoding: .utf8)) ?? "").split(separator: " ")
    return (fields.count >= 2 ? UInt64(fields[0]) ?? 0 : 0, fields.count >= 2 ? UInt64(fields[1]) ?? 0 : 0)
}

/// `throttled_time` (ns) or `throttled_usec` of a cgroup's `cpu.stat(.local)`, in ns.
private func throttledNanoseconds(_ path: String) -> UInt64? {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") {
        let parts = line.split(separator: " ")
        guard parts.count == 2, let value = UInt64(parts[1]) else { continue }
        if parts[0] == "throttled_time" { return value }
        if parts[0] == "throttled_usec" { return value * 1000 }
    }
    return nil
}

private func monotonicNanoseconds(_ clock: clockid_t = CLOCK_MONOTONIC) -> UInt64 {
    var now = timespec()
    clock_gettime(clock, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

@inline(never)
private func computeUntil(_ done: () -> Bool) -> UInt64 {
    var x: UInt64 = 1
    while !done() {
        for _ in 0..<1000 { x = x &* 6364136223846793005 &+ 1 }
    }
    return x
}

private func startContainerMonitor(_ options: Options) -> HangMonitor {
    var configuration = HangMonitor.Configuration(serviceName: "faults", threshold: .milliseconds(200), reportDirectory: options.reports)
    configuration.watchesConcurrencyPool = false
    configuration.repeatWindow = .zero
    let monitor = startedMonitor(configuration)
    RunLoop.main.run(until: Date().addingTimeInterval(0.3))
    FileHandle.standardOutput.write(Data("started\n".utf8))
    return monitor
}

private func finishContainerScenario(_ monitor: HangMonitor, fields: [String: String]) -> Never {
    waitForReports(monitor, count: 1)
    monitor.stop()
    var all = fields
    all["hangsDetected"] = String(monitor.statistics.hangsDetected)
    all["reportsWritten"] = String(monitor.statistics.reportsWritten)
    print("{" + all.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\($0.value)" }.joined(separator: ",") + "}")
    exit(0)
}

func runLimits(_ options: Options) -> Never {
    guard options.milliseconds > 0, options.mode == "wall" || options.mode == "cpu" else { fail("limits takes --mode wall|cpu and --ms N") }
    let monitor = startContainerMonitor(options)
    nonisolated(unsafe) var fields: [String: String] = [:]
    nonisolated(unsafe) var sink: UInt64 = 0
    nonisolated(unsafe) var before: (throttled: UInt64?, run: UInt64, wait: UInt64, wall: UInt64)?
    let milliseconds = UInt64(options.milliseconds)
    let byCPU = options.mode == "cpu"
    let counter = options.counter
    // The figures end where the hang does: as the loop goes to sleep after the computing (an
    // observer of `beforeWaiting` ordered before the monitor's), so that a quota that holds the
    // thread back between the end of its computing and the loop's sleep is counted on both sides.
    let sleeping = CFRunLoopObserverCreateWithHandler(nil, CFRunLoopActivity.beforeWaiting.rawValue, true, 0) { _, _ in
        guard let start = before, fields["wallMs"] == nil else { return }
        let throttled = counter.flatMap(throttledNanoseconds)
        let (run, wait) = ownSchedule()
        fields["wallMs"] = String(Double(monotonicNanoseconds() - start.wall) / 1e6)
        fields["runMs"] = String(Double(run &- start.run) / 1e6)
        fields["waitMs"] = String(Double(wait &- start.wait) / 1e6)
        if let first = start.throttled, let throttled { fields["throttledMs"] = String(Double(throttled &- first) / 1e6) }
    }
    CFRunLoopAddObserver(CFRunLoopGetMain(), sleeping, kCFRunLoopCommonModes)
    // The timer fires while the loop sleeps (its watchdog resting): the hang's busy stretch is
    // seen as it begins.
    RunLoop.main.add(
        Timer(fire: Date().addingTimeInterval(0.3), interval: 0, repeats: false) { _ in
            let throttled = counter.flatMap(throttledNanoseconds)
            let (run, wait) = ownSchedule()
            let wallStart = monotonicNanoseconds()
            before = (throttled, run, wait, wallStart)
            let cpuStart = monotonicNanoseconds(CLOCK_THREAD_CPUTIME_ID)
            sink &+= computeUntil {
                byCPU
                    ? monotonicNanoseconds(CLOCK_THREAD_CPUTIME_ID) - cpuStart >= milliseconds * 1_000_000
                    : monotonicNanoseconds() - wallStart >= milliseconds * 1_000_000
            }
        }, forMode: .default)
    RunLoop.main.run(until: Date().addingTimeInterval(0.35))
    let deadline = Date().addingTimeInterval(20)
    while fields["wallMs"] == nil && Date() < deadline { RunLoop.main.run(until: Date().addingTimeInterval(0.02)) }
    fields["sink"] = String(sink % 2)
    finishContainerScenario(monitor, fields: fields)
}

func runPageout(_ options: Options) -> Never {
    let fd = open(options.file, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { fail("cannot open \(options.file)") }
    var info = stat()
    guard fstat(fd, &info) == 0, info.st_size > 0 else { fail("\(options.file) is empty") }
    let length = Int(info.st_size)
    let page = Int(sysconf(Int32(_SC_PAGESIZE)))
    guard let mapped = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), mapped != MAP_FAILED else { fail("mmap failed") }
    let bytes = mapped.assumingMemoryBound(to: UInt8.self)
    nonisolated(unsafe) var sum: UInt64 = 0
    // No readahead: each page is one major fault. Read, evict, read again (a refault of a page
    // evicted so soon makes it the kernel's working set, whose refaults are memory stalls: a cold
    // file's first eviction would show no pressure), evict again.
    let madviseRandom: Int32 = 1, madvisePageout: Int32 = 21
    if case .failure(let error) = SystemCall.result("madvise(MADV_RANDOM)", { madvise(mapped, length, madviseRandom) }) { fail("\(error)") }
    for _ in 0..<2 {
        for offset in stride(from: 0, to: length, by: page) { sum &+= UInt64(bytes[offset]) }
        if case .failure(let error) = SystemCall.result("madvise(MADV_PAGEOUT)", { madvise(mapped, length, madvisePageout) }) {
            fail("\(error)", code: 4)
        }
    }
    let monitor = startContainerMonitor(options)
    nonisolated(unsafe) var fields: [String: String] = [:]
    nonisolated(unsafe) let pages = bytes
    RunLoop.main.add(
        Timer(fire: Date().addingTimeInterval(0.3), interval: 0, repeats: false) { _ in
            let before = ProcTaskFaults.major()
            let start = monotonicNanoseconds()
            for offset in stride(from: 0, to: length, by: page) { sum &+= UInt64(pages[offset]) }
            fields["wallMs"] = String(Double(monotonicNanoseconds() - start) / 1e6)
            fields["majorFaults"] = String(ProcTaskFaults.major() &- before)
            fields["pages"] = String(length / page)
        }, forMode: .default)
    RunLoop.main.run(until: Date().addingTimeInterval(0.35))
    fields["sink"] = String(sum % 2)
    finishContainerScenario(monitor, fields: fields)
}

/// The calling thread's major faults (`stat` field 12).
private enum ProcTaskFaults {
    static func major() -> UInt64 {
        guard let text = try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 9 ? UInt64(fields[9]) ?? 0 : 0
    }
}
