import Foundation

// hangwatch-bench: measures what HangWatch costs the service it watches, side by side with no
// monitor, the floor (bare run-loop observers) and the naive design, in one run.
//
//   hangwatch-bench [--quick]     (release builds only: make bench)

let quick = CommandLine.arguments.contains("--quick")
/// `--figures 1,5`: only these figures (by number; 1 also runs 2).
let selectedFigures: Set<String>? = CommandLine.arguments.firstIndex(of: "--figures").flatMap { index in
    index + 1 < CommandLine.arguments.count ? Set(CommandLine.arguments[index + 1].split(separator: ",").map(String.init)) : nil
}
func wanted(_ figure: String) -> Bool { selectedFigures?.contains(figure) ?? true }
#if DEBUG
if !quick {
    FileHandle.standardError.write(Data("hangwatch-bench: build with -c release (make bench); debug numbers mean nothing\n".utf8))
    exit(2)
}
#endif

func ratio(_ value: Double?, _ base: Double?) -> Double {
    guard let value, let base, base > 0 else { return .nan }
    return value / base
}

func format(_ value: Double, _ digits: Int = 3) -> String { String(format: "%.\(digits)f", value) }

var results: [FigureResult] = []
let rounds = quick ? 2 : 7
let iterations = quick ? 20_000 : 200_000

print("hangwatch-bench: \(ProcessInfo.processInfo.activeProcessorCount) CPUs, \(rounds) rounds per figure\n")

// 1, 2: trivial iterations.
if wanted("1") {
let trivial = try ThroughputFigure(iterations: iterations, rounds: rounds, workNanoseconds: 0).measure()
let none = trivial.wall[.none], floor = trivial.wall[.floor], naive = trivial.wall[.naive], hw = trivial.wall[.hangwatch]
print("trivial iteration: none \(format(trivial.nanosecondsPerIteration[.none]!, 0)) ns, floor \(format(trivial.nanosecondsPerIteration[.floor]!, 0)) ns, naive \(format(trivial.nanosecondsPerIteration[.naive]!, 0)) ns, hangwatch \(format(trivial.nanosecondsPerIteration[.hangwatch]!, 0)) ns")
results.append(FigureResult(number: "1", name: "time, trivial iterations: HangWatch / none", value: format(ratio(hw, none)), goal: "<= 1.10", met: ratio(hw, none) <= 1.10))
results.append(FigureResult(number: "1", name: "time, trivial iterations: HangWatch / floor", value: format(ratio(hw, floor)), goal: "<= 1.02", met: ratio(hw, floor) <= 1.02))
results.append(FigureResult(number: "1", name: "time, trivial iterations: naive / none", value: format(ratio(naive, none)), goal: "(reference)", met: nil))
let cpuNone = trivial.cpu[.none], cpuFloor = trivial.cpu[.floor], cpuNaive = trivial.cpu[.naive], cpuHW = trivial.cpu[.hangwatch]
results.append(FigureResult(number: "2", name: "CPU, trivial iterations: HangWatch / none", value: format(ratio(cpuHW, cpuNone)), goal: "<= 1.10", met: ratio(cpuHW, cpuNone) <= 1.10))
results.append(FigureResult(number: "2", name: "CPU, trivial iterations: HangWatch / floor", value: format(ratio(cpuHW, cpuFloor)), goal: "<= 1.02", met: ratio(cpuHW, cpuFloor) <= 1.02))
results.append(FigureResult(number: "2", name: "CPU, trivial iterations: naive / none", value: format(ratio(cpuNaive, cpuNone)), goal: "(reference)", met: nil))

}

// 2b: ~20 us iterations.
if wanted("2b") {
let light = try ThroughputFigure(iterations: iterations / 10, rounds: rounds, workNanoseconds: 20_000).measure(variants: [.none, .hangwatch])
results.append(FigureResult(number: "2b", name: "time, 20 us iterations: HangWatch / none", value: format(ratio(light.wall[.hangwatch], light.wall[.none])), goal: "<= 1.02", met: ratio(light.wall[.hangwatch], light.wall[.none]) <= 1.02))
results.append(FigureResult(number: "2b", name: "CPU, 20 us iterations: HangWatch / none", value: format(ratio(light.cpu[.hangwatch], light.cpu[.none])), goal: "<= 1.02", met: ratio(light.cpu[.hangwatch], light.cpu[.none]) <= 1.02))

}

// 5: capture pause by depth, with the watchdog free to run on the other CPU, and pinned to the
// monitored thread's CPU.
if wanted("5") {
let noise = CapturePauseFigure(hangMilliseconds: quick ? 400 : 1500).baselineGaps(count: quick ? 6 : 28)
results.append(FigureResult(
    number: "5", name: "  (no monitor: the same spin's largest gaps, median (p90))",
    value: "\(format(Statistics.median(noise), 1)) us (\(format(Statistics.percentile(noise, 0.9), 1)))", goal: "", met: nil))
for sameCPU in [false, true] {
for pause in try CapturePauseFigure(hangMilliseconds: quick ? 400 : 1500, sameCPU: sameCPU).measure(depths: sameCPU ? [38] : [0, 38, 188]) {
    results.append(FigureResult(
        number: "5", name: "capture pause, \(pause.frames) frames\(sameCPU ? ", one CPU" : ""), median (p90), \(pause.samples) samples",
        value: "\(format(pause.medianMicroseconds, 1)) us (\(format(pause.p90Microseconds, 1)))",
        goal: pause.frames >= 40 && pause.frames <= 60 ? "<= 15 us" : "", met: pause.frames >= 40 && pause.frames <= 60 ? pause.medianMicroseconds <= 15 : nil))
    results.append(FigureResult(
        number: "5", name: "  as the hung thread saw it (its largest gaps), median (p90)",
        value: "\(format(pause.observedMedianMicroseconds, 1)) us (\(format(pause.observedP90Microseconds, 1))) wd \(format(pause.watchdogMicrosecondsPerSample, 0))",
        goal: pause.frames >= 40 && pause.frames <= 60 ? "<= 15 us" : "", met: pause.frames >= 40 && pause.frames <= 60 ? pause.observedMedianMicroseconds <= 15 : nil))
}
}

}

// 6: detection delay.
if wanted("6") {
let delays = try DetectionDelayFigure(hangs: quick ? 20 : 200).measure()
results.append(FigureResult(
    number: "6", name: "detection delay past the threshold, p50 / p99 (\(delays.count) hangs)",
    value: "\(format(Statistics.percentile(delays, 0.5), 1)) / \(format(Statistics.percentile(delays, 0.99), 1)) ms",
    goal: "p99 <= 10 ms", met: Statistics.percentile(delays, 0.99) <= 10))
}

print("")
let header = "fig  figure" .padding(toLength: 66, withPad: " ", startingAt: 0) + "value".padding(toLength: 22, withPad: " ", startingAt: 0) + "goal"
print(header)
print(String(repeating: "-", count: header.count + 12))
for result in results {
    let mark = result.met.map { $0 ? "  ok" : "  MISSED" } ?? ""
    print(result.number.padding(toLength: 5, withPad: " ", startingAt: 0) + result.name.padding(toLength: 61, withPad: " ", startingAt: 0)
        + result.value.padding(toLength: 22, withPad: " ", startingAt: 0) + result.goal + mark)
}
