#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A short human summary of a report: what hung, for how long, why, and the heaviest stack.
/// Lines fit an 80-column terminal.
public struct HangReportSummary: Sendable {
    /// Frames of the heaviest stack to show.
    public var maxFrames: Int

    public init(maxFrames: Int = 12) {
        self.maxFrames = maxFrames
    }

    /// `line` within `width` characters (cut and marked `…`).
    static func fitted(_ line: String, width: Int) -> String {
        line.count <= width ? line : String(line.prefix(width - 1)) + "…"
    }

    public func render(_ report: HangReport) -> String {
        var lines: [String] = []
        let thread = report.thread.name.map { "\($0) (tid \(report.thread.tid))" } ?? "tid \(report.thread.tid)"
        lines.append("hang \(report.id)")
        lines.append("  \(report.service), pid \(report.pid), thread \(thread)")
        var timing = "  started \(ReportTimestamp.format(report.startedAt)), "
        timing += "\(Self.milliseconds(report.durationMs)) (threshold \(Self.milliseconds(report.thresholdMs)))"
        lines.append(timing)
        var state = "  \(report.outcome.rawValue), stuck after \(report.activity)"
        if let mode = report.mode { state += " in \(mode)" }
        lines.append(state)
        lines.append("  verdict: \(Self.verdictLine(report))")
        if let labels = report.labels, !labels.isEmpty {
            let text = labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
            lines.append(Self.fitted("  labels: " + text, width: 80))
        }
        if let repeats = report.repeats {
            lines.append("  repeated \(repeats.count) more times, \(Self.milliseconds(repeats.totalDurationMs)) in all")
        }
        if !report.capture.errors.isEmpty {
            let errors = report.capture.errors.map { "\($0.kind) x\($0.count)" }.joined(separator: ", ")
            lines.append("  capture problems: \(errors)")
        }
        guard let heaviest = report.heaviestStack else {
            lines.append("  no stack was captured")
            return lines.joined(separator: "\n")
        }
        lines.append(
            "  heaviest stack (\(heaviest.sampleCount) of \(report.samples.count) samples, \(Self.milliseconds(heaviest.weightMs))):"
        )
        for (index, frame) in heaviest.frames.prefix(maxFrames).enumerated() {
            lines.append("    " + Self.frameLine(index: index, frame: frame, images: report.images))
        }
        if heaviest.frames.count > maxFrames {
            lines.append("    ... \(heaviest.frames.count - maxFrames) more frames")
        }
        return lines.joined(separator: "\n")
    }

    /// One line that explains the hang: computing, blocked in a call, starved, stopped. For a
    /// report of several threads (a starved `concurrency-pool`), how many were held and how.
    public static func verdictLine(_ report: HangReport) -> String {
        guard let threads = report.threads, !threads.isEmpty else { return threadVerdictLine(report) }
        var counts: [String: Int] = [:]
        for thread in threads { counts[thread.verdict, default: 0] += 1 }
        let idle = counts.removeValue(forKey: HangReport.ThreadVerdict.idle.rawValue) ?? 0
        let held = counts.values.reduce(0, +)
        let kinds = counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        var line = "pool starved: \(held) of \(threads.count) threads held" + (kinds.isEmpty ? "" : " (\(kinds))")
        if idle > 0 { line += ", \(idle) idle" }
        if let call = report.context.blockedIn { line += "; mostly in \(call)" }
        return line
    }

    private static func threadVerdictLine(_ report: HangReport) -> String {
        let context = report.context
        let onCPU = context.onCpuRatio.map { " (on CPU \(percent($0)))" } ?? ""
        switch context.verdict {
        case .computing:
            return "computing" + onCPU
        case .blocked:
            return "blocked" + (context.blockedIn.map { " in \($0)" } ?? "") + onCPU
        case .starved:
            let queue = context.runQueueRatio.map { ", waiting for a CPU \(percent($0)) of the time" } ?? ""
            return "starved of CPU" + queue
        case .throttled:
            let limit = context.cpuLimit.map { " (\(cores($0.cores)) CPU, \($0.source.hasPrefix("cgroup v2") ? "cgroup v2" : "cgroup v1") \($0.path))" } ?? ""
            let held = context.throttledMs.map { " held it back \(milliseconds($0)) of the \(milliseconds(report.durationMs))" } ?? ""
            return "throttled: its cgroup's CPU limit\(limit)\(held)"
        case .paging:
            let faults = context.majorFaults.map { "\($0) major page faults" } ?? "major page faults"
            let stall = context.memoryStallMs.map { ", stalled on memory \(milliseconds($0))" + (context.memoryPressureSource.map { " (\($0))" } ?? "") } ?? ""
            return "paging: waited for pages to be read in (\(faults)\(stall))"
        case .stopped:
            guard let stopped = context.stoppedMs else {
                return "process stopped (watchdog woke \(milliseconds(context.watchdogOversleepMs)) late)"
            }
            let by = context.stoppedBy.map { " by the \($0 == "SIGSTOP" ? "signal SIGSTOP" : $0)" } ?? ""
            let busy = context.busyMs.map { ", busy \(milliseconds($0))" } ?? ""
            return "process stopped\(by) for \(milliseconds(stopped))\(busy)"
        case .debugger:
            return "debugger attached: not counted as a hang"
        case .unknown:
            return "unknown (no samples)"
        case .deadlocked:
            let cycle = report.waitsFor?.deadlock.map { " (threads " + $0.map(String.init).joined(separator: " → ") + ")" } ?? ""
            return "DEADLOCKED: waits in a cycle that never ends by itself" + cycle
        }
    }

    static func frameLine(index: Int, frame: HangReport.Frame, images: [HangReport.Image]) -> String {
        let number = { $0.count >= 4 ? String($0.prefix(4)) : $0 + String(repeating: " ", count: 4 - $0.count) }("#\(index)")
        var text: String
        if let symbol = frame.symbol {
            text = SymbolName.short(symbol)
        } else if let image = frame.image(in: images) {
            text = StackSignature.baseName(image.path) + "+" + (frame.offset ?? frame.address)
        } else {
            text = frame.address
        }
        if let file = frame.file {
            let location = StackSignature.baseName(file) + (frame.line.map { ":\($0)" } ?? "")
            text += " (\(location))"
        }
        let limit = 72  // 80 columns minus the indent and the frame number
        if text.count > limit { text = String(text.prefix(limit - 3)) + "..." }
        return number + text
    }

    // A report is read from a file: its numbers may be anything JSON allows (1e308, -1e308), and
    // converting those to Int would trap.
    static func milliseconds(_ value: Double) -> String {
        value.magnitude >= 10_000 ? String(printf: "%.1f s", value / 1000) : "\(Int(value.rounded())) ms"
    }

    /// `0.2`, `1.5`, `2`: a CPU limit in cores.
    @_spi(Internal) public static func cores(_ value: Double) -> String {
        guard value.isFinite, value.magnitude < 1e6 else { return String(printf: "%.3g", value) }
        let text = String(printf: "%.2f", value)
        return String(text.reversed().drop(while: { $0 == "0" }).drop(while: { $0 == "." }).reversed())
    }

    static func percent(_ ratio: Double) -> String {
        let value = (ratio * 100).rounded()
        return value.magnitude < 1_000_000 ? "\(Int(value))%" : String(printf: "%.3g%%", value)
    }
}
