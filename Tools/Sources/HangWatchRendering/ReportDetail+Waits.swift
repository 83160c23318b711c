import HangWatchReport

extension ReportDetail {
    /// What the thread waited for, in plain words, the holder's stack, the chain behind it, and a
    /// deadlock's cycle first of all:
    ///
    ///     DEADLOCK  threads 1200 → 1234 → 1200: each waits for a lock the next holds; none can go on
    ///     waits for mutex 0x7f3a00001040 held by thread 1234 "cache-refresh" (blocked in clock_nanosleep)
    ///       holder's stack
    ///         #0  clock_nanosleep …
    func waitLines(_ report: HangReport) -> [String] {
        guard let waits = report.waitsFor else { return [] }
        var lines: [String] = []
        if let cycle = waits.deadlock, let first = cycle.first {
            let path = (cycle + [first]).map(String.init).joined(separator: " → ")
            lines.append(
                terminal.paint("DEADLOCK", .red) + "  threads \(path): each waits for what the next holds; none can go on by itself")
        }
        lines.append(terminal.paint("waits for", .bold) + " " + Self.sentence(kind: waits.kind, address: waits.address, file: waits.file)
            + " " + Self.ownerWords(waits.owner, holder: waits.holder, reason: waits.reason))
        if let holder = waits.holder { lines.append(contentsOf: holderStack(report, holder, indent: "  ")) }
        for link in waits.chain ?? [] {
            let who = "thread \(link.tid)" + (link.name.map { " \"\($0)\"" } ?? "")
            lines.append(
                "  → " + who + " waits for " + Self.sentence(kind: link.kind, address: link.address, file: link.file) + " "
                    + Self.ownerWords(link.holder == nil ? "unknown" : "held", holder: link.holder, reason: nil))
            if let holder = link.holder {
                if holder.tid == report.thread.tid {
                    lines.append(terminal.paint("    (the hung thread itself: its stack is the heaviest stack above)", .dim))
                } else {
                    lines.append(contentsOf: holderStack(report, holder, indent: "    "))
                }
            }
        }
        if let spans = waits.holders, spans.count > 1 {
            lines.append("  holders while it lasted: " + spans.map { span in
                (span.tid.map { "thread \($0)" } ?? span.pid.map { "process \($0)" } ?? "?") + (span.name.map { " \"\($0)\"" } ?? "")
                    + " (\(Text.duration(span.firstSeenMs))–\(Text.duration(span.lastSeenMs)))"
            }.joined(separator: ", then "))
        }
        return lines
    }

    /// `mutex 0x7f3a00001040`, `file lock on 08:01:1234`, `child process`.
    static func sentence(kind: String, address: String?, file: String?) -> String {
        let noun =
            switch kind {
            case "swift-mutex": "Swift mutex"
            case "rwlock": "read-write lock"
            case "thread-join": "a thread to exit (join)"
            case "child-process": "a child process"
            case "file-lock": "a file lock"
            default: kind
            }
        if let file { return noun + " on " + file }
        if let address, kind != "thread-join" { return noun + " " + address }
        return noun
    }

    /// `held by thread 1234 "cache-refresh" (blocked in nanosleep)`, `(no owner: …)`.
    static func ownerWords(_ owner: String, holder: HangReport.Holder?, reason: String?) -> String {
        switch owner {
        case "held":
            guard let holder else { return "held by an unknown thread" }
            let who = holder.tid.map { "thread \($0)" } ?? holder.pid.map { "process \($0)" } ?? "?"
            var doing = holder.verdict ?? "unknown"
            if doing == "blocked", let call = holder.syscall { doing += " in \(call)" }
            if let state = holder.state, !["R", "S"].contains(state) { doing += ", state \(state)" }
            return "held by " + who + (holder.name.map { " \"\($0)\"" } ?? "") + " (\(doing))"
        case "none": return "(no owner: \(reason ?? "this kind of object has none"))"
        case "free": return "(free at the last look: the wait was ending)"
        default: return "(owner unknown: \(reason ?? "could not be read"))"
        }
    }

    /// The holder's own stack, or why there is none.
    private func holderStack(_ report: HangReport, _ holder: HangReport.Holder, indent: String) -> [String] {
        let who = holder.tid.map { "thread \($0)" } ?? holder.pid.map { "process \($0)" } ?? "holder"
        guard let stack = holder.stack.flatMap(report.stack(at:)) else {
            return [indent + terminal.paint("\(who): no stack (\(holder.stackError ?? "none taken"))", .dim)]
        }
        var lines = [indent + terminal.paint("\(who)'s stack", .bold)]
        let frames = report.frames(of: stack)
        for (index, frame) in frames.prefix(maxFrames).enumerated() {
            let name = FrameNaming.fit(FrameNaming.displayName(frame, images: report.images), width: max(20, terminal.width - indent.count - 8))
            lines.append(indent + "  " + Text.fit("#\(index)", 4) + name)
        }
        if frames.count > maxFrames {
            lines.append(indent + "  … \(frames.count - maxFrames) more frames (--frames \(frames.count))")
        } else if stack.truncated {
            lines.append(indent + terminal.paint("  ⋯ stops here: \(stack.truncation ?? "truncated")", .dim))
        }
        return lines
    }
}
