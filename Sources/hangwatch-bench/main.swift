import Foundation
import HangWatch

// hangwatch-bench: what HangWatch costs the service it watches, measured side by side with no
// monitor, the floor (bare run-loop observers) and the naive design, in one run; each figure
// judged against its goal (Goals.swift).
//
//   hangwatch-bench [--quick] [--figures 1,5,...] [--skip 4,H2,...] [--ci] [--markdown FILE]   (release builds: make bench)
//   hangwatch-bench --goals-markdown      (docs/performance.md's table of goals)
//
// Exit status: 0 every goal judged was met (or missed within its noise); 1 a goal was missed
// beyond its noise, or a figure asked for could not run (valgrind, wrk or a tool missing) and was
// not skipped by name (--skip); 2 usage.

let arguments = CommandLine.arguments

if let index = arguments.firstIndex(of: "--valgrind-child"), index + 2 < arguments.count,
    let variant = Variant(rawValue: arguments[index + 1]), let count = Int(arguments[index + 2])
{
    try ValgrindFigure.child(variant: variant, iterations: count)
}

if let index = arguments.firstIndex(of: "--labels-child"), index + 2 < arguments.count, let calls = Int(arguments[index + 2]) {
    LabelsFigure.child(mode: arguments[index + 1], calls: calls)
}

if let index = arguments.firstIndex(of: "--tasks-child"), index + 2 < arguments.count, let tasks = Int(arguments[index + 1]),
    let dumps = Int(arguments[index + 2])
{
    try TaskDumpFigure.child(tasks: tasks, dumps: dumps)
}

func usage(_ message: String) -> Never {
    FileHandle.standardError.write(Data("hangwatch-bench: \(message)\n".utf8))
    exit(2)
}

/// Every argument is a flag below or the value after one: anything else is a usage error, not a
/// full run started by a typo (`--help` included).
let valued: Set<String> = ["--figures", "--skip", "--markdown"]
let flags: Set<String> = ["--quick", "--ci", "--goals-markdown"]
var position = 1
while position < arguments.count {
    let argument = arguments[position]
    if valued.contains(argument) {
        position += 2
    } else if flags.contains(argument) {
        position += 1
    } else {
        usage(
            "unknown argument \(argument)\nusage: hangwatch-bench [--quick] [--ci] [--figures 1,5,...] [--skip 4,H2,...] [--markdown FILE] | --goals-markdown")
    }
}

if arguments.contains("--goals-markdown") {
    print(Goal.markdown, terminator: "")
    exit(0)
}

let quick = arguments.contains("--quick")
#if DEBUG
if !quick {
    usage("build with -c release (make bench); debug numbers mean nothing")
}
#endif

/// The comma-separated list after `flag`, if the flag is there.
func list(after flag: String) -> [String]? {
    guard let index = arguments.firstIndex(of: flag) else { return nil }
    guard index + 1 < arguments.count, !arguments[index + 1].hasPrefix("--") else { usage("\(flag) needs a comma-separated list") }
    return arguments[index + 1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
}
let known = "figures: \(Goal.figures.joined(separator: ", ")); goals: the ids `--goals-markdown` lists"
/// `--figures 1,5`: only these figures; `--ci`: the quick ones whose goals are ratios measured in one run.
var selected: Set<String>? = list(after: "--figures").map(Set.init)
if arguments.contains("--ci") { selected = (selected ?? Set(Goal.quickFigures)).intersection(Goal.quickFigures) }
for figure in selected ?? [] where !Goal.figures.contains(figure) { usage("no figure \(figure) (\(known))") }
/// `--skip 4,19-labels-allocations`: figures or single goals left out on purpose (a figure that
/// cannot run otherwise fails the run).
let skips = Set(list(after: "--skip") ?? [])
for name in skips where !Goal.figures.contains(name) && Goal.named(name) == nil { usage("--skip: no figure or goal \(name) (\(known))") }
let markdownPath: String? = arguments.firstIndex(of: "--markdown").map { index in
    guard index + 1 < arguments.count else { usage("--markdown needs a file") }
    return arguments[index + 1]
}

func ratio(_ value: Double?, _ base: Double?) -> Double {
    guard let value, let base, base > 0 else { return .nan }
    return value / base
}
func format(_ value: Double, _ digits: Int = 3) -> String { String(format: "%.\(digits)f", value) }

var card = Scorecard(selected: selected, skips: skips)
var results: [FigureResult] = []

/// A measured line without a goal.
@MainActor func add(_ number: String, _ name: String, _ value: String, _ note: String = "") {
    results.append(FigureResult(number: number, name: name, value: value, goal: note, verdict: nil))
    FileHandle.standardError.write(Data("  \(number) \(name): \(value)\n".utf8))
}

/// A measured line judged against goal `id`; `shown` is the value as the table prints it.
@MainActor func add(_ number: String, _ name: String, _ shown: String, goal id: String, _ value: Double) {
    let verdict = card.judge(id, value, shown: shown)
    let goal = Goal.named(id)!
    results.append(FigureResult(number: number, name: name, value: shown, goal: goal.boundText, verdict: verdict))
    FileHandle.standardError.write(Data("  \(number) \(name): \(shown) (\(id): \(verdict.map(\.mark) ?? "skipped"))\n".utf8))
}

/// Runs figure `key` if it was asked for and not skipped; an error thrown by it (a tool missing,
/// a set-up that failed) makes it a figure that could not run.
@MainActor func figure(_ key: String, _ body: () throws -> Void) {
    precondition(Goal.figures.contains(key), "figure \(key) is not in Goal.figures")
    guard card.wanted(key) else { return }
    guard !card.isSkipped(key) else {
        card.skip(key)
        return
    }
    do {
        try body()
    } catch {
        card.couldNotMeasure(key, reason: "\(error)")
        FileHandle.standardError.write(Data("  \(key): could not run: \(error)\n".utf8))
    }
}

let rounds = quick ? 3 : 21
let iterations = quick ? 20_000 : 60_000
let started = Date()
print("hangwatch-bench: \(ProcessInfo.processInfo.activeProcessorCount) CPUs, \(rounds) rounds per ratio\n")

// 1, 2: trivial iterations, two workloads.
figure("1") {
    for workload in [ThroughputFigure.Workload.blocks, .mainQueue] {
        let outcome = try ThroughputFigure(iterations: iterations, rounds: rounds, workNanoseconds: 0, workload: workload).measure()
        let perIteration = Variant.compared.map { "\($0.rawValue) \(format(outcome.nanosecondsPerIteration[$0]!, 0))" }
        add("1", "\(workload.rawValue): ns per iteration", perIteration.joined(separator: ", "))
        let id = workload == .blocks ? "blocks" : "main-queue"
        let time = outcome.timeRatio, cpu = outcome.cpuRatio
        add("1", "\(workload.rawValue), time: HangWatch / none", format(time[.hangwatch]!), goal: "1-\(id)-time-none", time[.hangwatch]!)
        add("1", "\(workload.rawValue), time: HangWatch / floor", format(outcome.timeRatioToFloor[.hangwatch]!),
            goal: "1-\(id)-time-floor", outcome.timeRatioToFloor[.hangwatch]!)
        add("1", "\(workload.rawValue), time: floor / none", format(time[.floor]!), "(reference)")
        add("1", "\(workload.rawValue), time: naive / none", format(time[.naive]!), "(reference)")
        add("2", "\(workload.rawValue), CPU: HangWatch / none", format(cpu[.hangwatch]!), goal: "2-\(id)-cpu-none", cpu[.hangwatch]!)
        add("2", "\(workload.rawValue), CPU: HangWatch / floor", format(outcome.cpuRatioToFloor[.hangwatch]!),
            goal: "2-\(id)-cpu-floor", outcome.cpuRatioToFloor[.hangwatch]!)
        add("2", "\(workload.rawValue), CPU: naive / none", format(cpu[.naive]!), "(reference)")
    }
}

// 2b: ~20 us iterations.
figure("2b") {
    let light = try ThroughputFigure(iterations: iterations / 10, rounds: rounds, workNanoseconds: 20_000).measure(variants: [.none, .hangwatch])
    add("2b", "20 us iterations, time: HangWatch / none", format(light.timeRatio[.hangwatch]!), goal: "2b-time-none", light.timeRatio[.hangwatch]!)
    add("2b", "20 us iterations, CPU: HangWatch / none", format(light.cpuRatio[.hangwatch]!), goal: "2b-cpu-none", light.cpuRatio[.hangwatch]!)
}

// 2c, 4: exact counts under valgrind.
figure("4") {
    guard let counts = try ValgrindFigure(iterations: quick ? 2_000 : 20_000).measure(variants: Variant.compared) else {
        throw BenchFailure("valgrind (or objcopy) is not installed: apt-get install valgrind binutils")
    }
    let instructions = counts.instructionsPerIteration
    add("2c", "instructions per iteration (valgrind)", Variant.compared.map { "\($0.rawValue) \(format(instructions[$0]!, 0))" }.joined(separator: ", "))
    // CoreFoundation's observer dispatch costs more instructions than time: the floor itself is
    // ~1.3 x none here. What HangWatch adds over the floor is its own cost.
    add("2c", "instructions: HangWatch / none (floor / none: \(format(ratio(instructions[.floor], instructions[.none]))))",
        format(ratio(instructions[.hangwatch], instructions[.none])), "(reference)")
    let overFloor = ratio(instructions[.hangwatch], instructions[.floor])
    add("2c", "instructions: HangWatch / floor", format(overFloor), goal: "2c-instructions-floor", overFloor)
    let allocations = counts.allocationsPerIteration
    let added = (allocations[.hangwatch] ?? .nan) - (allocations[.none] ?? .nan)
    add("4", "heap allocations per iteration added by HangWatch (memcheck; none: \(format(allocations[.none]!, 2)))", format(added, 3),
        goal: "4-allocations", added)
}

// 3: watchdog wake-ups while the loop sleeps.
figure("3") {
    let seconds = quick ? 2.0 : 10.0
    let wakeups = try IdleWakeupFigure(seconds: seconds).measure()
    add("3", "watchdog context switches in \(Int(seconds)) s of an idle loop", String(wakeups), goal: "3-idle-watchdog-switches", Double(wakeups))
}

// 3b: an idle run-loop service's monitor threads, counted from outside its process, beside the
// same service unmonitored (the whole process's count).
figure("3b") {
    var figure = IdleServiceWakeupFigure(settleSeconds: quick ? 3 : 5, windowSeconds: 10, windows: quick ? 1 : 3)
    figure.monitored = false
    let baseline = try figure.measure()
    figure.monitored = true
    let outcome = try figure.measure()
    let median = { (values: [Int]) in values.sorted()[values.count / 2] }
    let threads = outcome.byThread.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    add(
        "3b", "idle run-loop service, whole process per 10 s, from outside: unmonitored \(baseline.processPerWindow), monitored "
            + "\(outcome.processPerWindow)", "\(median(baseline.processPerWindow)) / \(median(outcome.processPerWindow))", "(reference)")
    add(
        "3b", "idle run-loop service, the monitor's threads' context switches per 10 s, from outside (windows \(outcome.perWindow); "
            + "by thread over all: \(threads))", String(median(outcome.perWindow)), goal: "3b-idle-service-switches",
        Double(median(outcome.perWindow)))
}

// 5: capture pause.
figure("5") {
    let figure = CapturePauseFigure(hangMilliseconds: quick ? 400 : 1500)
    let noise = figure.baselineGaps(count: quick ? 6 : 28)
    for sameCPU in [false, true] {
        var pinned = figure
        pinned.sameCPU = sameCPU
        for pause in try pinned.measure(depths: sameCPU ? [38] : [0, 38, 188]) {
            let name = "capture pause, \(pause.frames) frames\(sameCPU ? ", watchdog on the same CPU" : ""), median (p90)"
            let shown = "\(format(pause.medianMicroseconds, 1)) us (\(format(pause.p90Microseconds, 1)))"
            // The goal's stack: 38 calls deep, about 54 frames with the loop's own.
            if pause.frames >= 40 && pause.frames <= 60 {
                add("5", name, shown, goal: sameCPU ? "5-pause-54-frames-same-cpu" : "5-pause-54-frames", pause.medianMicroseconds)
            } else {
                add("5", name, shown)
            }
            add("5", "  the hung thread's largest gaps, one per capture, median (p90)",
                "\(format(pause.observedMedianMicroseconds, 1)) us (\(format(pause.observedP90Microseconds, 1)))")
            add("5", "  watchdog CPU time per sample", "\(format(pause.watchdogMicrosecondsPerSample, 0)) us")
        }
    }
    // The same with a Swift async function on the stack: its async callers read from the heap.
    var asyncFigure = figure
    asyncFigure.asyncCallers = 32
    for pause in try asyncFigure.measure(depths: [0]) {
        add("5", "capture pause, async: \(pause.frames) frames of which \(pause.asyncFrames) async callers, median (p90)",
            "\(format(pause.medianMicroseconds, 1)) us (\(format(pause.p90Microseconds, 1)))")
    }
    add("5", "  (no monitor: the same spin's largest gaps, median (p90))",
        "\(format(Statistics.median(noise), 1)) us (\(format(Statistics.percentile(noise, 0.9), 1)))")
}

// 6: detection delay.
figure("6") {
    func shown(_ delays: [Double]) -> String {
        "\(format(Statistics.percentile(delays, 0.5), 1)) / \(format(Statistics.percentile(delays, 0.99), 1)) ms"
    }
    let delays = try DetectionDelayFigure(hangs: quick ? 20 : 200).measure().delays
    add("6", "detection delay past the threshold, p50 / p99 (\(delays.count) hangs)", shown(delays), goal: "6-detection-p99",
        Statistics.percentile(delays, 0.99))
    // The same, the cooperative pool starved again and again meanwhile: the pool watch captures
    // every pool thread on the watchdog thread, between the loop's steps.
    var starved = DetectionDelayFigure(hangs: quick ? 20 : 200)
    starved.starvingPool = true
    let (starvedDelays, starvations, _) = try starved.measure()
    add("6", "  the pool starved meanwhile (\(starvations) times), p50 / p99 (\(starvedDelays.count) hangs)", shown(starvedDelays),
        goal: "6-detection-p99-pool-starved", Statistics.percentile(starvedDelays, 0.99))
    // The same, asked for 50 thread dumps meanwhile, 4 at a time (each served or refused on the
    // watchdog thread): every request answered, detection unchanged, no answer left behind.
    var asked = DetectionDelayFigure(hangs: quick ? 20 : 200)
    asked.dumps = 50
    asked.awaitLeftovers = !quick
    let (askedDelays, _, dumps) = try asked.measure()
    add("6", "  50 thread dumps asked meanwhile, 4 at a time, p50 / p99 (\(askedDelays.count) hangs)", shown(askedDelays),
        goal: "6-detection-p99-dumps", Statistics.percentile(askedDelays, 0.99))
    add("6", "  those dumps: served, refused (busy, rate limit), unanswered", "\(dumps.served), \(dumps.refused), \(dumps.unanswered)",
        goal: "6-dumps-unanswered", Double(dumps.unanswered))
    if let left = dumps.leftAfterAMinute {
        add("6", "  dump answers left a minute later (nobody took them)", "\(left)", goal: "6-dump-answers-left", Double(left))
    } else {
        card.leaveOut("6-dump-answers-left", reason: "--quick does not wait the minute")
    }
}

// 7: symbolication.
figure("7") {
    let symbolication = try SymbolicationFigure().measure()
    add("7", "symbolication, \(symbolication.frames)-frame heaviest stack, \(symbolication.samples) samples: cold",
        "\(format(symbolication.coldMilliseconds, 1)) ms")
    add("7", "  warm: images open, another report (median of 10)", "\(format(symbolication.warmMilliseconds, 2)) ms",
        goal: "7-symbolication-warm", symbolication.warmMilliseconds)
    add("7", "  the same report again (median of 9)", "\(format(symbolication.againMilliseconds, 2)) ms")
}

// 8: memory and report size.
figure("8") {
    let seconds = quick ? 3.0 : 60.0
    let memory = try MemoryFigure(longHangSeconds: seconds).measure()
    add("8", "resident memory added by a running monitor (after a \(Int(seconds)) s hang)",
        "\(format(memory.addedResidentBytes / 1_048_576, 2)) MiB", goal: "8-monitor-memory", memory.addedResidentBytes / 1_048_576)
    add("8", "report for a \(Int(seconds)) s hang sampled every 50 ms",
        "\(memory.reportBytes / 1024) KiB, \(memory.samples) of \(memory.samplesTaken) samples kept")
    add("8", "  time to write it (atomic, with fsync), median of 5", "\(format(memory.writeMilliseconds, 2)) ms")
}

// 9: the CLI over a directory of 10,000 reports.
figure("9") {
    let count = quick ? 1_000 : 10_000
    let cli = try CLIFigure(reportCount: count, runs: quick ? 3 : 5).measure()
    add("9", "hangwatch list, \(count) reports of \(cli.reportBytes / 1024) KiB: first run (read, name, index)",
        "\(format(cli.coldList, 2)) s")
    add("9", "  first run without symbolication (--no-symbolicate)", "\(format(cli.coldListRaw, 2)) s")
    add("9", "  hangwatch list, indexed (median of runs)", "\(format(cli.warmList, 3)) s", goal: "9-list-indexed", cli.warmList)
    add("9", "  hangwatch top, indexed (median of runs)", "\(format(cli.warmTop, 3)) s", goal: "9-top-indexed", cli.warmTop)
    add("9", "  hangwatch list after \(cli.newReports) new reports", "\(format(cli.afterNewReports, 3)) s", goal: "9-list-after-new",
        cli.afterNewReports)
}

// Scaling: overhead against iteration rate.
// 10: the optional loop-busy histogram's cost, side by side with HangWatch without it.
figure("10") {
    let outcome = try ThroughputFigure(iterations: iterations, rounds: rounds, workNanoseconds: 0).measure(variants: [.none, .hangwatch, .histogram])
    let time = outcome.timeRatio, cpu = outcome.cpuRatio
    add("10", "loop histogram, trivial iterations: ns per iteration", [Variant.none, .hangwatch, .histogram].map { "\($0.rawValue) \(format(outcome.nanosecondsPerIteration[$0]!, 0))" }.joined(separator: ", "))
    add("10", "loop histogram, time: (HangWatch+histogram) / HangWatch", format(time[.histogram]! / time[.hangwatch]!), "(documented cost)")
    add("10", "loop histogram, time: (HangWatch+histogram) / none", format(time[.histogram]!), "(reference)")
    add("10", "loop histogram, CPU: (HangWatch+histogram) / HangWatch", format(cpu[.histogram]! / cpu[.hangwatch]!), "(documented cost)")
    let light = try ThroughputFigure(iterations: iterations / 10, rounds: rounds, workNanoseconds: 20_000).measure(variants: [.none, .hangwatch, .histogram])
    add("10", "loop histogram, 20 us iterations, time: (HangWatch+histogram) / none", format(light.timeRatio[.histogram]!), "(reference)")
}

// 11: scopes (enterWork / leaveWork around each work item) against the same loop unwatched.
figure("11") {
    let ratios = try ScopeFigure(iterations: iterations * 4, rounds: rounds).measure()
    add("11", "scopes, ns per 0.3 us work item: none / inside enterWork+leaveWork", "\(format(ratios.noneNanoseconds, 0)) / \(format(ratios.scopeNanoseconds, 0))")
    add("11", "scopes, time: with scopes / none (work items of ~0.3 us)", format(ratios.ratio), "(documented cost)")
}

// 12: a serial queue watched by pinging (the main-queue source works the same way).
figure("12") {
    let queue = try QueueFigure(blocks: iterations * 4, rounds: rounds).measure()
    add("12", "serial queue, ns per 0.3 us block: unwatched / watched by ping", "\(format(queue.noneNanoseconds, 0)) / \(format(queue.watchedNanoseconds, 0))")
    add("12", "serial queue, time: watched / unwatched", format(queue.ratio), goal: "12-queue-time", queue.ratio)
    let idle = try PingIdleFigure(seconds: quick ? 2 : 10).measure()
    let periods = (quick ? 2 : 10) / 0.25
    let pingOnly = Double(idle.pingOnly.switches - idle.without.switches) / periods
    let looks = Double(idle.looks.switches - idle.without.switches) / periods
    add("12", "idle queue, 250 ms: switches per period added, ping / ping + looks", "\(format(pingOnly, 1)) / \(format(looks, 1))", "(documented)")
    add("12", "idle queue, process CPU ms per 10 s: unwatched / ping / ping + looks",
        [idle.without.cpu, idle.pingOnly.cpu, idle.looks.cpu].map { format($0 * 10 / (quick ? 2 : 10), 1) }.joined(separator: " / "), "(documented)")
    add("12", "  of which the monitor's own threads: ping / ping + looks",
        [idle.pingOnly.monitorCPU, idle.looks.monitorCPU].map { format($0 * 10 / (quick ? 2 : 10), 1) }.joined(separator: " / "), "(documented)")
}

// 13: a SwiftNIO HTTP server under wrk, its event loop unwatched and watched.
figure("13") {
    // A whole run of this figure can shift on a shared VM: one clean-clone run of fourteen read
    // 0.910, and the same build read 0.988, 1.009 and 1.012 right after. A run that misses beyond
    // the noise is measured again, twice at most, and the goal is judged on the median of the
    // runs: a regression misses in every run.
    var runs: [NIOFigure.Measured] = []
    while true {
        guard let measured = try NIOFigure(pairs: quick ? 8 : 24).measure() else {
            throw BenchFailure("wrk is not installed: apt-get install wrk")
        }
        runs.append(measured)
        let median = Statistics.median(runs.map(\.ratio))
        guard Goal.named("13-nio-throughput")!.missedBeyondNoise(median), runs.count < 3 else { break }
        FileHandle.standardError.write(Data("  13: \(format(measured.ratio)) missed beyond noise: measured again\n".utf8))
    }
    let nio = runs[runs.count - 1]
    if runs.count > 1 {
        add("13", "  runs (a miss beyond noise is measured again): ratios", runs.map { format($0.ratio) }.joined(separator: ", "), "judged: their median")
    }
    add("13", "NIO HTTP server under wrk, requests/s: unwatched / watched", "\(format(nio.unwatched, 0)) / \(format(nio.watched, 0))")
    add("13", "  wrk's own count over the whole run (both)", format(nio.wrkRate, 0), nio.pinned ? "loop on CPU 0, wrk on CPU 1" : "not pinned")
    add("13", "  pairs of half-second windows, ratio: lowest / quartiles / highest",
        "\(format(nio.ratios.min() ?? .nan)) / \(format(Statistics.percentile(nio.ratios, 0.25))) / \(format(Statistics.percentile(nio.ratios, 0.75))) / \(format(nio.ratios.max() ?? .nan))")
    let judged = Statistics.median(runs.map(\.ratio))
    add("13", "NIO HTTP server, throughput: watched / unwatched", format(judged), goal: "13-nio-throughput", judged)
}

// 14: the blocked-thread walk (no signal: from /proc's stack pointer and program counter).
figure("14") {
    let walk = try BlockedUnwindFigure(count: quick ? 100 : 1000).measure()
    add("14", "blocked-thread walk, \(walk.frames) frames: first (rules derived)", "\(format(walk.coldMicroseconds, 1)) us")
    add("14", "  rules cached, prologue method: median / p99",
        "\(format(Statistics.median(walk.prologue), 1)) / \(format(Statistics.percentile(walk.prologue, 0.99), 1)) us",
        "(documented)")
    add("14", "  rules cached, frame-record search alone: median / p99",
        "\(format(Statistics.median(walk.frameRecord), 1)) / \(format(Statistics.percentile(walk.frameRecord, 0.99), 1)) us",
        "(documented)")
}

// 15: the cooperative pool's watch at rest (a probe once per threshold, looks at the pool threads
// every sample interval), the process as a whole.
figure("15") {
    let seconds = quick ? 2.0 : 10.0
    let figure = PoolWatchIdleFigure(seconds: seconds)
    // libdispatch's own 1 s timer (its worker pool's monitor) starts with the first worker thread
    // and stays: started here, it is in both phases (figure 16 does the same).
    let worker = DispatchSemaphore(value: 0)
    DispatchQueue.global().async { worker.signal() }
    worker.wait()
    let off = try figure.measure(pool: false)
    let on = try figure.measure(pool: true)
    add("15", "idle process, \(Int(seconds)) s, pool watch off: voluntary context switches, CPU",
        "\(off.contextSwitches), \(format(off.cpuMilliseconds, 1)) ms")
    add("15", "idle process, \(Int(seconds)) s, pool watch on (at rest: every pool thread idle for a second)",
        "\(on.contextSwitches), \(format(on.cpuMilliseconds, 1)) ms")
    add("15", "  the watch's share per second: context switches, CPU",
        "\(format(Double(on.contextSwitches - off.contextSwitches) / seconds, 1)), "
            + "\(format((on.cpuMilliseconds - off.cpuMilliseconds) / seconds * 1000, 0)) us")
}

// 16: a SwiftNIO group at rest, its loops unwatched and watched (their epoll instances).
figure("16") {
    let seconds = quick ? 2.0 : 10.0
    let figure = NIOIdleFigure(seconds: seconds, loops: 16)
    // libdispatch starts a 1 s timer of its own (its worker pool's monitor) the first time a worker
    // thread is registered, and keeps it for the life of the process; a group's shutdown registers
    // one. Started here, it is in both phases, and the difference is the monitor's alone.
    let worker = DispatchSemaphore(value: 0)
    DispatchQueue.global().async { worker.signal() }
    worker.wait()
    let off = try figure.measure(watched: false)
    let on = try figure.measure(watched: true)
    let loops = figure.loops
    add("16", "idle NIO group of \(loops) loops, \(Int(seconds)) s, unwatched: voluntary context switches, CPU",
        "\(off.atRest.contextSwitches), \(format(off.atRest.cpuMilliseconds, 1)) ms")
    add("16", "  watched, past a minute idle (loops only; epoll instances watched: \(on.exact ? "yes" : "no"))",
        "\(on.atRest.contextSwitches), \(format(on.atRest.cpuMilliseconds, 1)) ms", "(documented)")
    let added = Double(on.atRest.contextSwitches - off.atRest.contextSwitches) * 10 / seconds
    add("16", "  switches added by watching, per 10 s", format(added, 0), goal: "16-idle-nio-switches-added", added)
    add("16", "  watched, first minute idle (io_uring: \(on.ring ? "yes, no looks" : "no, looks"))",
        "\(on.window.contextSwitches), \(format(on.window.cpuMilliseconds, 1)) ms", "(documented)")
    add("16", "  the monitor's threads for the group (was 2 per loop)", "\(on.monitorThreads)", goal: "16-monitor-threads", Double(on.monitorThreads))
}

// 17: EventLoopTicks on the loops: what SwiftNIO's metrics delegate adds to each loop iteration.
figure("17") {
    let ticks = try LoopTicksFigure(calls: quick ? 100_000 : 2_000_000).measure()
    add("17", "EventLoopTicks, per loop iteration: a clock read (two made), the call",
        "\(format(ticks.clock, 1)) ns, \(format(ticks.call, 1)) ns")
    add("17", "  added per loop iteration", "\(format(ticks.perIteration, 0)) ns", "(documented)")
}

// 18: captures by signal cutting blocking calls short (EINTR), for each guard before the signal.
figure("18") {
    for (bursts, contended) in [(1...40, false), (1...40, true), (100...400, false), (100...400, true)] {
        let figure = CutShortFigure(seconds: quick ? 0.3 : 1, rounds: quick ? 1 : 3, bursts: bursts, contended: contended)
        let tallies = try figure.measure()
        let place = contended ? ", the watcher's CPU shared" : ""
        let rates = SignalGuard.allCases.map { format(tallies[$0]!.perSecond, 1) }.joined(separator: " / ")
        add("18", "calls cut short per second, bursts \(bursts.lowerBound)-\(bursts.upperBound) us\(place): look alone / still running / stayed on CPU",
            rates, "(documented)")
        for mode in SignalGuard.allCases {
            let tally = tallies[mode]!
            add("18", "  \(mode): captures by signal, calls cut short (flagged by the handler), per 1000 captures",
                "\(tally.signalCaptures), \(tally.cutShort) (\(tally.flagged)), \(format(tally.perThousandCaptures, 1))")
        }
    }
    let computing = try CutShortFigure(seconds: quick ? 0.3 : 1, rounds: quick ? 1 : 3, bursts: 1...1, contended: true).measureComputing()
    add("18", "a thread computing on a CPU it shares with a busy thread and the watcher, looked at every ms: looks, captures, no stack",
        "\(computing.looks), \(computing.signalCaptures), \(computing.noStack)", "(documented)")
}

// 19: labels on a request path (HangMonitor.withLabels), per call entered and left.
figure("19") {
    let labels = LabelsFigure(calls: quick ? 200_000 : 2_000_000, rounds: rounds).measure()
    add("19", "withLabels, 2 labels, CPU ns per call entered and left: sync (bare body \(format(labels.bareSync, 1)) ns)",
        format(labels.sync, 1), goal: "19-labels-sync", labels.sync)
    add("19", "  async, in a task, body awaited (bare \(format(labels.bareAsync, 1)) ns)", format(labels.async, 1), goal: "19-labels-async", labels.async)
    add("19", "  sync, two nested (both levels)", format(labels.nested, 1), "(documented)")
    add("19", "  reference: an empty async wrapper of the same shape / TaskLocal.withValue", "\(format(labels.emptyWrapper, 1)) / \(format(labels.taskLocal, 1))", "(reference)")
    if let allocations = try LabelsFigure.allocations(calls: quick ? 2_000 : 20_000) {
        let sync = allocations["sync"]! - allocations["none"]!
        let async = allocations["async"]! - allocations["none"]!
        add("19", "  heap allocations per call (memcheck): sync / async", "\(format(sync, 3)) / \(format(async, 3))",
            goal: "19-labels-allocations", max(sync, async))
    } else {
        card.couldNotMeasure("19-labels-allocations", reason: "valgrind (or objcopy) is not installed: apt-get install valgrind binutils")
    }
}

// 20: a blocked hang's wait, looked at with each sample (issue 35): the holder found and walked.
figure("20") {
    let look = try WaitLookFigure(count: quick ? 100 : 1000).measure()
    add("20", "a waiter's sample (/proc walk), first / median / p99",
        "\(format(look.first.sample, 1)) / \(format(Statistics.median(look.sample), 1)) / \(format(Statistics.percentile(look.sample, 0.99), 1)) us")
    add("20", "  its wait: the lock read, the holder (\(look.holderFrames) frames) walked, its own wait: first / median / p99",
        "\(format(look.first.wait, 1)) / \(format(Statistics.median(look.wait), 1)) / \(format(Statistics.percentile(look.wait, 0.99), 1)) us",
        "(documented)")
    let io = try IOWaitLookFigure(count: quick ? 100 : 500).measure()
    add("20b", "an I/O wait (a TCP read, the other end in another process; \(io.processes) processes): looks until it is named, median / p99 / max",
        "\(format(Statistics.median(io.cold), 0)) / \(format(Statistics.percentile(io.cold, 0.99), 0)) / \(format(io.cold.max() ?? 0, 0)) us",
        "(documented: up to a scan's 4 ms part)")
    add("20b", "  looks it took to name the other end, median / max",
        "\(Statistics.median(io.looksToName.map(Double.init))) / \(io.looksToName.max() ?? 0)")
    add("20b", "  the looks after it within the second (scans kept), median / p99",
        "\(format(Statistics.median(io.warm), 1)) / \(format(Statistics.percentile(io.warm, 0.99), 1)) us", goal: "20b-io-look-later",
        Statistics.median(io.warm))
    // 20c: the same on a crowded host (issue 45's goal: 10,000 sockets, a process with 1,000 descriptors).
    let crowded = try IOWaitLookFigure(count: quick ? 100 : 500, crowd: (sockets: 10_000, descriptors: 1_000)).measure()
    add("20c", "  the same, \(crowded.hostTCPSockets) TCP sockets on the host, \(crowded.ownDescriptors) descriptors in the process: looks until named, median / p99 / max",
        "\(format(Statistics.median(crowded.cold), 0)) / \(format(Statistics.percentile(crowded.cold, 0.99), 0)) / \(format(crowded.cold.max() ?? 0, 0)) us",
        "(documented: up to a scan's 4 ms part)")
    add("20c", "    looks it took to name the other end, median / max",
        "\(Statistics.median(crowded.looksToName.map(Double.init))) / \(crowded.looksToName.max() ?? 0)")
    add("20c", "    the looks after it within the second (scans kept), median / p99",
        "\(format(Statistics.median(crowded.warm), 1)) / \(format(Statistics.percentile(crowded.warm, 0.99), 1)) us",
        goal: "20c-io-look-later-crowded", Statistics.median(crowded.warm))
}

// 21: the host agent (the tools' release hangwatchd) while 100 reports a second land in its spool.
figure("21") {
    let storm = try AgentStormFigure(seconds: quick ? 5 : 60).measure()
    add("21", "hangwatchd, \(storm.written) reports at \(storm.rate)/s (\(storm.reportKiB) KiB, \(storm.services) services): CPU, of one CPU",
        "\(format(storm.cpuPercent, 1)) % (\(format(storm.cpuSeconds, 1)) s + \(format(storm.catchUpCPUSeconds, 1)) s / \(format(storm.seconds, 0)) s)",
        goal: "21-agent-cpu", storm.cpuPercent)
    add("21", "  its peak resident memory (VmHWM)", "\(format(storm.peakMiB, 1)) MiB", goal: "21-agent-memory", storm.peakMiB)
    add("21", "  reports counted in hangwatch_hangs_total (written - counted)", "\(storm.counted) (\(storm.written - storm.counted) lost)",
        goal: "21-agent-hangs-lost", Double(storm.written - storm.counted))
    add("21", "  OTLP log records received (written - received)", "\(storm.records) (\(storm.written - storm.records) lost)",
        goal: "21-agent-records-lost", Double(storm.written - storm.records))
    add("21", "  its CPU over the writing alone, share of one CPU", "\(format(storm.cpuSeconds / storm.seconds * 100, 1)) %")
    add("21", "  caught up after the last report was written; its CPU meanwhile", "\(format(storm.catchUpSeconds, 1)) s; \(format(storm.catchUpCPUSeconds, 1)) s")
    add("21", "  dropped: by retention / by export (hangwatch_reports_dropped_total)", "\(storm.droppedByRetention) / \(storm.droppedByExport)")
    add("21", "  log records sent with named frames (the rest deleted by retention before naming)", "\(storm.namedRecords)")
}

// 22: a hang's context: the watchdog's reads of the thread's cgroups and counters, in each place a
// thread can be (the slowest place is judged).
figure("22") {
    var firstLooks: [Double] = []
    var sampleLooks: [Double] = []
    for outcome in try ContextReadFigure(count: quick ? 200 : 2000).measure() {
        let t = outcome.timings
        func shown(_ values: [Double]) -> String {
            "\(format(Statistics.median(values) / 1000, 1)) / \(format(Statistics.percentile(values, 0.99) / 1000, 1)) us"
        }
        add("22", "a thread in \(outcome.place), reading \(outcome.reads): first look at a busy stretch, median / p99", shown(t.edge))
        add("22", "  with each sample (throttled time, freezer state), median / p99", shown(t.look))
        add("22", "  at detection and at the end (and the tracer), median / p99", shown(t.counters))
        add("22", "  once per hang: the limit's walk, the allowed CPUs, median / p99", shown(t.facts))
        firstLooks.append(Statistics.median(t.edge) / 1000)
        sampleLooks.append(Statistics.median(t.look) / 1000)
    }
    let first = firstLooks.max() ?? .nan
    let sample = sampleLooks.max() ?? .nan
    add("22", "the first look at a busy stretch, median, the slowest place", "\(format(first, 1)) us", goal: "22-context-first-look", first)
    add("22", "a sample's look, median, the slowest place", "\(format(sample, 1)) us", goal: "22-context-sample-look", sample)
}

figure("23") { try TaskDumpFigure.addFigures(quick: quick) }

figure("scaling") {
    for (work, label) in [(UInt64(100_000), "10 k"), (10_000, "100 k"), (0, "max")] {
        let count = work == 0 ? iterations : max(2_000, iterations / Int(max(1, work / 1000)))
        let outcome = try ThroughputFigure(iterations: count, rounds: rounds, workNanoseconds: work).measure(variants: [.none, .hangwatch])
        let rate = 1e6 / outcome.nanosecondsPerIteration[.none]!
        add("S", "\(label) iterations/s (measured \(format(rate, 0)) k/s): time HangWatch / none",
            format(outcome.timeRatio[.hangwatch]!))
    }
}

// H1, H2: real Hummingbird 2 and Vapor 4 servers under wrk (the tools' package builds them and
// their bench, `hangwatch-hummingbird-bench`, whose lines go through as they come).
figure("H1") {
    let values = try ServerFigure(arguments: quick ? ["--rounds", "2", "--seconds", "1", "--pairs", "6"] : []).measure()
    add("H1", "Hummingbird 2 server (EventLoopTicks), paired windows: watched / unwatched", values.shown("H1-hummingbird-paired"),
        goal: "H1-hummingbird-paired", try values.value("H1-hummingbird-paired"))
    add("H1", "  the default set-up (a ping at each look)", values.shown("H1-hummingbird-paired-default"),
        goal: "H1-hummingbird-paired-default", try values.value("H1-hummingbird-paired-default"))
}
figure("H2") {
    let values = try ServerFigure(arguments: ["--vapor"] + (quick ? ["--pairs", "6"] : [])).measure()
    add("H2", "Vapor 4 server (default set-up), paired windows: watched / unwatched", values.shown("H2-vapor-paired"),
        goal: "H2-vapor-paired", try values.value("H2-vapor-paired"))
}

print("")
let header = "fig  figure".padding(toLength: 79, withPad: " ", startingAt: 0) + "value".padding(toLength: 34, withPad: " ", startingAt: 0) + "goal"
print(header)
print(String(repeating: "-", count: header.count + 12))
for result in results {
    let mark = result.verdict.map { "  " + $0.mark } ?? ""
    print(result.number.padding(toLength: 5, withPad: " ", startingAt: 0) + result.name.padding(toLength: 74, withPad: " ", startingAt: 0)
        + result.value.padding(toLength: 34, withPad: " ", startingAt: 0) + result.goal + mark)
}
print("\nfinished in \(Int(Date().timeIntervalSince(started))) s\n")
for line in card.summary { print(line) }

if let markdownPath {
    var lines = ["| # | figure | measured | goal |", "|---|---|---|---|"]
    for result in results {
        let mark: String
        switch result.verdict {
        case .met: mark = " ✓"
        case .missedWithinNoise: mark = " ≈ missed within noise"
        case .missed: mark = " ✗ missed"
        case nil: mark = ""
        }
        lines.append("| \(result.number) | \(result.name.trimmingCharacters(in: .whitespaces)) | \(result.value) | \(result.goal + mark) |")
    }
    try (lines.joined(separator: "\n") + "\n").write(toFile: markdownPath, atomically: true, encoding: .utf8)
}

exit(card.passed ? 0 : 1)
