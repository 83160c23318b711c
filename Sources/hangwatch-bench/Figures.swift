import Foundation
import HangWatch
import HangWatchReport

/// One line of the results table.
struct FigureResult {
    var number: String
    var name: String
    var value: String
    var goal: String
    var met: Bool?
}

enum Variant: String, CaseIterable {
    case none, floor, naive, hangwatch
}

/// Throughput and CPU of trivial (or light) iterations, each variant measured in turn in every
/// round (the order rotates), medians over rounds: ratios come from one run, side by side.
struct ThroughputFigure {
    var iterations: Int
    var rounds: Int
    var workNanoseconds: UInt64

    struct Outcome {
        var wall: [Variant: Double]
        var cpu: [Variant: Double]
        var nanosecondsPerIteration: [Variant: Double]
    }

    func measure(variants: [Variant] = Variant.allCases) throws -> Outcome {
        let loop = BenchLoop()
        defer { loop.stop() }
        let hangWatch = try HangWatchVariant(name: "throughput")
        defer { hangWatch.removeReports() }
        let baselines: [Variant: Baseline?] = [
            .none: nil, .floor: FloorObserver(), .naive: NaiveMonitor(), .hangwatch: hangWatch,
        ]
        var wall: [Variant: [Double]] = [:]
        var cpu: [Variant: [Double]] = [:]
        for round in 0..<rounds {
            let order = variants.indices.map { variants[($0 + round) % variants.count] }
            for variant in order {
                let baseline = baselines[variant] ?? nil
                baseline?.attach(to: loop)
                _ = loop.run(iterations: max(1000, iterations / 20), workNanoseconds: workNanoseconds)
                let result = loop.run(iterations: iterations, workNanoseconds: workNanoseconds)
                baseline?.detach()
                wall[variant, default: []].append(result.wall)
                cpu[variant, default: []].append(result.cpu)
            }
        }
        var outcome = Outcome(wall: [:], cpu: [:], nanosecondsPerIteration: [:])
        for variant in variants {
            outcome.wall[variant] = Statistics.median(wall[variant] ?? [])
            outcome.cpu[variant] = Statistics.median(cpu[variant] ?? [])
            outcome.nanosecondsPerIteration[variant] = outcome.wall[variant]! / Double(iterations) * 1e9
        }
        return outcome
    }
}

/// Recursion to a chosen depth before hanging, so captures walk stacks of known depth.
@inline(never)
func hangAtDepth(_ depth: Int, milliseconds: Int) -> UInt64 {
    if depth > 0 {
        let result = hangAtDepth(depth - 1, milliseconds: milliseconds)
        blackHole(result)
        return result &+ 1
    }
    benchWork(nanoseconds: UInt64(milliseconds) * 1_000_000)
    return 0
}

/// The pause of the hung thread per signal capture, from the handler's own entry and exit times,
/// for stacks of several depths.
struct CapturePauseFigure {
    var hangMilliseconds: Int

    /// (frames in the captured stacks, median pause in microseconds, samples) per recursion depth.
    func measure(depths: [Int]) throws -> [(frames: Int, medianMicroseconds: Double, p90Microseconds: Double, samples: Int)] {
        let loop = BenchLoop()
        defer { loop.stop() }
        var results: [(Int, Double, Double, Int)] = []
        for depth in depths {
            let variant = try HangWatchVariant(threshold: .milliseconds(100), name: "pause-\(depth)")
            defer { variant.removeReports() }
            variant.attach(to: loop)
            loop.sync { _ = hangAtDepth(depth, milliseconds: hangMilliseconds) }
            variant.detach()
            let reports = variant.reports()
            let pauses = reports.flatMap { $0.samples.compactMap(\.pauseUs) }
            let frames = reports.flatMap { report in report.samples.compactMap { $0.stack.map { report.stacks[$0].frames.count } } }
            results.append((Int(Statistics.median(frames.map(Double.init))), Statistics.median(pauses),
                            Statistics.percentile(pauses, 0.9), pauses.count))
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

    func measure() throws -> [Double] {
        let loop = BenchLoop()
        defer { loop.stop() }
        let variant = try HangWatchVariant(threshold: threshold, name: "detection")
        defer { variant.removeReports() }
        variant.attach(to: loop)
        final class Starts: @unchecked Sendable { var values: [Date] = [] }
        let starts = Starts()
        for _ in 0..<hangs {
            loop.sync {
                starts.values.append(Date())
                benchWork(nanoseconds: UInt64(hangMilliseconds) * 1_000_000)
            }
            usleep(30_000)
        }
        variant.detach()
        let thresholdSeconds = Double(threshold.components.seconds) + Double(threshold.components.attoseconds) / 1e18
        let reports = variant.reports().sorted { $0.detectedAt < $1.detectedAt }
        var delays: [Double] = []
        for report in reports {
            // The injected hang that started last before this detection.
            guard let start = starts.values.last(where: { $0 <= report.detectedAt }) else { continue }
            delays.append((report.detectedAt.timeIntervalSince(start) - thresholdSeconds) * 1000)
        }
        return delays
    }
}
