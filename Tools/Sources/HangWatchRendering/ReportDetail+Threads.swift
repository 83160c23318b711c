import HangWatchReport

extension ReportDetail {
    /// Every thread of a report that holds several (a starved `concurrency-pool`): who, its
    /// verdict, and its own stack, innermost first.
    func threadStacks(_ report: HangReport, _ threads: [HangReport.ThreadSnapshot]) -> [String] {
        var lines = [terminal.paint("threads", .bold) + " (\(threads.count), each with its stack)"]
        let width = terminal.width
        for thread in threads {
            var what = thread.verdict
            if let call = thread.syscall, thread.verdict != HangReport.ThreadVerdict.computing.rawValue { what += " in \(call)" }
            if let state = thread.state { what += " (\(state))" }
            let header = "  tid \(thread.tid)" + (thread.name.map { " \($0)" } ?? "") + "  " + what
            lines.append(terminal.paint(Text.clip(header, width), thread.verdict == HangReport.ThreadVerdict.idle.rawValue ? .dim : .bold))
            if let waits = thread.waitsFor {
                lines.append(
                    "    waits for " + (Self.ioSentence(waits) ?? Self.sentence(kind: waits.kind, address: waits.address, file: waits.file)) + " "
                        + Self.ownerWords(waits.owner, holder: waits.holder, reason: waits.reason))
            }
            guard let stack = thread.stack.flatMap(report.stack(at:)) else {
                lines.append("    no stack: \(thread.error ?? "none captured")")
                continue
            }
            let frames = report.frames(of: stack)
            for (index, frame) in frames.prefix(maxFrames).enumerated() {
                let name = FrameNaming.fit(FrameNaming.displayName(frame, images: report.images), width: max(20, width - 10))
                lines.append("    " + Text.fit("#\(index)", 4) + name)
            }
            if frames.count > maxFrames {
                lines.append("    … \(frames.count - maxFrames) more frames (--frames \(frames.count))")
            } else if stack.truncated {
                lines.append(terminal.paint("    ⋯ stops here: \(stack.truncation ?? "truncated")", .dim))
            }
        }
        return lines
    }
}
