import HangWatchReport

extension ReportBuilder {
    /// A thread dump as a report (`source` `dump`): every thread in `threads` with its state, time
    /// off its CPU, stack and waits; `waitsFor` the first wait cycle found (then the verdict is
    /// `deadlocked`); no samples, no duration.
    /// `kind` `.tasks`: the threads of a task dump (its tasks are added to it: `build(tasks:…)`).
    func build(dump: ProcessDump, id: String, images: ImageMap, kind: ActivitySourceKind = .dump) -> HangReport {
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
            thread: HangReport.ThreadInfo(tid: main?.tid ?? pid, name: main?.name, isMain: main?.tid == pid), source: kind.rawValue,
            startedAt: wallClock(dump.microseconds), detectedAt: wallClock(dump.microseconds), endedAt: wallClock(dump.microseconds),
            durationMs: 0, thresholdMs: 0, outcome: .recovered, activity: kind.activityName ?? "dump", mode: nil, samples: [], stacks: table.stacks,
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

extension ReportBuilder {
    /// A task dump as a report (`source` `tasks`): the threads of `threads` (as a thread dump's),
    /// and every task of `census`, whose chains and actors' types join the report's frames.
    /// `sightings` (this process's, kept between dumps) tells how long each task was seen unchanged.
    func build(tasks census: TaskCensus, threads: ProcessDump, sightings: inout TaskSightings, id: String, images: ImageMap) -> HangReport {
        var report = build(dump: threads, id: id, images: images, kind: .tasks)
        let layout = try? census.layout.get()
        let observed = census.tasks.filter { $0.address != census.probe }.map { task in
            (id: task.id, wait: TaskSightings.Wait(
                context: task.resumeContext, record: task.dependencyRecord, state: layout.map { TaskState(task, layout: $0).rawValue } ?? ""))
        }
        let first = sightings.earliest == nil
        let unchanged = layout == nil ? [:] : sightings.observe(observed, at: threads.microseconds)
        let since = first ? nil : sightings.earliest.map(wallClock)
        let blocked = (report.threads ?? []).filter { thread in
            CooperativePool(threadName: thread.name) != nil && thread.verdict == HangReport.ThreadVerdict.blocked.rawValue
        }.map(\.tid)
        var builder = TaskDumpBuilder(frames: ReportStackTable(images: images, adopting: report))
        report.tasks = builder.build(census, unchanged: unchanged, sightingsSince: since, blockedPoolThreads: blocked)
        report.frames = builder.frames.frames
        report.stacks = builder.frames.stacks
        return report
    }
}

extension ReportBuilder {
    /// A recent-window dump as a report (`source` `recent`): `recent`, every watch of the process
    /// with its flight recorder's window ending at `microseconds`; no threads, no samples, no
    /// duration. `thread` is the first watch's thread (else the main thread).
    func build(recent: HangReport.Recent, id: String, microseconds: UInt64) -> HangReport {
        let now = wallClock(microseconds)
        let first = recent.sources.lazy.compactMap(\.thread).first
        var report = HangReport(
            id: id, service: service, host: host, pid: pid, process: process,
            thread: first ?? HangReport.ThreadInfo(tid: pid, name: nil, isMain: true), source: ActivitySourceKind.recent.rawValue,
            startedAt: now, detectedAt: now, endedAt: now, durationMs: 0, thresholdMs: 0, outcome: .recovered,
            activity: ActivitySourceKind.recent.activityName ?? "recent", mode: nil, samples: [], stacks: [], heaviestStack: nil, frames: [],
            images: [], signature: String(repeating: "0", count: 16),
            context: HangReport.Context(
                verdict: .unknown, onCpuRatio: nil, runQueueRatio: nil, blockedIn: nil, threadStates: [:], rssBytes: nil, loadAverage: nil,
                cpuCount: ProcessSnapshot.read().cpuCount, watchdogOversleepMs: 0, debuggerAttached: false, processStopped: false),
            capture: HangReport.CaptureSummary(
                signal: signal, sampleIntervalMs: 0, samplesTaken: 0, samplesDropped: 0, maxFrames: maxFrames, pauseMedianUs: nil,
                pauseMaxUs: nil, errors: [], reportsSuppressed: 0))
        report.recent = recent
        report.resource = resource
        return report
    }
}
