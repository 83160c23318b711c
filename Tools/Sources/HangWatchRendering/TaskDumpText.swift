@_spi(Internal) import HangWatchReport

/// The text of `hangwatch dump --tasks`, like Go's goroutine dump: a header, the findings first
/// (wait cycles, held actors and who waits, continuations seen waiting longer than the bound, a
/// starved pool), then the tasks folded by state, wait and chain (ids on request), the tree of
/// structured concurrency (task groups and async let, with a running task's thread and stack), and
/// the actors. Everything read from the answer is bounded and checked (indices, counts).
package struct TaskDumpText {
    package let terminal: Terminal
    /// Frames of each chain or stack shown.
    package let maxFrames: Int
    /// A fold of tasks on continuations seen unchanged at least this long is a finding.
    package let suspendedOverMs: Double
    /// Every fold's ids, not a range.
    package let showIDs: Bool
    /// Children shown under one parent (the rest are counted).
    package static let childLimit = 32

    package init(terminal: Terminal, maxFrames: Int, suspendedOverMs: Double, showIDs: Bool) {
        self.terminal = terminal
        self.maxFrames = maxFrames
        self.suspendedOverMs = suspendedOverMs
        self.showIDs = showIDs
    }

    package func render(_ report: HangReport) -> String {
        var lines = [terminal.paint("task dump", .bold) + " of \(report.service) (pid \(report.pid), host \(report.host)) at \(Text.timestamp(report.startedAt))"]
        guard let dump = report.tasks else {
            lines.append("no tasks in this answer: the monitor answered with a thread dump (a HangWatch that predates task dumps)")
            return lines.joined(separator: "\n")
        }
        if let unavailable = dump.unavailable {
            lines.append(unavailable)
            return lines.joined(separator: "\n")
        }
        lines += header(dump, threads: report.threads?.count ?? 0)
        let names = Names(report: report)
        let findings = self.findings(dump, report: report, names: names)
        if !findings.isEmpty {
            lines.append("")
            lines.append(terminal.paint("FINDINGS", .bold))
            lines += findings
        }
        lines.append("")
        lines.append(terminal.paint("GROUPS", .bold) + terminal.paint(" (identical chains folded\(showIDs ? "" : "; --ids lists every id"))", .dim))
        for fold in dump.folds { lines += self.fold(fold, dump: dump, names: names) }
        if !dump.roots.isEmpty {
            lines.append("")
            lines.append(terminal.paint("TREE", .bold) + terminal.paint(" (structured concurrency: task groups and async let)", .dim))
            var drawn = Set<UInt64>()
            for root in dump.roots { lines += tree(root, byID: names.tasks, report: report, dump: dump, names: names, indent: "", drawn: &drawn) }
        }
        if !dump.actors.isEmpty {
            lines.append("")
            lines.append(terminal.paint("ACTORS", .bold))
            for actor in dump.actors { lines.append("  " + actorLine(actor, names: names, report: report)) }
        }
        return lines.joined(separator: "\n")
    }

    /// Counts, cost, and what "how long" means.
    private func header(_ dump: HangReport.TaskDump, threads: Int) -> [String] {
        var states: [String: Int] = [:]
        for task in dump.tasks { states[task.state, default: 0] += 1 }
        let counts = ["running", "enqueued", "suspended", "not started"].compactMap { state in states[state].map { "\(Text.count($0)) \(state)" } }
        var lines = [
            "\(Text.count(dump.tasks.count)) tasks" + (counts.isEmpty ? "" : " (\(counts.joined(separator: ", ")))") + ", \(Text.count(threads)) thread\(threads == 1 ? "" : "s"); "
                + "scan \(Text.duration(dump.scan.scanMs)) of \(Self.megabytes(dump.scan.bytes)), read \(Text.duration(dump.scan.readMs)), "
                + "took \(Text.duration(dump.scan.tookMs))"
        ]
        if let stopped = dump.scan.stoppedEarly { lines.append(terminal.paint("incomplete: \(stopped); there are at least these tasks", .yellow)) }
        if let selfTest = dump.selfTest, selfTest != "passed" { lines.append(terminal.paint("layout self-test \(selfTest)", .yellow)) }
        let since =
            dump.sightingsSince.map { "since the task dump at \(Text.timestamp($0))" }
            ?? "from this dump on (the first of this process: ask again later to see how long tasks wait)"
        lines.append(
            terminal.paint(
                "how long: Swift keeps no time of a suspension; \"unchanged for\" is how long this monitor's task dumps saw a task "
                    + "waiting the same way, \(since); a sleep says its time left", .dim))
        return lines
    }

    private func findings(_ dump: HangReport.TaskDump, report: HangReport, names: Names) -> [String] {
        var lines: [String] = []
        for finding in dump.findings {
            switch finding.kind {
            case "cycle":
                let steps = (finding.steps ?? []).map { step -> String in
                    if let actor = step.actor { return names.actor(actor, in: dump) }
                    return step.task.map { "task \($0)" } ?? "a task not listed"
                }
                guard let first = steps.first else { continue }
                var line = terminal.paint("CYCLE", .red) + "  " + (steps + [first]).joined(separator: " → ")
                    + ": each waits for the next; none can go on while this lasts"
                if let thread = finding.threads?.first { line += " (" + threadWords(thread, report: report) + ")" }
                lines.append(line)
            case "actor held":
                guard let address = finding.actor, let actor = dump.actors.first(where: { $0.address == address }) else { continue }
                lines.append(terminal.paint("HELD", .yellow) + "   " + actorLine(actor, names: names, report: report))
            case "continuations":
                guard let index = finding.fold, dump.folds.indices.contains(index), let unchanged = finding.unchangedMs,
                    unchanged >= suspendedOverMs
                else { continue }
                let fold = dump.folds[index]
                let madeIn = names.chain(fold.chain, limit: 3)
                lines.append(
                    terminal.paint("WAITING", .yellow) + " \(Text.count(fold.count)) task\(fold.count == 1 ? " waits" : "s wait") on a continuation made in "
                        + (madeIn.isEmpty ? "an unknown function" : madeIn) + ", unchanged for \(Text.duration(unchanged)) (over \(Text.duration(suspendedOverMs)): "
                        + "a continuation nobody resumes?)")
            case "pool starved":
                let threads = (finding.threads ?? []).prefix(8).map { threadWords($0, report: report) }
                lines.append(
                    terminal.paint("STARVED", .red) + " \(Text.count(finding.count ?? 0)) tasks wait for a pool thread while pool threads are blocked: "
                        + threads.joined(separator: "; "))
            default:
                continue
            }
        }
        return lines
    }

    private func fold(_ fold: HangReport.TaskFold, dump: HangReport.TaskDump, names: Names) -> [String] {
        let members = fold.ids
        var head = "  \(Text.count(fold.count)) task\(fold.count == 1 ? "" : "s") \(fold.state)"
        if let awaits = fold.awaits { head += ", " + Self.awaitWords(awaits, names: names, dump: dump) }
        if let left = fold.leftMs, left.count == 2 {
            head += left[0] == left[1] ? ", \(Text.duration(left[0])) left" : ", \(Text.duration(left[0]))–\(Text.duration(left[1])) left"
        }
        if let unchanged = fold.unchangedMs { head += ", unchanged for \(Text.duration(unchanged))" + (fold.count > 1 ? " (longest)" : "") }
        var lines = [head]
        if !fold.chain.isEmpty {
            lines.append("      in " + names.chain(fold.chain, limit: maxFrames, separator: "\n       ← "))
            if fold.chainEnd != "complete" { lines.append(terminal.paint("       ⋯ stops here: \(fold.chainEnd)", .dim)) }
        } else if let entry = fold.entry {
            lines.append("      " + (fold.state == "running" ? "resumed in " : "starts in ") + names.frame(entry))
        }
        if fold.state == "running" { lines.append(terminal.paint("      (running: its chain is on its thread's stack; see TREE or hangwatch dump)", .dim)) }
        let labelled = Self.labelSummary(members.compactMap { names.tasks[$0]?.labels })
        if !labelled.isEmpty { lines.append("      labels: " + labelled) }
        lines.append("      ids: " + Self.ids(members, all: showIDs))
        return lines
    }

    private func tree(
        _ id: UInt64, byID: [UInt64: HangReport.TaskEntry], report: HangReport, dump: HangReport.TaskDump, names: Names, indent: String,
        drawn: inout Set<UInt64>
    ) -> [String] {
        guard let task = byID[id], drawn.insert(id).inserted, indent.count < 64 else { return [] }
        var lines = [indent + taskLine(task, dump: dump, names: names)]
        if task.state == "running", let thread = task.thread {
            lines.append(indent + "    " + terminal.paint(threadWords(thread, report: report), .dim))
            if let snapshot = report.threads?.first(where: { $0.tid == thread }), let stack = snapshot.stack.flatMap(report.stack(at:)) {
                for (index, frame) in report.frames(of: stack).prefix(min(maxFrames, 12)).enumerated() {
                    lines.append(indent + "      " + Text.fit("#\(index)", 4) + FrameNaming.displayName(frame, images: report.images))
                }
            }
        }
        let children = task.children ?? []
        var groups: [String: [UInt64]] = [:]
        var order: [String] = []
        for child in children {
            let group = byID[child]?.group ?? ""
            if groups[group] == nil { order.append(group) }
            groups[group, default: []].append(child)
        }
        for group in order {
            let members = groups[group] ?? []
            var inner = indent + "    "
            if !group.isEmpty {
                lines.append(indent + "    task group \(group): \(Text.count(members.count)) child\(members.count == 1 ? "" : "ren")")
                inner += "    "
            }
            for child in members.prefix(Self.childLimit) {
                lines += tree(child, byID: byID, report: report, dump: dump, names: names, indent: inner, drawn: &drawn)
            }
            if members.count > Self.childLimit { lines.append(inner + "… \(Text.count(members.count - Self.childLimit)) more (--json lists them)") }
        }
        return lines
    }

    private func taskLine(_ task: HangReport.TaskEntry, dump: HangReport.TaskDump, names: Names) -> String {
        let traits = (task.traits ?? []).filter { $0 != "child" }
        var line = "task \(task.id)" + (traits.isEmpty ? "" : " [\(traits.joined(separator: ", "))]") + ": \(task.state)"
        if let thread = task.thread { line += " on thread \(thread)" }
        if let held = dump.actors.first(where: { $0.holder == task.id }) { line += ", holds \(names.actor(held.address, in: dump))" }
        if let awaits = task.awaits { line += ", " + Self.awaitWords(awaits, names: names, dump: dump) }
        if let left = task.awaits?.leftMs { line += ", \(Text.duration(left)) left" }
        if let unchanged = task.unchangedMs { line += ", unchanged for \(Text.duration(unchanged))" }
        if !task.chain.isEmpty { line += "  in " + names.chain(task.chain, limit: 2) }
        if let labels = task.labels, !labels.isEmpty { line += "  " + terminal.paint(labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "), .dim) }
        return line
    }

    private func actorLine(_ actor: HangReport.TaskActor, names: Names, report: HangReport) -> String {
        var line = names.actor(actor.address, in: report.tasks ?? HangReport.TaskDump()) + ": \(actor.state)"
        if let holder = actor.holder {
            line += ", held by task \(holder)" + (actor.holderThread.map { " (" + threadWords($0, report: report) + ")" } ?? "")
        } else if let why = actor.holderUnknown {
            line += ", holder unknown: \(why)"
        }
        let waiting = actor.queue.count + (actor.otherJobs ?? 0)
        line += "; \(Text.count(waiting)) waiting" + (actor.queue.isEmpty ? "" : ": tasks " + Self.ids(actor.queue, all: showIDs))
        if let end = actor.queueEnd { line += " (queue read to its \(end))" }
        return line
    }

    /// `thread 1234 "name" blocked in futex for 2.0s`.
    private func threadWords(_ tid: Int32, report: HangReport) -> String {
        guard let thread = report.threads?.first(where: { $0.tid == tid }) else { return "thread \(tid)" }
        var words = "thread \(tid)" + (thread.name.map { " \"\($0)\"" } ?? "") + " \(thread.verdict)"
        if let call = thread.syscall, thread.verdict == HangReport.ThreadVerdict.blocked.rawValue { words += " in \(call)" }
        if let offCPU = thread.offCPUMs { words += " for \(Text.duration(offCPU))" }
        return words
    }

    /// What a wait of `kind` (a fold's `awaits`, or a task's) says.
    static func awaitWords(_ kind: String, names: Names, dump: HangReport.TaskDump) -> String {
        if kind.hasPrefix("actor ") { return "waiting for " + names.actor(String(kind.dropFirst("actor ".count)), in: dump) }
        switch kind {
        case "continuation": return "on a continuation"
        case "sleep": return "in Task.sleep"
        case "sleep timer": return "Task.sleep's timer (wakes a sleeping task)"
        case "pool thread": return "waiting for a pool thread"
        case "task": return "awaiting a task"
        case "task group": return "awaiting its task group"
        case "executor": return "waiting for an executor"
        default: return "waiting (\(kind))"
        }
    }

    static func awaitWords(_ awaits: HangReport.TaskAwaits, names: Names, dump: HangReport.TaskDump) -> String {
        switch awaits.kind {
        case "task":
            let child = awaits.task.flatMap { names.tasks[$0] }
            return "awaits " + (awaits.task.map { "task \($0)" } ?? "a task not listed")
                + ((child?.traits ?? []).contains("async let") ? " (async let)" : "")
        case "task group": return "awaits task group \(awaits.group ?? "?")"
        case "actor":
            guard let address = awaits.actor else { return "waiting for an actor" }
            var words = "waiting for " + names.actor(address, in: dump)
            if let holder = dump.actors.first(where: { $0.address == address })?.holder { words += " (held by task \(holder))" }
            return words
        case "sleep" where awaits.leftMs == nil: return "in Task.sleep" + (awaits.note.map { " (\($0))" } ?? "")
        case "sleep timer": return "Task.sleep's timer" + (awaits.sleeper.map { " (wakes task \($0))" } ?? "")
        case "executor": return "waiting for executor \(awaits.executor ?? "?")"
        case "unknown": return "waiting (\(awaits.note ?? "unknown"))"
        default: return awaitWords(awaits.kind, names: names, dump: dump)
        }
    }

    /// Labels of many tasks in a line: each key with its values (three at most; more are counted).
    static func labelSummary(_ sets: [[String: String]]) -> String {
        var values: [String: [String: Int]] = [:]
        for set in sets { for (key, value) in set { values[key, default: [:]][value, default: 0] += 1 } }
        return values.keys.sorted().map { key in
            let counts = values[key] ?? [:]
            if counts.count > 3 { return "\(key): \(Text.count(counts.count)) values" }
            return counts.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\(key)=\($0.key)" + (sets.count > 1 ? " ×\(Text.count($0.value))" : "") }
                .joined(separator: ", ")
        }.joined(separator: "; ")
    }

    /// `15, 16, 18` for a few or all of them; `15…1014 (1,000)` otherwise.
    static func ids(_ ids: [UInt64], all: Bool) -> String {
        let sorted = ids.sorted()
        guard let first = sorted.first, let last = sorted.last else { return "none" }
        if all || sorted.count <= 8 { return sorted.map(String.init).joined(separator: ", ") }
        return "\(first)…\(last) (\(Text.count(sorted.count)))"
    }


    static func megabytes(_ bytes: Int) -> String {
        bytes >= 10 << 20 ? "\(bytes >> 20) MiB" : String(printf: "%.1f MiB", Double(bytes) / Double(1 << 20))
    }

    /// Frames' names as the dump shows them.
    package struct Names {
        let report: HangReport
        /// The tasks by id.
        let tasks: [UInt64: HangReport.TaskEntry]

        /// The widest a frame's name is shown.
        static let frameWidth = 120

        init(report: HangReport) {
            self.report = report
            tasks = Dictionary((report.tasks?.tasks ?? []).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        }

        /// A chain's frame: its short name, without `(async)` (every one is) and without its
        /// module where the module is its image's (a service's own functions: `handleOrder(_:)`).
        func frame(_ index: Int) -> String {
            guard report.frames.indices.contains(index) else { return "?" }
            let frame = report.frames[index]
            var name = FrameNaming.displayName(frame, images: report.images)
            if name.hasSuffix(" (async)") { name = String(name.dropLast(" (async)".count)) }
            if frame.symbol != nil, let image = frame.image(in: report.images) {
                let module = String(image.path.split(separator: "/").last ?? "").map { $0 == "-" || $0 == "." ? "_" : $0 }
                name = name.replacing(String(module) + ".", with: "")
            }
            // (A thunk's name can run to hundreds of characters.)
            return FrameNaming.fit(name, width: Self.frameWidth)
        }

        func chain(_ indices: [Int], limit: Int, separator: String = " ← ") -> String {
            let shown = indices.prefix(max(1, limit)).map(frame)
            return shown.joined(separator: separator) + (indices.count > shown.count ? separator + "… \(indices.count - shown.count) more" : "")
        }

        /// `actor Ledger 0x7f…`: its type from its metadata's symbol.
        func actor(_ address: String, in dump: HangReport.TaskDump) -> String {
            guard let type = dump.actors.first(where: { $0.address == address })?.type, report.frames.indices.contains(type),
                let symbol = report.frames[type].symbol
            else { return "actor \(address)" }
            var name = symbol
            for prefix in ["full type metadata for ", "type metadata for ", "nominal type descriptor for "] where name.hasPrefix(prefix) {
                name = String(name.dropFirst(prefix.count))
            }
            return "actor \(FrameNaming.fit(Self.dropModule(name), width: 60)) \(address)"
        }

        static func dropModule(_ name: String) -> String {
            guard let dot = name.firstIndex(of: "."), name[..<dot].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { return name }
            return String(name[name.index(after: dot)...])
        }
    }
}
