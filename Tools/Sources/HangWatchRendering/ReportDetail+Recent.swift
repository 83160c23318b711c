import HangWatchReport

extension ReportDetail {
    /// A recent-window dump (`hangwatch dump --recent`): a header, then each watch of the process
    /// with its flight recorder's window ending now, drawn as `show` draws a hang's lead-up
    /// (`leadUpLine`), its reading, its longest piece and whether it is busy now; a watch without a
    /// recorder says so on a line of its own.
    package func renderRecent(_ dump: HangReport) -> String {
        let sources = dump.recent?.sources ?? []
        let recorded = sources.filter { $0.window != nil }.count
        var lines = [
            terminal.paint("recent windows", .bold) + " of \(dump.service) (pid \(dump.pid), host \(dump.host)) at \(Text.timestamp(dump.startedAt))",
            "\(sources.count) \(sources.count == 1 ? "watch" : "watches"), \(recorded) with a flight recorder",
        ]
        for source in sources {
            lines.append("")
            lines.append(terminal.paint(Self.recentHeader(source, service: dump.service), .bold))
            guard let window = source.window else {
                lines.append(terminal.paint("  no window: \(source.noRecorder ?? "no flight recorder")", .dim))
                continue
            }
            lines.append("  " + Self.leadUpLine(window))
            if let wait = Self.leadUpWaitLine(window) { lines.append("  " + wait) }
            lines.append("  " + Self.recentReading(source, window: window))
            if let lag = source.lag { lines.append("  " + Self.lagLine(lag)) }
        }
        return lines.joined(separator: "\n")
    }

    /// `runloop "hangwatch-demo" tid 4242 (main), threshold 250ms`, with its service where it is
    /// not the process's first.
    package static func recentHeader(_ source: HangReport.Recent.Source, service: String) -> String {
        var header = source.source
        if let thread = source.thread {
            header += " \"\(thread.name ?? "?")\" tid \(thread.tid)" + (thread.isMain ? " (main)" : "")
        }
        header += ", threshold \(Text.duration(source.thresholdMs))"
        if source.service != service { header += ", service \(source.service)" }
        return header
    }

    /// `lag since the recorder began: 59,241 pieces; 99 % at most 25ms, 99.9 % at most 50ms; the
    /// longest at most 100ms (2)`: its histogram's bounds, so "at most" (a piece past the last
    /// bound reads `over 2.5s`).
    package static func lagLine(_ lag: HangReport.Recent.Lag) -> String {
        guard lag.pieces > 0 else { return "lag since the recorder began: no piece yet" }
        // The bounds under a millisecond as they are (0.1ms), the others as durations are.
        func bound(_ milliseconds: Double) -> String {
            milliseconds < 1 ? "\(milliseconds)ms" : Text.duration(milliseconds)
        }
        let over = "over \(bound(lag.boundsMs.last ?? 0))"
        func atMost(_ index: Int) -> String { index < lag.boundsMs.count ? "at most \(bound(lag.boundsMs[index]))" : over }
        func quantile(_ q: Double) -> String { lag.atMostMs(q).map { "at most \(bound($0))" } ?? over }
        var line = "lag since the recorder began: \(Text.count(Int(clamping: lag.pieces))) \(lag.pieces == 1 ? "piece" : "pieces")"
        line += "; 99 % \(quantile(0.99)), 99.9 % \(quantile(0.999))"
        if let longest = lag.longest { line += "; the longest \(atMost(longest.index)) (\(Text.count(Int(clamping: longest.count))))" }
        return line
    }

    /// `busy 52 % in the last 5 s (a block per 100ms); longest piece 24ms; busy now for 8ms`.
    package static func recentReading(_ source: HangReport.Recent.Source, window: HangReport.LeadUp) -> String {
        var parts = [window.reading + " (a block per \(Text.duration(Double(leadUpGroup(window)) * window.bucketMs)))"]
        if let longest = source.longestMs { parts.append("longest piece \(Text.duration(longest))") }
        parts.append(source.busyNowMs.map { "busy now for \(Text.duration($0))" } ?? "idle now")
        if let torn = window.tornBuckets, torn > 0 { parts.append("\(torn) \(torn == 1 ? "bucket" : "buckets") rewritten while read (counted idle)") }
        return parts.joined(separator: "; ")
    }
}
