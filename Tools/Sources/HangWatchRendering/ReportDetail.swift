#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
@_spi(Internal) import HangWatchReport

/// The text of `hangwatch show`.
package struct ReportDetail {
    package let terminal: Terminal
    /// Frames of each stack shown (the rest are counted).
    package let maxFrames: Int

    package init(terminal: Terminal, maxFrames: Int) {
        self.terminal = terminal
        self.maxFrames = maxFrames
    }

    /// Where the process ran, as `show` says it, a line each for what the report names:
    /// `pod shop/billing-7d9f8-x2x, uid 0c6a…`, `node node-3` and `container app, id 3f2a1b4c5d6e`
    /// (the id cut to 12 digits, as docker and crictl show it; the report holds it whole).
    package static func workloadLines(_ resource: WorkloadIdentity) -> [(String, String)] {
        var lines: [(String, String)] = []
        let pod = [resource.pod, resource.podUID.map { "uid \($0)" }].compactMap { $0 }
        if !pod.isEmpty { lines.append(("pod", pod.joined(separator: ", "))) }
        if let node = resource.nodeName { lines.append(("node", node)) }
        let container = [resource.containerName, resource.containerID.map { "id \($0.prefix(12))" }].compactMap { $0 }
        if !container.isEmpty { lines.append(("container", container.joined(separator: ", "))) }
        return lines
    }

    package func render(_ report: HangReport, path: String) -> String {
        var lines: [String] = []
        let width = terminal.width
        /// A labelled line, cut to the terminal's width unless it must be whole (a path to copy).
        func field(_ name: String, _ value: String, whole: Bool = false) {
            lines.append(terminal.paint(Text.fit(name, 9), .bold) + " " + (whole ? value : Text.clip(value, width - 10)))
        }
        lines.append(terminal.paint("hang \(report.id)", .bold))
        let thread = [report.thread.name, "tid \(report.thread.tid)", report.thread.isMain ? "main" : nil].compactMap { $0 }
        // A process in a pid namespace of its own (a container's) says its pid there; the host's, the
        // agent's, beside it.
        let pid = report.process.hostPid.map { "pid \(report.pid), \($0) on the host" } ?? "pid \(report.pid)"
        field("service", "\(report.service) (\(pid), host \(report.host)), thread \(thread.joined(separator: ", "))")
        if let name = report.thread.name, let role = ThreadNaming.role(of: name) {
            field("thread", role)
        }
        if let release = report.serviceVersion {
            field("release", "\(release.version) (from \(release.source.rawValue))")
        }
        if let resource = report.resource?.bounded() {
            for (name, value) in Self.workloadLines(resource) { field(name, value) }
        }
        let timing = "\(Text.timestamp(report.startedAt)), lasted \(Text.duration(report.durationMs))"
            + (report.outcome == .ongoing ? " so far" : "") + " (threshold \(Text.duration(report.thresholdMs)))"
        field("started", timing)
        switch report.edges {
        case "exact": field("edges", "exact: where the work began and ended")
        case "ping": field("edges", "ping: a lower bound (from when an overdue ping was sent)")
        case "sampled" where report.source == "dispatch-main" || report.source == "dispatch-queue":
            field("edges", "sampled: start from looks \(Text.duration(report.capture.sampleIntervalMs)) apart (to \(Text.duration(report.capture.sampleIntervalMs / 2))), end at a ping's answer")
        case "sampled" where report.source == "nio-eventloop":
            field("edges", "sampled: start by a look (to \(Text.duration(report.thresholdMs / 4))), end at a ping's answer")
        case "sampled": field("edges", "sampled: each edge to \(Text.duration(report.capture.sampleIntervalMs / 2)) (looks \(Text.duration(report.capture.sampleIntervalMs)) apart), or by CPU time")
        default: break
        }
        field("outcome", report.outcome.rawValue)
        if report.source == "pool-job" {
            // The pool watch saw one job on this thread at every look; the edges are looks apart.
            field("stuck", "one job held this pool thread, seen at every look \(Text.duration(report.capture.sampleIntervalMs)) apart")
        } else {
            field("stuck", "after \(report.activity)" + (report.mode.map { " in \($0)" } ?? ""))
        }
        let verdict = HangReportSummary.verdictLine(report)
        field("verdict", terminal.paint(verdict, report.context.verdict == .computing ? .yellow : report.context.verdict == .deadlocked ? .red : .cyan))
        for line in Self.heldBackLines(report) {
            // The evidence is said whole: it is what the verdict rests on.
            field(line.name, line.value, whole: line.name == "evidence")
        }
        if let exit = report.processExit {
            field("exit", "the process \(exit.reason == "gone" ? "died" : "was replaced (pid reused)") mid-hang, last seen \(Text.timestamp(exit.lastSeenAt))")
        }
        if let repeats = report.repeats {
            field("repeats", "\(repeats.count) more, \(Text.duration(repeats.totalDurationMs)) in all, longest \(Text.duration(repeats.maxDurationMs)), last \(Text.timestamp(repeats.lastAt))")
        }
        if let labels = report.labels, !labels.isEmpty {
            let omitted = report.labelsOmitted.map { $0 > 0 ? " (\($0) more left out)" : "" } ?? ""
            field("labels", labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ") + omitted)
        }
        if let queued = report.queuedTasks { field("queued", Self.queuedLine(queued, report: report)) }
        if let before = report.before {
            field("lead-up", Self.leadUpLine(before))
            if let wait = Self.leadUpWaitLine(before) { field("", wait) }
            field("", before.reading + " (a block per \(Text.duration(Double(Self.leadUpGroup(before)) * before.bucketMs)))")
            if let misses = before.nearMisses, !misses.isEmpty {
                field("near miss", Self.nearMissLine(misses))
            }
        }
        if let kind = report.kind { field("kind", Self.kindLine(kind)) }
        field("signature", Self.signatureLine(report))
        lines.append("")

        if let heaviest = report.heaviestStack {
            let stack = report.stack(at: heaviest.stack)
            lines.append(terminal.paint("heaviest stack", .bold) + " (\(heaviest.sampleCount) of \(report.samples.count) samples, \(Text.duration(heaviest.weightMs)))")
            let appFrames = Set(StackSignature.appFrames(heaviest.frames, images: report.images).map(\.address))
            let shown = heaviest.frames.prefix(maxFrames).map { frame in
                (
                    frame: frame, name: FrameNaming.displayName(frame, images: report.images),
                    location: frame.file.map { StackSignature.baseName($0) + (frame.line.map { ":\($0)" } ?? "") } ?? ""
                )
            }
            // The file and line follow the longest name that has one; names are cut only when a
            // line would pass the terminal's width.
            let numberWidth = max(4, "#\(max(0, shown.count - 1)) ".count)
            let longestLocated = shown.filter { !$0.location.isEmpty }.map(\.name.count).max() ?? 0
            let firstAsync = shown.firstIndex { $0.frame.isAsyncCaller }
            let lastAsync = shown.lastIndex { $0.frame.isAsyncCaller }
            for (index, entry) in shown.enumerated() {
                if index == firstAsync {
                    lines.append(terminal.paint("  ⋯ async callers, from the task's chain of async contexts:", .dim))
                }
                let number = Text.fit("#\(index)", numberWidth)
                let location = min(28, entry.location.count)
                let room = max(20, width - 2 - numberWidth - (location == 0 ? 0 : location + 1))
                var name =
                    entry.location.isEmpty
                    ? FrameNaming.fit(entry.name, width: room)
                    : Text.fit(FrameNaming.fit(entry.name, width: min(longestLocated, room)), min(longestLocated, room))
                if appFrames.contains(entry.frame.address) { name = terminal.paint(name, .bold) }
                let tail = entry.location.isEmpty ? "" : " " + terminal.paint(Text.clip(entry.location, location), .dim)
                lines.append("  " + number + name + tail)
                if index == lastAsync {
                    if let end = stack?.asyncCallers, end != "complete" {
                        lines.append(terminal.paint("  ⋯ the async callers stop here: \(end)", .dim))
                    }
                    if index + 1 < shown.count {
                        lines.append(terminal.paint("  ⋯ the thread's stack again (the executor running the task):", .dim))
                    }
                }
            }
            if heaviest.frames.count > maxFrames {
                lines.append("  … \(heaviest.frames.count - maxFrames) more frames (--frames \(heaviest.frames.count))")
            } else if let stack, stack.truncated {
                lines.append(terminal.paint("  ⋯ stops here: \(stack.truncation ?? "truncated"); no further frame could be proven", .dim))
            }
        } else {
            lines.append("no stack was captured")
        }
        lines.append("")
        let waits = waitLines(report)
        if !waits.isEmpty {
            lines.append(contentsOf: waits)
            lines.append("")
        }
        if let threads = report.threads, !threads.isEmpty {
            lines.append(contentsOf: threadStacks(report, threads))
        } else {
            lines.append(contentsOf: timeline(report))
        }
        lines.append("")

        let context = report.context
        var contextParts: [String] = []
        if let rss = context.rssBytes { contextParts.append("RSS \(rss >> 20) MiB") }
        if let load = context.loadAverage { contextParts.append("load " + load.map { String(printf: "%.2f", $0) }.joined(separator: " ") + " " + Self.cpuCountText(context)) }
        contextParts.append("watchdog late by \(String(printf: "%.1f", context.watchdogOversleepMs)) ms")
        if context.debuggerAttached { contextParts.append("debugger attached") }
        if context.processStopped { contextParts.append("process stopped") }
        field("context", contextParts.joined(separator: ", "))
        let capture = report.capture
        var captureParts = ["\(capture.samplesTaken) samples every \(Text.duration(capture.sampleIntervalMs))"]
        if capture.samplesDropped > 0 { captureParts.append("\(capture.samplesDropped) thinned out") }
        if let median = capture.pauseMedianUs, let maximum = capture.pauseMaxUs {
            captureParts.append("pause \(Text.whole(median)) µs median, \(Text.whole(maximum)) µs max")
        }
        for error in capture.errors { captureParts.append("\(error.kind) ×\(error.count)") }
        if let cut = capture.callsCutShort, cut > 0 {
            captureParts.append("\(cut) \(cut == 1 ? "capture" : "captures") cut a system call short (EINTR)")
        }
        if capture.reportsSuppressed > 0 { captureParts.append("\(capture.reportsSuppressed) earlier hangs not written (rate limit)") }
        field("capture", captureParts.joined(separator: ", "))
        if let framePointer = report.heaviestStack.flatMap({ report.stack(at: $0.stack)?.framePointer }) {
            field("unwound", "without a signal; frame pointer from the \(framePointer)")
        }
        if let names = report.symbolication {
            var text = "by \(names.by) at \(Text.timestamp(names.at)): \(names.framesNamed) frames named, \(names.framesUnnamed) not"
            if !names.problems.isEmpty { text += "; " + names.problems.joined(separator: "; ") }
            field("names", text)
        }
        field("file", path, whole: true)
        return lines.map { String($0.reversed().drop(while: \.isWhitespace).reversed()) }.joined(separator: "\n")
    }

    /// `1a2b3c4d5e6f7a8b by names (addresses: 0011223344556677)`: the group's signature and kind.
    /// The blocks of a lead-up, `▁` idle to `█` busy: one per bucket, or per group of buckets so
    /// that there are at most `columns`, each the busy share of its group's time.
    package static func leadUpBlocks(_ before: HangReport.LeadUp, columns: Int = 50) -> String {
        let levels = Array("▁▂▃▄▅▆▇█")
        guard !before.buckets.isEmpty, before.bucketMs > 0 else { return "" }
        let group = (before.buckets.count + columns - 1) / columns
        return String(
            stride(from: 0, to: before.buckets.count, by: group).map { start in
                let buckets = before.buckets[start..<min(start + group, before.buckets.count)]
                let share = buckets.reduce(0) { $0 + $1.busyMs } / (Double(buckets.count) * before.bucketMs)
                return levels[min(levels.count - 1, max(0, Int(share * Double(levels.count))))]
            })
    }

    /// Buckets per block: as few as fit 50 columns.
    package static func leadUpGroup(_ before: HangReport.LeadUp) -> Int { max(1, (before.buckets.count + 49) / 50) }

    /// `3, the last 420ms before onset, each ran at least 104ms (flamegraph --near-misses draws their stacks)`
    package static func nearMissLine(_ misses: [HangReport.LeadUp.NearMiss]) -> String {
        let last = misses.map(\.offsetMs).max() ?? 0
        let shortest = misses.map(\.atLeastMs).min() ?? 0
        return "\(misses.count), the last \(Text.duration(-last)) before onset, each ran at least \(Text.duration(shortest)) (flamegraph --near-misses draws their stacks)"
    }

    /// `5 s: ▁▁▁▂▅▇██  busy 92 %`: the report's `before`, drawn (at most 76 columns with its label).
    package static func leadUpLine(_ before: HangReport.LeadUp) -> String {
        let seconds = before.windowMs / 1000
        let window = seconds == seconds.rounded() ? String(Int(seconds)) : String(printf: "%.1f", seconds)
        return "\(window) s: \(leadUpBlocks(before))  busy \(Int((before.busyRatio * 100).rounded())) %"
    }

    /// `cpu: ··▁▁▆▆▆▆  on a CPU 587ms, waiting 1.4s (throttled 1.3s)`: under the lead-up line,
    /// block for block, the share of each bucket (or group) the loop's thread waited for a CPU
    /// (of the part the watchdog's readings cover), `·` where they cover none (the loop idle), then
    /// the window's totals; nil without CPU figures.
    package static func leadUpWaitLine(_ before: HangReport.LeadUp) -> String? {
        guard let cpu = before.cpu, cpu.coveredMs > 0, before.bucketMs > 0 else { return nil }
        let levels = Array("▁▂▃▄▅▆▇█")
        let group = (before.buckets.count + 49) / 50
        let blocks = String(
            stride(from: 0, to: before.buckets.count, by: group).map { start -> Character in
                let read = before.buckets[start..<min(start + group, before.buckets.count)].compactMap(\.cpu)
                let covered = read.reduce(0) { $0 + $1.coveredMs }
                guard covered > 0 else { return "·" }
                let share = read.reduce(0) { $0 + $1.runQueueMs } / covered
                return levels[min(levels.count - 1, max(0, Int(share * Double(levels.count))))]
            })
        // Aligned under the lead-up line's blocks: its `5 s: ` label, as wide.
        let label = leadUpLine(before).prefix { $0 != ":" }
        var line = "cpu" + String(repeating: " ", count: max(0, label.count - 3)) + ": " + blocks
        line += "  on a CPU \(Text.duration(cpu.onCpuMs)), waiting \(Text.duration(cpu.runQueueMs))"
        if let throttled = cpu.throttledMs, throttled >= 10 { line += " (throttled \(Text.duration(throttled)))" }
        return line
    }

    /// `mixed: 132 iterations without sleeping …`: the report's `kind` and why.
    package static func kindLine(_ kind: HangReport.Kind) -> String {
        let name = ["oneJob": "one job", "backlog": "backlog", "mixed": "mixed", "unknown": "unknown"][kind.name] ?? kind.name
        return "\(name): \(kind.reason)"
    }

    /// The report's `queuedTasks` in one line: how many tasks waited to run behind the hang, and
    /// the largest folds of them by the first three functions of their chain, else where they
    /// start (`3 tasks waiting for a pool thread: 2 in fetch() ← handleOrder(_:), 1 in poll()`).
    package static func queuedLine(_ queued: HangReport.QueuedTasks, report: HangReport) -> String {
        if let unavailable = queued.unavailable { return "tasks not counted: \(unavailable)" }
        let names = TaskDumpText.Names(report: report)
        let plural = queued.count == 1 ? "task" : "tasks"
        var line = "\(Text.count(queued.count))\(queued.stoppedEarly == nil ? "" : " or more") \(plural) "
        line += report.source == "concurrency-pool" ? "waiting for a pool thread" : "queued behind it on the main actor"
        let folds = queued.folds.prefix(3).map { fold in
            let place = fold.chain.isEmpty ? fold.entry.map(names.frame) ?? "?" : names.chain(fold.chain, limit: 3)
            return "\(Text.count(fold.count)) in \(place)"
        }
        if !folds.isEmpty { line += ": " + folds.joined(separator: ", ") }
        let more = queued.folds.dropFirst(3).reduce(0) { $0 + $1.count } + (queued.foldsOmitted ?? 0)
        if more > 0 { line += ", \(Text.count(more)) elsewhere" }
        return line + " (read in \(Text.duration(queued.tookMs)))"
    }

    package static func signatureLine(_ report: HangReport) -> String {
        let grouping = report.grouping
        switch grouping.kind {
        case .names: return "\(grouping.signature) by names (by addresses: \(report.signature))"
        case .addresses: return "\(grouping.signature) by addresses (no names: a rebuild changes it)"
        }
    }

    /// One mark per sample: which stack (by its first app frame and its leaf), and the thread's state.
    func timeline(_ report: HangReport) -> [String] {
        guard !report.samples.isEmpty else { return [] }
        var labels: [String: Character] = [:]
        var legend: [(Character, String, Int)] = []
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        var marks = ""
        var states = ""
        for sample in report.samples {
            states.append(sample.state.flatMap(\.first) ?? "?")
            guard let stack = sample.stack.flatMap(report.stack(at:)) else {
                marks.append("·")
                continue
            }
            let frames = report.frames(of: stack)
            let leaf = frames.first.map { FrameNaming.displayName($0, images: report.images) } ?? "?"
            let app = StackSignature.appFrames(frames, images: report.images).first.map { FrameNaming.displayName($0, images: report.images) }
            let label = app == nil || app == leaf ? leaf : "\(leaf) < \(app!)"
            if let known = labels[label] {
                marks.append(known)
                if let position = legend.firstIndex(where: { $0.0 == known }) { legend[position].2 += 1 }
            } else {
                let mark: Character = legend.count < alphabet.count ? alphabet[legend.count] : "*"
                labels[label] = mark
                legend.append((mark, label, 1))
                marks.append(mark)
            }
        }
        let first = report.samples.first!.offsetMs
        var lines = [terminal.paint("timeline", .bold) + " (\(report.samples.count) samples from \(Text.duration(first)), a mark each)"]
        let chunk = max(20, terminal.width - 10)
        for start in stride(from: 0, to: marks.count, by: chunk) {
            let end = min(marks.count, start + chunk)
            lines.append("  stack " + String(Array(marks)[start..<end]))
            lines.append("  state " + String(Array(states)[start..<end]))
        }
        for (mark, label, count) in legend {
            let prefix = "  \(mark) ×\(count)  "
            lines.append(prefix + Text.clip(label, max(20, terminal.width - prefix.count)))
        }
        let stateNames: [Character: String] = [
            "R": "running", "S": "sleeping", "D": "uninterruptible", "T": "stopped", "t": "traced", "Z": "zombie", "?": "unknown",
        ]
        let present = stateNames.keys.filter { states.contains($0) }.sorted()
        if !present.isEmpty {
            lines.append("  state: " + present.map { "\($0) \(stateNames[$0]!)" }.joined(separator: ", "))
        }
        let failures = report.samples.compactMap(\.error)
        if !failures.isEmpty {
            lines.append("  · no stack: " + Dictionary(grouping: failures, by: { $0 }).map { "\($0.key) ×\($0.value.count)" }.sorted().joined(separator: ", "))
        }
        return lines
    }
}
