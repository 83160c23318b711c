import Foundation
import HangWatchReport

/// Hand-made reports whose samples have known stacks (innermost frame first) and offsets.
public enum StackReports {
    public static func report(
        service: String = "billing", durationMs: Double, samples: [(offsetMs: Double, stack: [String])]
    ) -> HangReport {
        var frames: [HangReport.Frame] = []
        var frameIndex: [String: Int] = [:]
        var stacks: [HangReport.Stack] = []
        var stackIndex: [[String]: Int] = [:]
        var reportSamples: [HangReport.Sample] = []
        for sample in samples {
            if stackIndex[sample.stack] == nil {
                let indices = sample.stack.map { name -> Int in
                    if let known = frameIndex[name] { return known }
                    frames.append(
                        HangReport.Frame(
                            address: "0x" + String(0x1000 + frames.count * 16, radix: 16), image: 0,
                            offset: "0x" + String(frames.count * 16, radix: 16), symbol: name, file: "/src/\(service).swift",
                            line: frames.count + 1))
                    frameIndex[name] = frames.count - 1
                    return frames.count - 1
                }
                stacks.append(HangReport.Stack(frames: indices, truncated: false))
                stackIndex[sample.stack] = stacks.count - 1
            }
            reportSamples.append(
                HangReport.Sample(
                    offsetMs: sample.offsetMs, stack: sample.stack.isEmpty ? nil : stackIndex[sample.stack], method: "signal",
                    state: "R", syscall: nil, cpuMs: nil, runQueueMs: nil, pauseUs: nil, error: sample.stack.isEmpty ? "timeout" : nil))
        }
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        let heaviest = stacks.first.map { HangReport.HeaviestStack(stack: 0, sampleCount: 1, weightMs: 1, frames: $0.frames.map { frames[$0] }) }
        return HangReport(
            id: "20261122T010203000Z-\(service)-1-1", service: service, host: "h", pid: 1,
            process: .init(executable: "/srv/\(service)", startTimeTicks: 0), thread: .init(tid: 1, name: nil, isMain: true),
            startedAt: start, detectedAt: start, endedAt: start.addingTimeInterval(durationMs / 1000), durationMs: durationMs,
            thresholdMs: 250, outcome: .recovered, activity: "afterWaiting", mode: nil, samples: reportSamples, stacks: stacks,
            heaviestStack: heaviest, frames: frames,
            images: [HangReport.Image(path: "/srv/\(service)", buildId: "ab", base: "0x1000", size: 0x1000, isMainExecutable: true)],
            signature: "0",
            context: .init(
                verdict: .computing, onCpuRatio: 1, runQueueRatio: 0, blockedIn: nil, threadStates: [:], rssBytes: nil,
                loadAverage: nil, cpuCount: 1, watchdogOversleepMs: 0, debuggerAttached: false, processStopped: false),
            capture: .init(
                signal: 41, sampleIntervalMs: 50, samplesTaken: samples.count, samplesDropped: 0, maxFrames: 128,
                pauseMedianUs: nil, pauseMaxUs: nil, errors: [], reportsSuppressed: 0))
    }

    /// 250 ms in `parse` under `load`, then 100 ms in `render`, then a sample without a stack.
    public static var twoStacks: HangReport {
        report(
            durationMs: 500,
            samples: [
                (250, ["billing.Parser.parse()", "billing.load()", "main"]),
                (300, ["billing.Parser.parse()", "billing.load()", "main"]),
                (400, ["billing.render(_:)", "main"]),
                (450, []),
            ])
    }
}
