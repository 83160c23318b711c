@_spi(Internal) import HangWatchReport

extension CaptureProbe {
    /// What the watchdog's reads of a hang's context cost (`LinuxHangContextProbe`), for the
    /// benchmarks: a probe of thread `tid` of this process, and each of its reads timed `count`
    /// times on the calling thread (as the watchdog's), in nanoseconds.
    package struct ContextReadTimings {
        /// At the first look at a busy stretch; with each sample; at detection and the end.
        package var edge: [Double] = []
        package var look: [Double] = []
        package var counters: [Double] = []
        package var facts: [Double] = []
        /// What the probe found to read (a throttling counter, a freezer, the memory pressure's source).
        package var reads: String = ""
    }

    package static func timeContextReads(tid: Int32, count: Int) -> ContextReadTimings? {
        guard let start = ProcTask(tid: tid).stat()?.startTimeTicks else { return nil }
        let thread = MonitoredThread(tid: tid, startTimeTicks: start, stackLow: 0, stackHigh: 0, name: nil, isMain: false)
        let probe = LinuxHangContextProbe(thread: thread)
        let clock = SystemMonotonicClock()
        var timings = ContextReadTimings()
        func time(_ read: () -> Void) -> Double {
            let began = clock.nanoseconds()
            read()
            return Double(clock.nanoseconds() - began)
        }
        for _ in 0..<count {
            timings.edge.append(time { _ = probe.edge(at: 0) })
            timings.look.append(time { _ = probe.look(at: 0) })
            timings.counters.append(time { _ = probe.counters(at: 0) })
        }
        for _ in 0..<max(1, count / 10) { timings.facts.append(time { _ = probe.facts() }) }
        let counters = probe.counters(at: 0)
        let facts = probe.facts()
        var found: [String] = []
        if counters.throttling?.throttledNanoseconds != nil { found.append("throttled time") }
        if counters.freezing != nil { found.append("freezer state") }
        if counters.frozenMicroseconds != nil { found.append("frozen_usec") }
        if let source = facts.memoryPressureSource { found.append("memory pressure (\(source.hasPrefix("cgroup") ? "cgroup" : "system"))") }
        timings.reads = found.isEmpty ? "none" : found.joined(separator: ", ")
        return timings
    }
}
