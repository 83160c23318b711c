import Foundation

/// Medians, percentiles and the process's CPU time.
enum Statistics {
    static func median(_ values: [Double]) -> Double {
        percentile(values, 0.5)
    }

    static func percentile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let position = fraction * Double(sorted.count - 1)
        let low = Int(position.rounded(.down))
        let high = min(low + 1, sorted.count - 1)
        return sorted[low] + (sorted[high] - sorted[low]) * (position - Double(low))
    }

    /// User + system CPU time of the whole process, in seconds.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }

    static func monotonicSeconds() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }
}

/// Spins for about `nanoseconds`: the work of one iteration.
@inline(never)
func benchWork(nanoseconds: UInt64) {
    guard nanoseconds > 0 else { return }
    let end = DispatchTime.now().uptimeNanoseconds + nanoseconds
    var state: UInt64 = 1
    while DispatchTime.now().uptimeNanoseconds < end {
        for _ in 0..<16 { state = state &* 6_364_136_223_846_793_005 &+ 1 }
    }
    blackHole(state)
}

@inline(never)
func blackHole(_ value: UInt64) {
    if value == 42 { print("") }
}

/// Threads of this process by name, from /proc.
enum ProcessThreads {
    static func tids(named name: String) -> [Int32] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { tid -> Int32? in
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return comm == name ? Int32(tid) : nil
        }
    }

    /// CPU time of thread `tid` in nanoseconds (`schedstat`).
    static func cpuNanoseconds(_ tid: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/self/task/\(tid)/schedstat", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { UInt64($0) }
    }

    /// Context switches (voluntary + involuntary) of thread `tid`.
    static func contextSwitches(_ tid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8) else { return nil }
        var total = 0
        for line in status.split(separator: "\n") where line.hasSuffix("") {
            if line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                total += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        return total
    }

    /// The calling thread's kernel id.
    static func currentThreadID() -> Int32 {
        // `/proc/thread-self` links to `<pid>/task/<tid>` (glibc's gettid is not visible to Swift).
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return link.split(separator: "/").last.flatMap { Int32($0) } ?? 0
    }

    /// Pins thread `tid` to CPU `cpu` (nil: every CPU), with util-linux's taskset (glibc's
    /// sched_setaffinity is not visible to Swift).
    static func pin(_ tid: Int32, to cpu: Int?) {
        let count = ProcessInfo.processInfo.activeProcessorCount
        let list = cpu.map(String.init) ?? "0-\(count - 1)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
        process.arguments = ["-p", "-c", list, String(tid)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
        process.waitUntilExit()
    }
}
