import HangWatchReport

extension ReportDetail {
    /// A thread dump (`hangwatch dump`), like jstack's: a header, every wait cycle first, then each
    /// thread with its state, how long it has been in it, what it waits for and who holds it, and
    /// its stack.
    package func renderDump(_ dump: HangReport) -> String {
        var lines = [
            terminal.paint("thread dump", .bold) + " of \(dump.service) (pid \(dump.pid), host \(dump.host)) at \(Text.timestamp(dump.startedAt))"
        ]
        let threads = dump.threads ?? []
        var cycles: [[Int32]] = []
        for thread in threads {
            if let cycle = thread.waitsFor?.deadlock, !cycles.contains(where: { Set($0) == Set(cycle) }) { cycles.append(cycle) }
        }
        for cycle in cycles {
            let names = cycle.map { tid in
                "\(tid)" + (threads.first { $0.tid == tid }?.name.map { " \"\($0)\"" } ?? "")
            }
            lines.append(
                terminal.paint("DEADLOCK", .red) + "  " + (names + [names[0]]).joined(separator: " → ")
                    + ": each waits for what the next holds; none can go on by itself")
        }
        lines.append("\(threads.count) threads" + (cycles.isEmpty ? ", no wait cycle" : ""))
        for thread in threads {
            lines.append("")
            var what = thread.verdict
            if let call = thread.syscall, thread.verdict == HangReport.ThreadVerdict.blocked.rawValue { what += " in \(call)" }
            if let state = thread.state, !["R", "S"].contains(state) { what += ", state \(state)" }
            if let offCPU = thread.offCPUMs { what += " for \(Text.duration(offCPU))" }
            let role = thread.name.flatMap(ThreadNaming.role(of:)).map { "  (\($0))" } ?? ""
            let main = thread.tid == dump.pid ? " (main)" : ""
            lines.append(
                terminal.paint("\"\(thread.name ?? "?")\" tid \(thread.tid)\(main)", .bold) + "  " + what + terminal.paint(role, .dim))
            if let waits = thread.waitsFor {
                lines.append(
                    "    waits for " + (Self.ioSentence(waits) ?? Self.sentence(kind: waits.kind, address: waits.address, file: waits.file)) + " "
                        + Self.ownerWords(waits.owner, holder: waits.holder, reason: waits.reason))
            }
            guard let stack = thread.stack.flatMap(dump.stack(at:)) else {
                lines.append(terminal.paint("    no stack: \(thread.error ?? (thread.state == "R" ? "on a CPU (only blocked threads are walked)" : "none taken"))", .dim))
                continue
            }
            let frames = dump.frames(of: stack)
            for (index, frame) in frames.prefix(maxFrames).enumerated() {
                let name = FrameNaming.fit(FrameNaming.displayName(frame, images: dump.images), width: max(20, terminal.width - 10))
                lines.append("    " + Text.fit("#\(index)", 4) + name)
            }
            if frames.count > maxFrames {
                lines.append("    … \(frames.count - maxFrames) more frames (--frames \(frames.count))")
            } else if stack.truncated {
                lines.append(terminal.paint("    ⋯ stops here: \(stack.truncation ?? "truncated")", .dim))
            }
        }
        return lines.joined(separator: "\n")
    }
}
