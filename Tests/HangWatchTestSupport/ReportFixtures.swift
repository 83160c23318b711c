import Foundation
import HangWatchReport

/// Reports and directories for tests.
public enum ReportFixtures {
    public static func temporaryDirectory(_ name: String = #function) -> String {
        let base = FileManager.default.temporaryDirectory.path
        let path = base + "/hangwatch-report-tests-\(getpid())-\(UUID().uuidString.prefix(8))-" + name.filter { $0.isLetter }
        return path
    }

    public static func report(
        id: String = "20261122T010203123Z-billing-42-1", service: String = "billing", durationMs: Double = 712.5,
        frames: Int = 3, outcome: HangReport.Outcome = .recovered
    ) -> HangReport {
        let images = [
            HangReport.Image(path: "/srv/billing/billing", buildId: "abcdef0123", base: "0x555500000000", size: 0x10000, isMainExecutable: true),
            HangReport.Image(path: "/usr/lib/x86_64-linux-gnu/libc.so.6", buildId: "1234", base: "0x7f0000000000", size: 0x200000, isMainExecutable: false),
        ]
        let reportFrames = (0..<frames).map { index in
            HangReport.Frame(
                address: "0x5555000010\(index)0", image: index == 0 ? 1 : 0, offset: "0x10\(index)0",
                symbol: index == 1 ? "billing.recompute() -> ()" : nil, file: index == 1 ? "/src/Billing.swift" : nil,
                line: index == 1 ? 42 : nil)
        }
        let start = Date(timeIntervalSince1970: 1_795_000_000.123)
        return HangReport(
            id: id, service: service, host: "host-1", pid: 42,
            process: HangReport.Process(executable: "/srv/billing/billing", startTimeTicks: 12345),
            thread: HangReport.ThreadInfo(tid: 42, name: "billing", isMain: true), startedAt: start,
            detectedAt: start.addingTimeInterval(0.25), endedAt: outcome == .ongoing ? nil : start.addingTimeInterval(durationMs / 1000),
            durationMs: durationMs, thresholdMs: 250, outcome: outcome, activity: "afterWaiting", mode: "kCFRunLoopDefaultMode",
            samples: [
                HangReport.Sample(offsetMs: 251, stack: 0, method: "signal", state: "R", syscall: nil, cpuMs: 0.1, runQueueMs: 0, pauseUs: 12.5, error: nil),
                HangReport.Sample(offsetMs: 301, stack: nil, method: nil, state: "R", syscall: nil, cpuMs: 50, runQueueMs: 0, pauseUs: nil, error: "timeout"),
            ],
            stacks: [HangReport.Stack(frames: Array(0..<frames), truncated: false)],
            heaviestStack: HangReport.HeaviestStack(stack: 0, sampleCount: 1, weightMs: 50, frames: reportFrames),
            frames: reportFrames, images: images, signature: "00112233aabbccdd",
            context: HangReport.Context(
                verdict: .computing, onCpuRatio: 0.98, runQueueRatio: 0.01, blockedIn: nil, threadStates: ["R": 2],
                rssBytes: 1 << 20, loadAverage: [0.5, 0.4, 0.3], cpuCount: 2, watchdogOversleepMs: 0.2,
                debuggerAttached: false, processStopped: false),
            capture: HangReport.CaptureSummary(
                signal: 41, sampleIntervalMs: 50, samplesTaken: 2, samplesDropped: 0, maxFrames: 128, pauseMedianUs: 12.5,
                pauseMaxUs: 12.5, errors: [HangReport.CaptureError(kind: "timeout", count: 1, message: "no answer")],
                reportsSuppressed: 0))
    }
}
