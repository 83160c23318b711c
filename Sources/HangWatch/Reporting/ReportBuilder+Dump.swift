import HangWatchReport

extension ReportBuilder {
    /// A thread dump as a report (`source` `dump`): every thread in `threads` with its state, time
    /// off its CPU, stack and waits; `waitsFor` the first wait cycle found (then the verdict is
    /// `deadlocked`); no samples, no duration.
    func build(dump: ProcessDump, id: String, images: ImageMap) -> HangReport {
        var table = ReportStackTable(images: images)
        var cycles: [[Int32]] = []
        var cycleWait: HangReport.WaitsFor?
        let snapshots = dump.threads.map { look -> HangReport.ThreadSnapshot in
            let stack = table.add(look.sample)
            let state = look.sample.state.map(String.init)
            let verdict: HangReport.ThreadVerdict =
                switch look.sample.state {
                case "R": .computing
                case "S", "D": .blocked
                default: .unknown
                }
            var snapshot = HangReport.ThreadSnapshot(
                tid: look.tid, name: look.name, state: state, syscall: look.sample.syscall.map(SyscallNames.name), stack: stack,
                verdict: verdict.rawValue, method: look.sample.method?.rawValue, error: stack == nil ? look.sample.failure?.rawValue : nil)
            snapshot.offCPUMs = look.offCPUMicroseconds.map { Self.milliseconds(Int64($0)) }
            if let wait = look.wait {
                let waits = Self.waitsFor(wait, table: &table)
                snapshot.waitsFor = waits
                if let cycle = wait.cycle, !cycles.contains(where: { Set($0) == Set(cycle) }) {
                    cycles.append(cycle)
                    if cycleWait == nil { cycleWait = waits }
                }
            }
            return snapshot
        }
        let main = dump.threads.first { $0.tid == pid } ?? dump.threads.first
        var report = HangReport(
            id: id, service: service, host: host, pid: pid, process: process,
            thread: HangReport.ThreadInfo(tid: main?.tid ?? pid, name: main?.name, isMain: main?.tid == pid), source: "dump",
            startedAt: wallClock(dump.microseconds), detectedAt: wallClock(dump.microseconds), endedAt: wallClock(dump.microseconds),
            durationMs: 0, thresholdMs: 0, outcome: .recovered, activity: "dump", mode: nil, samples: [], stacks: table.stacks,
            heaviestStack: nil, frames: table.frames, images: images.reportImages, signature: String(repeating: "0", count: 16),
            context: HangReport.Context(
                verdict: cycles.isEmpty ? .unknown : .deadlocked, onCpuRatio: nil, runQueueRatio: nil, blockedIn: nil, threadStates: [:],
                rssBytes: nil, loadAverage: nil, cpuCount: ProcessSnapshot.read().cpuCount, watchdogOversleepMs: 0, debuggerAttached: false,
                processStopped: false),
            capture: HangReport.CaptureSummary(
                signal: signal, sampleIntervalMs: 0, samplesTaken: 0, samplesDropped: 0, maxFrames: maxFrames, pauseMedianUs: nil,
                pauseMaxUs: nil, errors: [], reportsSuppressed: 0))
        report.capture.unavailable = unavailable
        report.threads = snapshots
        report.waitsFor = cycleWait
        report.resource = resource
        return report
    }
}
