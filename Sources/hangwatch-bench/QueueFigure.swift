import Foundation
import HangWatch

/// What watching a serial queue by pinging costs its work: `blocks` blocks of about 0.3 µs
/// drained (enqueued while the queue is suspended, timed from resume), with the queue unwatched and watched (threshold 250 ms), alternating in
/// every round; median of per-round ratios. The ping's cost is per threshold, not per block.
struct QueueFigure {
    var blocks: Int
    var rounds: Int

    func measure() throws -> (noneNanoseconds: Double, watchedNanoseconds: Double, ratio: Double) {
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-\(getpid())-queue"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let queue = DispatchQueue(label: "bench.serial")
        func drain() -> Double {
            // Enqueued while suspended, then timed from resume: the drain alone, not the enqueuing.
            let done = DispatchSemaphore(value: 0)
            queue.suspend()
            for index in 0..<blocks {
                queue.async { _ = ScopeFigure.workItem(UInt64(index)) }
            }
            queue.async { done.signal() }
            let start = DispatchTime.now().uptimeNanoseconds
            queue.resume()
            done.wait()
            return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(blocks)
        }
        var none: [Double] = [], watched: [Double] = [], ratios: [Double] = []
        _ = drain()
        for round in 0..<rounds {
            func watchedRun() throws -> Double {
                let monitor = try HangMonitor(
                    configuration: HangMonitor.Configuration(serviceName: "bench", threshold: .milliseconds(250), reportDirectory: directory))
                try monitor.start(queue: queue)
                defer { monitor.stop() }
                return drain()
            }
            let (bare, withMonitor): (Double, Double)
            if round % 2 == 0 {
                bare = drain()
                withMonitor = try watchedRun()
            } else {
                withMonitor = try watchedRun()
                bare = drain()
            }
            none.append(bare)
            watched.append(withMonitor)
            ratios.append(withMonitor / bare)
        }
        return (Statistics.median(none), Statistics.median(watched), Statistics.median(ratios))
    }
}

/// Idle cost of a pinged queue: context switches of every thread of this process over `seconds`
/// with an idle serial queue watched (threshold 250 ms), minus the same without the monitor.
struct PingIdleFigure {
    var seconds: Double

    static func processCPUMilliseconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000
    }

    /// CPU time of each of the monitor's threads (`hangwatch-…`), by thread id.
    static func monitorThreadsCPUNanoseconds() -> [Int32: UInt64] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var times: [Int32: UInt64] = [:]
        for tid in tasks.compactMap({ Int32($0) }) {
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
            if comm.hasPrefix("hangwatch-"), let time = ProcessThreads.cpuNanoseconds(tid) { times[tid] = time }
        }
        return times
    }

    static func allSwitches() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { Int32($0) }.compactMap(ProcessThreads.contextSwitches).reduce(0, +)
    }

    /// Switches over `seconds` unwatched, watched by the ping alone, and pinged with looks at the
    /// draining thread (the default); the pool watch off in all three (figure 15 has it).
    /// `monitorCPU`: the CPU time of the monitor's own threads (`hangwatch-…`) over the same time,
    /// milliseconds: the monitor's share, apart from libdispatch's workers and the process's noise.
    func measure() throws -> (
        looks: (switches: Int, cpu: Double, monitorCPU: Double), pingOnly: (switches: Int, cpu: Double, monitorCPU: Double),
        without: (switches: Int, cpu: Double, monitorCPU: Double)
    ) {
        let directory = FileManager.default.temporaryDirectory.path + "/hangwatch-bench-\(getpid())-ping-idle"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let queue = DispatchQueue(label: "bench.idle")
        /// Context switches of the whole process, and its CPU time in milliseconds.
        func count(_ watched: Bool, looks: Bool = true) throws -> (switches: Int, cpu: Double, monitorCPU: Double) {
            var configuration = HangMonitor.Configuration(serviceName: "bench", threshold: .milliseconds(250), reportDirectory: directory)
            configuration.watchesConcurrencyPool = false
            configuration.looksAtQueueThreads = looks
            let monitor = try HangMonitor(configuration: configuration)
            if watched { try monitor.start(queue: queue) }
            defer { monitor.stop() }
            usleep(2_500_000)  // settle: past the first 2 s, when pings come an interval apart (QueueActivitySource)
            let before = Self.allSwitches()
            let cpuBefore = Self.processCPUMilliseconds()
            let monitorBefore = Self.monitorThreadsCPUNanoseconds()
            usleep(useconds_t(seconds * 1_000_000))
            return (
                Self.allSwitches() - before, Self.processCPUMilliseconds() - cpuBefore,
                Double(Self.monitorThreadsCPUNanoseconds().reduce(0) { total, thread in
                    total + thread.value - min(thread.value, monitorBefore[thread.key] ?? 0)
                }) / 1e6
            )
        }
        let without = try count(false)
        let pingOnly = try count(true, looks: false)
        let looks = try count(true)
        return (looks, pingOnly, without)
    }
}
