import CoreFoundation
import Foundation
import HangWatch
import HangWatchReport
import Synchronization

/// One line of the results table: a goal's line carries the goal and its verdict, another line
/// may carry a note ("(reference)").
struct FigureResult {
    var number: String
    var name: String
    var value: String
    var goal: String
    var verdict: Scorecard.Verdict?
}

enum Variant: String, CaseIterable {
    case none, floor, naive, hangwatch
    /// HangWatch with the loop-busy histogram (`HANGWATCH_LOOP_HISTOGRAM`).
    case histogram = "hangwatch+histogram"

    /// The variants of the main comparison (figures 1, 2, 2c, 4).
    static let compared: [Variant] = [.none, .floor, .naive, .hangwatch]
}

/// Throughput and CPU of trivial (or light) iterations, each variant measured in turn in every
/// round (the order rotates), medians over rounds: ratios come from one run, side by side.
struct ThroughputFigure {
    enum Workload: String {
        /// CFRunLoopPerformBlock + CFRunLoopWakeUp on a loop thread.
        case blocks = "run-loop blocks"
        /// DispatchQueue.main.async on RunLoop.main (the main thread).
        case mainQueue = "main-queue blocks"
    }

    var iterations: Int
    var rounds: Int
    var workNanoseconds: UInt64
    var workload: Workload = .blocks

    struct Outcome {
        /// Median over rounds of each variant's time per iteration.
        var nanosecondsPerIteration: [Variant: Double]
        /// Median over rounds of (variant / none) and (variant / floor), each ratio taken within one
        /// round from runs made back to back, so slow drift of the machine cancels out.
        var timeRatio: [Variant: Double]
        var cpuRatio: [Variant: Double]
        var timeRatioToFloor: [Variant: Double]
        var cpuRatioToFloor: [Variant: Double]
    }

    func measure(variants: [Variant] = Variant.compared) throws -> Outcome {
        let loop = BenchLoop()
        defer { loop.stop() }
        // The measured loop thread stays on one CPU; watchdogs and everything else use the other.
        let cpuCount = ProcessInfo.processInfo.activeProcessorCount
        let measuredTid = workload == .blocks ? loop.tid : getpid()
        if cpuCount > 1 { ProcessThreads.pin(measuredTid, to: cpuCount - 1) }
        defer { if cpuCount > 1 { ProcessThreads.pin(measuredTid, to: nil) } }
        let runLoop: RunLoop = workload == .blocks ? loop.runLoop : .main
        let cfRunLoop: CFRunLoop = workload == .blocks ? loop.cfRunLoop : CFRunLoopGetMain()
        func run(_ count: Int) -> (wall: Double, cpu: Double) {
            switch workload {
            case .blocks: return loop.run(iterations: count, workNanoseconds: workNanoseconds)
            case .mainQueue: return MainQueueRun.run(iterations: count, workNanoseconds: workNanoseconds)
            }
        }
        let hangWatch = try HangWatchVariant(name: "throughput")
        let withHistogram = try HangWatchVariant(name: "histogram", loopHistogram: true)
        defer {
            hangWatch.removeReports()
            withHistogram.removeReports()
        }
        let baselines: [Variant: Baseline?] = [
            .none: nil, .floor: FloorObserver(), .naive: NaiveMonitor(), .hangwatch: hangWatch, .histogram: withHistogram,
        ]
        var perIteration: [Variant: [Double]] = [:]
        var timeRatios: [Variant: [Double]] = [:], cpuRatios: [Variant: [Double]] = [:]
        var timeToFloor: [Variant: [Double]] = [:], cpuToFloor: [Variant: [Double]] = [:]
        for round in 0..<rounds {
            var wall: [Variant: Double] = [:], cpu: [Variant: Double] = [:]
            let order = variants.indices.map { variants[($0 + round) % variants.count] }
            for variant in order {
                let baseline = baselines[variant] ?? nil
                baseline?.attach(to: runLoop, cfRunLoop)
                _ = run(max(500, iterations / 20))
                let result = run(iterations)
                baseline?.detach()
                wall[variant] = result.wall
                cpu[variant] = result.cpu
                perIteration[variant, default: []].append(result.wall / Double(iterations) * 1e9)
            }
            for variant in variants {
                if let none = wall[.none] {
                    timeRatios[variant, default: []].append(wall[variant]! / none)
                    cpuRatios[variant, default: []].append(cpu[variant]! / cpu[.none]!)
                }
                if let floor = wall[.floor] {
                    timeToFloor[variant, default: []].append(wall[variant]! / floor)
                    cpuToFloor[variant, default: []].append(cpu[variant]! / cpu[.floor]!)
                }
            }
        }
        func medians(_ values: [Variant: [Double]]) -> [Variant: Double] { values.mapValues(Statistics.median) }
        return Outcome(
            nanosecondsPerIteration: medians(perIteration), timeRatio: medians(timeRatios), cpuRatio: medians(cpuRatios),
            timeRatioToFloor: medians(timeToFloor), cpuRatioToFloor: medians(cpuToFloor))
    }
}

/// Recursion to a chosen depth before hanging, so captures walk stacks of known depth. The hang
/// itself watches the clock and records every gap in its own progress longer than `gapNanoseconds`:
/// the pauses as the hung thread lived them (signal delivery, handler, any preemption after it).
@inline(never)
func hangAtDepth(_ depth: Int, milliseconds: Int, gaps: GapRecorder) -> UInt64 {
    if depth > 0 {
        let result = hangAtDepth(depth - 1, milliseconds: milliseconds, gaps: gaps)
        blackHole(result)
        return result &+ 1
    }
    var previous = DispatchTime.now().uptimeNanoseconds
    let end = previous + UInt64(milliseconds) * 1_000_000
    while previous < end {
        let now = DispatchTime.now().uptimeNanoseconds
        if now - previous > gaps.thresholdNanoseconds { gaps.record(now - previous) }
        previous = now
    }
    return 0
}

/// Gaps a spinning thread saw in its own progress.
final class GapRecorder: @unchecked Sendable {
    let thresholdNanoseconds: UInt64
    private(set) var gaps: [UInt64] = []
    init(thresholdNanoseconds: UInt64) {
        self.thresholdNanoseconds = thresholdNanoseconds
        gaps.reserveCapacity(10_000)
    }
    func record(_ gap: UInt64) { if gaps.count < 10_000 { gaps.append(gap) } }
}

/// The pause of the hung thread per signal capture, from the handler's own entry and exit times,
/// for stacks of several depths.
struct CapturePauseFigure {
    var hangMilliseconds: Int
    /// Pin the monitored thread and the watchdog to the same CPU: the watchdog's wake-up then
    /// competes with the handler for that CPU.
    var sameCPU = false
    /// Hang in an async function with this many async callers (on an actor whose executor is the
    /// loop's thread) instead of a plain call chain of `depth`.
    var asyncCallers: Int?

    struct Outcome {
        var frames: Int
        /// The handler's own measurement (entry to publication), per capture.
        var medianMicroseconds: Double
        var p90Microseconds: Double
        var samples: Int
        /// The longest gaps the hung thread saw, one per capture: what it really lost.
        var observedMedianMicroseconds: Double
        var observedP90Microseconds: Double
        /// The watchdog's CPU time during the hang, per sample.
        var watchdogMicrosecondsPerSample: Double
        /// Of `frames`, the async callers read from the context chain.
        var asyncFrames = 0
    }

    /// The largest `count` gaps a thread sees spinning as long, unmonitored: the machine's own noise.
    func baselineGaps(count: Int) -> [Double] {
        let loop = BenchLoop()
        defer { loop.stop() }
        let gaps = GapRecorder(thresholdNanoseconds: 1500)
        loop.sync { _ = hangAtDepth(38, milliseconds: hangMilliseconds, gaps: gaps) }
        return gaps.gaps.sorted(by: >).prefix(count).map { Double($0) / 1000 }
    }

    func measure(depths: [Int]) throws -> [Outcome] {
        let loop = BenchLoop()
        defer { loop.stop() }
        var results: [Outcome] = []
        for depth in depths {
            let variant = try HangWatchVariant(threshold: .milliseconds(100), name: "pause-\(depth)")
            defer { variant.removeReports() }
            variant.attach(to: loop)
            var watchdogs = ProcessThreads.tids(named: "hangwatch-wdog")
            for _ in 0..<100 where watchdogs.isEmpty {
                usleep(10_000)
                watchdogs = ProcessThreads.tids(named: "hangwatch-wdog")
            }
            if sameCPU {
                ProcessThreads.pin(loop.tid, to: 0)
                for watchdog in watchdogs { ProcessThreads.pin(watchdog, to: 0) }
            }
            let gaps = GapRecorder(thresholdNanoseconds: 1500)
            let watchdogCPUBefore = watchdogs.compactMap(ProcessThreads.cpuNanoseconds).reduce(0, +)
            if let asyncCallers {
                LoopActor.hang(on: loop, callers: asyncCallers, milliseconds: hangMilliseconds, gaps: gaps)
            } else {
                loop.sync { _ = hangAtDepth(depth, milliseconds: hangMilliseconds, gaps: gaps) }
            }
            let watchdogCPU = watchdogs.compactMap(ProcessThreads.cpuNanoseconds).reduce(0, +) - watchdogCPUBefore
            if sameCPU {
                ProcessThreads.pin(loop.tid, to: nil)
            }
            variant.detach()
            let reports = variant.reports()
            let pauses = reports.flatMap { $0.samples.compactMap(\.pauseUs) }
            let frames = reports.flatMap { report in report.samples.compactMap { $0.stack.map { report.stacks[$0].frames.count } } }
            let asyncFrames = reports.flatMap { report in
                report.samples.compactMap { $0.stack.map { report.stacks[$0].frames.filter { report.frames[$0].async == true }.count } }
            }
            // Each capture leaves one gap; take the largest as many gaps as there were captures.
            let observed = gaps.gaps.sorted(by: >).prefix(pauses.count).map { Double($0) / 1000 }
            results.append(Outcome(
                frames: Int(Statistics.median(frames.map(Double.init))), medianMicroseconds: Statistics.median(pauses),
                p90Microseconds: Statistics.percentile(pauses, 0.9), samples: pauses.count,
                observedMedianMicroseconds: Statistics.median(Array(observed)),
                observedP90Microseconds: Statistics.percentile(Array(observed), 0.9),
                watchdogMicrosecondsPerSample: Double(watchdogCPU) / 1000 / Double(max(1, pauses.count)),
                asyncFrames: Int(Statistics.median(asyncFrames.map(Double.init)))))
        }
        return results
    }
}

/// How long after the threshold a hang is detected: the report's detection time minus (the real
/// start of the busy period + the threshold), over many injected hangs.
struct DetectionDelayFigure {
    var hangs: Int
    var threshold: Duration = .milliseconds(50)
    var hangMilliseconds = 90
    /// Whether the cooperative pool is starved, again and again, while the loop hangs: the pool
    /// watch's captures of every pool thread run on the watchdog thread, between the loop's steps.
    var starvingPool = false
    /// Thread dumps asked for meanwhile (`hangwatch dump`'s request, 4 at a time), spread over the
    /// run: each is served or refused on the watchdog thread, between the loop's steps.
    var dumps = 0
    /// Whether to wait (up to a minute) for the monitor to remove the answers nobody took.
    var awaitLeftovers = true

    /// What the dump requests came to: answered with a dump, refused (with a reason), unanswered.
    struct DumpAnswers {
        var served = 0
        var refused = 0
        var unanswered = 0
        var leftAfterAMinute: Int?
    }

    /// The delays past the threshold, ms, how many pool starvations were reported meanwhile, and
    /// what the dump requests came to.
    func measure() throws -> (delays: [Double], poolStarvations: Int, dumps: DumpAnswers) {
        let loop = BenchLoop()
        defer { loop.stop() }
        let variant = try HangWatchVariant(
            threshold: threshold, name: starvingPool ? "detection-starved" : dumps > 0 ? "detection-dumps" : "detection")
        defer { variant.removeReports() }
        variant.attach(to: loop)
        let starver = starvingPool ? PoolStarver() : nil
        defer { starver?.stop() }
        final class Starts: @unchecked Sendable { var values: [Date] = [] }
        let starts = Starts()
        var nonces: [UInt64] = []
        let batches = (dumps + 3) / 4
        for hang in 0..<hangs {
            if batches > 0, hang % max(1, hangs / batches) == 0, nonces.count < dumps {
                nonces += try DumpAsker.ask(min(4, dumps - nonces.count), directory: variant.directory)
            }
            loop.sync {
                starts.values.append(Date())
                benchWork(nanoseconds: UInt64(hangMilliseconds) * 1_000_000)
            }
            usleep(30_000)
        }
        starver?.stop()
        var answers = DumpAnswers()
        if !nonces.isEmpty {
            answers = DumpAsker.collect(nonces, directory: variant.directory)
        }
        if !nonces.isEmpty && awaitLeftovers {
            // Answers are the CLI's to remove; here nobody takes them: the monitor removes them.
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline, DumpAsker.leftovers(variant.directory) > 0 { usleep(200_000) }
            answers.leftAfterAMinute = DumpAsker.leftovers(variant.directory)
        }
        variant.detach()
        if let starver, starver.episodes == 0 { throw BenchError.setup("the pool starver never blocked the pool") }
        let thresholdSeconds = Double(threshold.components.seconds) + Double(threshold.components.attoseconds) / 1e18
        let all = variant.reports()
        let reports = all.filter { $0.source == "runloop" }.sorted { $0.detectedAt < $1.detectedAt }
        var delays: [Double] = []
        for report in reports {
            // The injected hang that started last before this detection.
            guard let start = starts.values.last(where: { $0 <= report.detectedAt }) else { continue }
            delays.append((report.detectedAt.timeIntervalSince(start) - thresholdSeconds) * 1000)
        }
        return (delays, all.filter { $0.source == "concurrency-pool" }.count, answers)
    }
}

/// Asks this process's monitor for thread dumps as `hangwatch dump` does (the capture signal, its
/// value the dump tag and a nonce; here queued to the process, not to the watchdog's thread), and
/// reads what it answered.
enum DumpAsker {
    static func ask(_ count: Int, directory: String) throws -> [UInt64] {
        let heartbeat = try MonitorHeartbeat.read(path: directory + "/" + MonitorHeartbeat.fileName(pid: getpid()))
        guard heartbeat.captureSignal > 0 else { throw BenchError.setup("the monitor answers no dumps") }
        return (0..<count).map { _ in
            let nonce = UInt64.random(in: 1..<(1 << 48))
            var value = sigval()
            value.sival_ptr = UnsafeMutableRawPointer(bitPattern: UInt((0x4844 as UInt64) << 48 | nonce))
            sigqueue(getpid(), heartbeat.captureSignal, value)
            return nonce
        }
    }

    /// Waits (up to 10 s) for every request's answer or refusal.
    static func collect(_ nonces: [UInt64], directory: String) -> DetectionDelayFigure.DumpAnswers {
        var answers = DetectionDelayFigure.DumpAnswers()
        let deadline = Date().addingTimeInterval(10)
        var pending = nonces
        while !pending.isEmpty && Date() < deadline {
            pending.removeAll { nonce in
                if access(directory + "/.dump-\(nonce).json", F_OK) == 0 { answers.served += 1; return true }
                if access(directory + "/.dump-\(nonce).refused", F_OK) == 0 { answers.refused += 1; return true }
                return false
            }
            usleep(20_000)
        }
        answers.unanswered = pending.count
        return answers
    }

    static func leftovers(_ directory: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix(".dump-") }.count
    }
}

/// Starves the cooperative pool over and over: one task per pool thread (one per CPU), each
/// blocking its thread in `usleep` for `blockMilliseconds`, then letting it go for
/// `restMilliseconds`. Each episode is a starvation the pool watch captures every pool thread for
/// (blocked threads are walked from `/proc`, the costliest capture).
final class PoolStarver: @unchecked Sendable {
    private let stopRequested = Atomic<Bool>(false)
    private let blocked = Atomic<Int>(0)
    private let done = DispatchGroup()

    /// Blocking episodes started so far, over all tasks.
    var episodes: Int { blocked.load(ordering: .relaxed) }

    init(blockMilliseconds: Int = 300, restMilliseconds: Int = 100) {
        for _ in 0..<ProcessInfo.processInfo.activeProcessorCount {
            done.enter()
            Task.detached { [self] in
                while !stopRequested.load(ordering: .relaxed) {
                    blocked.add(1, ordering: .relaxed)
                    usleep(useconds_t(blockMilliseconds * 1000))
                    try? await Task.sleep(for: .milliseconds(restMilliseconds))
                }
                done.leave()
            }
        }
    }

    func stop() {
        guard !stopRequested.exchange(true, ordering: .relaxed) else { return }
        done.wait()
    }
}
