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
        let object = Self.ioSentence(waits) ?? Self.sentence(kind: waits.kind, address: waits.address, file: waits.file)
        var owner = Self.ownerWords(waits.owner, holder: waits.holder, reason: waits.reason)
        // A socket or a pipe is not held: its other end is.
        if waits.owner == "held", ["socket", "pipe", "fifo"].contains(waits.kind) { owner = "whose other end is " + owner }
        // Cut to the terminal, as every line but the file's path (`hangwatch show --json` has it whole).
        lines.append(terminal.paint("waits for", .bold) + " " + Text.clip(object + " " + owner, max(20, terminal.width - 10)))
        if let holder = waits.holder { lines.append(contentsOf: holderStack(report, holder, indent: "  ")) }
        if waits.kind == "poll" {
            for endpoint in waits.endpoints ?? [] {
                let peers = (endpoint.peers ?? []).map { Self.ownerWords("held", holder: $0, reason: nil) }.joined(separator: ", ")
                let line = "  fd \(endpoint.descriptor)" + (endpoint.events.map { " (\($0))" } ?? "") + ": " + Self.endpointWords(endpoint)
                    + (peers.isEmpty ? endpoint.peerNote.map { " (\($0))" } ?? "" : " " + peers)
                lines.append(Text.clip(line, max(20, terminal.width)))
            }
            if let count = waits.descriptors, count > (waits.endpoints?.count ?? 0) {
                lines.append("  … \(count - (waits.endpoints?.count ?? 0)) more descriptors")
            }
        } else if waits.holder == nil, let endpoint = waits.endpoints?.first, let peers = endpoint.peers, peers.count > 1 {
            lines.append(Text.clip("  the other end: " + peers.map { Self.ownerWords("held", holder: $0, reason: nil) }.joined(separator: ", "), max(20, terminal.width)))
        }
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

    /// An I/O wait or a sleep in words: `a tcp socket 127.0.0.1:50010 → 127.0.0.1:5432
    /// (ESTABLISHED)`, `a pipe (fd 7)`, `2 descriptors (poll)`, `a sleep of 1.50 s (realtime), at
    /// most 300 ms left`; nil for the other kinds.
    static func ioSentence(_ waits: HangReport.WaitsFor) -> String? {
        if waits.kind == "sleep" {
            guard let sleep = waits.sleep else { return "a sleep" }
            var text = sleep.absolute ? "a sleep until a time" : "a sleep" + (sleep.requestedMs.map { " of \(Text.duration($0))" } ?? "")
            text += " (\(sleep.clock))"
            if let left = sleep.leftMs { text += ", " + (sleep.absolute ? "" : "at most ") + "\(Text.duration(left)) left" }
            return text
        }
        if waits.kind == "poll" {
            let count = waits.descriptors ?? waits.endpoints?.count ?? 0
            return "\(count) descriptor\(count == 1 ? "" : "s") (\(waits.syscall ?? "poll"))"
        }
        guard let endpoint = waits.endpoints?.first else { return nil }
        return endpointWords(endpoint)
    }

    /// One descriptor in words: what it is, its addresses and state, a file's file system.
    static func endpointWords(_ endpoint: HangReport.Endpoint) -> String {
        var text: String
        switch endpoint.type {
        case "tcp", "udp", "unix":
            text = "a \(endpoint.type) socket"
            let ends = [endpoint.local, endpoint.remote].compactMap { $0 }
            if !ends.isEmpty { text += " " + (endpoint.local ?? "?") + (endpoint.remote.map { " → " + $0 } ?? "") }
            var details = [endpoint.state].compactMap { $0 }
            if let queued = endpoint.receiveQueue, queued > 0 { details.append("\(queued) B to read") }
            if let queued = endpoint.sendQueue, queued > 0 { details.append("\(queued) B unsent") }
            if !details.isEmpty { text += " (" + details.joined(separator: ", ") + ")" }
        case "file", "fifo":
            text = "a \(endpoint.type) " + (endpoint.path ?? "(fd \(endpoint.descriptor))")
            if let filesystem = endpoint.filesystem {
                text += " on \(filesystem)" + (endpoint.device.map { " \($0)" } ?? "") + (endpoint.mountPoint.map { ", mounted at \($0)" } ?? "")
            }
        default:
            text = "a \(endpoint.type) (fd \(endpoint.descriptor))"
        }
        return text
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
        // How many of the looks at it took its stack (the hung thread's holder).
        let missed = holder.looksWithoutStack.flatMap { missed in
            holder.looks.map { missed > 0 ? "; not taken at \(missed) of \($0) looks" : "" }
        } ?? ""
        guard let stack = holder.stack.flatMap(report.stack(at:)) else {
            return [indent + terminal.paint("\(who): no stack (\(holder.stackError ?? "none taken")\(missed))", .dim)]
        }
        var lines = [indent + terminal.paint("\(who)'s stack", .bold) + (missed.isEmpty ? "" : terminal.paint(" (" + missed.dropFirst(2) + ")", .dim))]
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
