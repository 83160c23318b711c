#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
@_spi(Internal) import HangWatchReport

extension ReportDetail {
    /// What held the thread back from outside its code (schema 1.6), a labelled line each: the
    /// CPU limit and the throttled time, a stop (how long, by what, and the evidence whole: a
    /// proof or an inference), paging. Nothing for a report that says none of it.
    package static func heldBackLines(_ report: HangReport) -> [(name: String, value: String)] {
        let context = report.context
        var lines: [(String, String)] = []
        let from = context.countersFromMs.flatMap { $0 >= 1 ? " (counted from \(Text.duration($0)) into the hang)" : nil } ?? ""
        if context.cpuLimit != nil || context.throttledMs != nil {
            var parts: [String] = []
            if let limit = context.cpuLimit {
                parts.append("limit \(HangReportSummary.cores(limit.cores)) CPU (\(limit.source), \(limit.path))")
            } else {
                parts.append("no limit visible")
            }
            if let throttled = context.throttledMs {
                var text = "throttled \(Text.duration(throttled))"
                if let periods = context.throttledPeriods { text += " in \(periods) period\(periods == 1 ? "" : "s")" }
                if let raw = context.cgroupThrottledMs, raw > throttled + 0.5 {
                    text += " (the cgroup's counter, over all its CPUs: \(Text.duration(raw)))"
                }
                parts.append(text + from)
            }
            lines.append(("cpu", parts.joined(separator: "; ")))
        }
        if let stopped = context.stoppedMs {
            let by = context.stoppedBy.map { " by \($0 == "SIGSTOP" ? "SIGSTOP" : "the " + $0)" } ?? ", cause unknown"
            let busy = context.busyMs.map { ", busy \(Text.duration($0))" } ?? ""
            lines.append(("stopped", "\(Text.duration(stopped))\(by)\(busy)"))
            if let evidence = context.stopEvidence { lines.append(("evidence", evidence)) }
        }
        if context.majorFaults != nil || context.memoryStallMs != nil {
            var parts: [String] = []
            if let faults = context.majorFaults { parts.append("\(faults) major page fault\(faults == 1 ? "" : "s") (pages read in from disk)") }
            if let stall = context.memoryStallMs {
                parts.append("stalled on memory \(Text.duration(stall))" + (context.memoryPressureSource.map { " (\($0 == "system" ? "the whole system's pressure" : $0))" } ?? ""))
            }
            lines.append(("memory", parts.joined(separator: "; ") + from))
        }
        return lines
    }

    /// `(2 CPUs)`, or `(1 CPU of the host's 8)` where the process may use fewer.
    package static func cpuCountText(_ context: HangReport.Context) -> String {
        let count = "\(context.cpuCount) CPU\(context.cpuCount == 1 ? "" : "s")"
        guard let host = context.hostCpuCount, host != context.cpuCount else { return "(\(count))" }
        return "(\(count) of the host's \(host))"
    }
}
