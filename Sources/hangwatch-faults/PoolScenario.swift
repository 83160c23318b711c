import Logging
import Foundation
import HangWatch
import Synchronization

// hangwatch-faults pool --reports DIR --mode block|hold|healthy|yield|idle|rest [--seconds S] [--count N]
//   A monitor (threshold 200 ms, watching scopes on the main thread: nothing but the pool source
//   can report) with the pool watch on by default, then:
//   - block: N tasks (default 2 x cores) started together on the global executor at `.medium`,
//     even ones sleeping S seconds in `usleep`, odd ones reading a pipe that a plain thread writes
//     S seconds later. Waits until one report is written, and a while longer.
//   - hold: one task on the global executor (the rest of the pool free) awaits
//     `poolJobRoute`, which holds its pool thread S seconds in `usleep`
//     (`holdPoolThreadSleeping`), then S seconds computing (`holdPoolThreadComputing`). Prints
//     when each step started and ended (milliseconds since the Unix epoch) and how long its
//     thread ran on a CPU meanwhile as `holds`, and the
//     name of the thread the task ran on. `--priority` (default `medium`) is the task's: `high`
//     runs it on the user-initiated pool's workers.
//   - healthy: short tasks (1 ms of computing each, ncpu at a time) for S seconds.
//   - yield: one task computing for S seconds in 1 ms slices, `await Task.yield()` after each
//     (it never holds its thread for long: no report is due).
//   - idle: nothing for S seconds; prints the process's CPU time and context switches over them.
//   - rest: the pool watch rests and is woken (PoolRestScenario.swift).
//   Prints one JSON line: the tasks' thread ids, when the first task was spawned and when the last
//   one ended (milliseconds of CLOCK_MONOTONIC), and the monitor's statistics.

/// The kernel id of the calling thread (`/proc/thread-self` links to `<pid>/task/<tid>`).
func currentThreadID() -> Int32 {
    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
    return Int32(target.split(separator: "/").last ?? "") ?? 0
}

/// Threads named like the default-QoS pool's workers.
func poolThreadIDs() -> [Int32] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { Int32($0) }.filter { tid in
        let name = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
        return name.trimmingCharacters(in: .newlines) == "oot.default-qos"
    }.sorted()
}

/// The kernel name of the calling thread.
func currentThreadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
}

func monotonicMilliseconds() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1e6
}

final class TaskLog: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var threadIDs: Set<Int32> = []
    private(set) var lastEnd = 0.0
    private(set) var ends: [Double] = []
    var poolThreads: [Int32] = []
    private(set) var writers: [Int32] = []
    func recordWriter(tid: Int32) {
        lock.withLock { writers.append(tid) }
    }
    func record(tid: Int32, end: Double) {
        lock.withLock {
            ends.append(end)
            threadIDs.insert(tid)
            lastEnd = max(lastEnd, end)
        }
    }
}

/// One step a task held its pool thread: when it began and ended (milliseconds since the Unix
/// epoch), and how long its thread ran on a CPU meanwhile (the thread's CPU clock). The tests read
/// a report's verdict against the last: a spin that got a CPU less than half the time waited for one.
struct HeldStep: Sendable {
    var start: Double
    var end: Double = 0
    var onCPUMs: Double = 0
    private var cpuAtStart: Double = 0

    /// A step that begins now, on the calling thread.
    static func begin() -> HeldStep {
        HeldStep(start: Date().timeIntervalSince1970 * 1000, cpuAtStart: threadCPUMilliseconds())
    }

    /// The step ended now, on the thread it began on.
    func ended() -> HeldStep {
        var step = self
        step.end = Date().timeIntervalSince1970 * 1000
        step.onCPUMs = Self.threadCPUMilliseconds() - cpuAtStart
        return step
    }

    var json: String { "{\"startUnixMs\":\(start),\"endUnixMs\":\(end),\"onCPUMs\":\(onCPUMs)}" }

    private static func threadCPUMilliseconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Double(now.tv_sec) * 1000 + Double(now.tv_nsec) / 1e6
    }
}

@inline(never)
func holdPoolThreadSleeping(seconds: Double) async -> HeldStep {
    let step = HeldStep.begin()
    usleep(UInt32(seconds * 1e6))
    return step.ended()
}

@inline(never)
func holdPoolThreadComputing(seconds: Double) async -> HeldStep {
    let step = HeldStep.begin()
    _ = spinComputing(seconds: seconds)
    return step.ended()
}

/// An async caller for both, as a request handler would be.
@inline(never)
func poolJobRoute(seconds: Double) async -> [HeldStep] {
    let slept = await holdPoolThreadSleeping(seconds: seconds)
    let computed = await holdPoolThreadComputing(seconds: seconds)
    return [slept, computed]
}

/// Waits until the pool watch, awake, has just sent a probe, and returns when it saw it
/// (milliseconds of CLOCK_MONOTONIC): the next probe goes a threshold later. First the watch is let
/// rest (the pool has been idle since the warm-up) and woken by a job, so its next rest is a second
/// or more away; then the next probe count (each probe is counted at its deadline, as the next one
/// is sent).
func awaitFreshProbe(_ monitor: HangMonitor) -> Double {
    func pool() -> HangMonitor.PoolProbeDelays { monitor.statistics.concurrencyPool }
    let rests = pool().rests
    var deadline = monotonicMilliseconds() + 3000
    while pool().rests == rests && monotonicMilliseconds() < deadline { usleep(1000) }
    Task.detached(priority: .medium) {}
    let probes = pool().probes
    deadline = monotonicMilliseconds() + 3000
    while pool().probes == probes && monotonicMilliseconds() < deadline { usleep(500) }
    return monotonicMilliseconds()
}

@inline(never)
func blockInRead(_ descriptor: Int32) {
    var byte: UInt8 = 0
    _ = read(descriptor, &byte, 1)
}

func runPool(_ options: Options, mode: String) -> Never {
    var configuration = HangMonitor.Configuration(serviceName: "pool", threshold: .milliseconds(200), reportDirectory: options.reports)
    configuration.repeatWindow = .zero
    configuration.reportsPerMinute = 1000
    configuration.reportBurst = 1000
    // HANGWATCH_CONCURRENCY_POOL=false turns the pool watch off (the idle mode's baseline).
    do { configuration = try configuration.applying(environment: ProcessInfo.processInfo.environment) } catch {
        fail("the monitor did not start: \(error)", code: 3)
    }
    // FAULTS_LOG_LEVEL=debug: the monitor's debug log on standard error (why a job got no
    // report), for a failure to be explained.
    var logger = Logger(label: "hangwatch") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = ProcessInfo.processInfo.environment["FAULTS_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    let monitor = startedMonitor(configuration, logger: logger) { try $0.startWatchingScopes() }
    // Let a few probes run first (they prepare the pool threads they run on). A pool of another
    // priority gets a first task (its first worker appears; the watch's attach jobs prepare it),
    // as in a service that ran such tasks before.
    if options.priority != .medium { Task.detached(priority: options.priority) {} }
    usleep(600_000)
    if mode == "rest" { runPoolRest(options, monitor: monitor) }
    if mode == "idle" {
        // The pool watch's cost on an idle process: CPU time and context switches of the whole
        // process (every thread, exited ones included) over S seconds.
        var before = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &before)
        usleep(UInt32(options.seconds * 1e6))
        var after = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &after)
        func microseconds(_ time: timeval) -> Int { time.tv_sec * 1_000_000 + time.tv_usec }
        let cpu = microseconds(after.ru_utime) + microseconds(after.ru_stime) - microseconds(before.ru_utime) - microseconds(before.ru_stime)
        monitor.stop()
        print(
            "{\"cpuMicroseconds\":\(cpu),\"voluntarySwitches\":\(after.ru_nvcsw - before.ru_nvcsw),"
                + "\"involuntarySwitches\":\(after.ru_nivcsw - before.ru_nivcsw),\"probes\":\(monitor.statistics.concurrencyPool.probes)}")
        exit(0)
    }
    let log = TaskLog()
    var spawned = monotonicMilliseconds()
    var spawnedUnix = Date().timeIntervalSince1970 * 1000
    let group = DispatchGroup()
    if mode == "hold" {
        let holds = Mutex<[HeldStep]>([])
        let threadName = Mutex("")
        group.enter()
        Task.detached(priority: options.priority) {
            threadName.withLock { $0 = currentThreadName() }
            let steps = await poolJobRoute(seconds: options.seconds)
            holds.withLock { $0 = steps }
            group.leave()
        }
        group.wait()
        let deadline = Date().addingTimeInterval(10)
        while monitor.statistics.reportsWritten + monitor.statistics.writeFailures < 1 && Date() < deadline {
            usleep(20_000)
        }
        usleep(500_000)
        monitor.stop()
        let steps = holds.withLock { $0 }.map(\.json).joined(separator: ",")
        print(
            "{\"holds\":[\(steps)],\"reportsWritten\":\(monitor.statistics.reportsWritten),\"threadName\":\"\(threadName.withLock { $0 })\","
                + "\"hangsDetected\":\(monitor.statistics.hangsDetected),\"starvations\":\(monitor.statistics.concurrencyPool.starvations)}")
        exit(0)
    }
    var spawnWindow = 0.0
    if mode == "block" {
        let count = options.count > 1 ? options.count : 2 * ProcessInfo.processInfo.activeProcessorCount
        let microseconds = UInt32(options.seconds * 1e6)
        // The tasks are spawned one by one: a probe enqueued between two of them would run as
        // soon as the first ones end and cut the starvation in two (and prove the pool had room,
        // making the first ones held jobs). So they are spawned the moment a probe was just sent
        // by a watch that is awake: the next is a threshold away.
        let fresh = awaitFreshProbe(monitor)
        (spawned, spawnedUnix) = (monotonicMilliseconds(), Date().timeIntervalSince1970 * 1000)
        for index in 0..<count {
            group.enter()
            if index % 2 == 0 {
                Task.detached(priority: .medium) {
                    usleep(microseconds)
                    log.record(tid: currentThreadID(), end: monotonicMilliseconds())
                    group.leave()
                }
            } else {
                Task.detached(priority: .medium) {
                    // The writer starts with the read, so every read blocks S seconds wherever it
                    // waited in the queue.
                    var descriptors: [Int32] = [0, 0]
                    guard pipe(&descriptors) == 0 else { fail("pipe failed") }
                    let (readEnd, writeEnd) = (descriptors[0], descriptors[1])
                    Thread {
                        // Named like the pool (Linux names a thread after its creator), not of it.
                        log.recordWriter(tid: currentThreadID())
                        usleep(microseconds)
                        var byte: UInt8 = 1
                        _ = write(writeEnd, &byte, 1)
                        close(writeEnd)
                    }.start()
                    blockInRead(readEnd)
                    log.record(tid: currentThreadID(), end: monotonicMilliseconds())
                    close(readEnd)
                    group.leave()
                }
            }
        }
        spawnWindow = monotonicMilliseconds() - fresh
        // Midway through the first tasks: the threads named like the pool's (the pool's workers, and
        // the writers started from its jobs), which the report must hold (all but the writers).
        usleep(microseconds / 2)
        log.poolThreads = poolThreadIDs()
        group.wait()
        let deadline = Date().addingTimeInterval(10)
        while monitor.statistics.reportsWritten + monitor.statistics.writeFailures < 1 && Date() < deadline {
            usleep(20_000)
        }
        // Long enough for a second report, were one coming.
        usleep(1_000_000)
    } else if mode == "yield" {
        group.enter()
        Task.detached(priority: .medium) {
            let end = Date().addingTimeInterval(options.seconds)
            while Date() < end {
                _ = spinComputing(seconds: 0.001)
                await Task.yield()
            }
            log.record(tid: currentThreadID(), end: monotonicMilliseconds())
            group.leave()
        }
        group.wait()
    } else {
        let end = Date().addingTimeInterval(options.seconds)
        while Date() < end {
            for _ in 0..<ProcessInfo.processInfo.activeProcessorCount {
                group.enter()
                Task.detached(priority: .medium) {
                    _ = spinComputing(seconds: 0.001)
                    log.record(tid: currentThreadID(), end: monotonicMilliseconds())
                    group.leave()
                }
            }
            group.wait()
        }
    }
    monitor.stop()
    let statistics = monitor.statistics
    let tids = log.threadIDs.sorted().map(String.init).joined(separator: ",")
    print(
        "{\"threadIDs\":[\(tids)],\"spawnedMs\":\(spawned),\"spawnWindowMs\":\(spawnWindow),\"spawnedUnixMs\":\(spawnedUnix),\"lastEndMs\":\(log.lastEnd),\"firstEndMs\":\(log.ends.min() ?? 0),\"poolThreadIDs\":\(log.poolThreads),\"writerThreadIDs\":\(log.writers.sorted()),"
            + "\"reportsWritten\":\(statistics.reportsWritten),\"hangsDetected\":\(statistics.hangsDetected),"
            + "\"probes\":\(statistics.concurrencyPool.probes),\"starvations\":\(statistics.concurrencyPool.starvations)}")
    exit(0)
}
