@_spi(Internal) import HangWatchReport

extension ReportBuilder {
    /// The report's `context`: what the rest of the system did (the thread's CPU and run-queue
    /// ratios, its states, the process's RSS and load, the CPU limit, throttling, a stop and what
    /// caused it, paging) and the verdict those prove (`HangVerdict`, `ContextFindings`).
    func context(_ recording: HangRecording, deadlocked: Bool = false) -> HangReport.Context {
        let samples = recording.samples
        var states: [String: Int] = [:]
        for sample in samples {
            if let state = sample.state { states[String(state), default: 0] += 1 }
        }
        var onCPU: Double?
        var runQueue: Double?
        if let baseline = recording.baseline,
            let last = samples.last(where: { $0.onCPUNanoseconds != nil && $0.runQueueNanoseconds != nil }),
            last.microseconds > recording.detectedMicroseconds + 1000
        {
            let wall = Double(last.microseconds - recording.detectedMicroseconds) * 1000
            onCPU = Self.ratio(Double(last.onCPUNanoseconds! &- baseline.onCPUNanoseconds) / wall)
            runQueue = Self.ratio(Double(last.runQueueNanoseconds! &- baseline.runQueueNanoseconds) / wall)
        }
        let blockedCalls = samples.filter { $0.state == "S" || $0.state == "D" }.compactMap(\.syscall)
        let blockedIn = Dictionary(grouping: blockedCalls, by: { $0 }).max { ($0.value.count, -$0.key) < ($1.value.count, -$1.key) }?.key
        let running = samples.filter { $0.state == "R" }.count
        let seen = samples.filter { $0.state != nil }.count
        let findings = Findings(recording, running: running, seen: seen)
        let stopped = recording.stopSuspected || samples.contains { $0.state == "T" || $0.state == "t" } || findings.stop != nil
        let verdict = HangVerdict.decide(
            HangVerdict.Evidence(
                debuggerAttached: recording.process.debuggerAttached, deadlocked: deadlocked, stopped: stopped, onCPU: onCPU,
                runQueue: runQueue, running: running, seen: seen, noState: samples.allSatisfy { $0.state == nil },
                throttledShare: findings.throttling?.share, pagingShare: findings.paging?.share))
        let facts = recording.context.facts
        var context = HangReport.Context(
            verdict: verdict, onCpuRatio: onCPU, runQueueRatio: runQueue,
            blockedIn: blockedIn.map(SyscallNames.name), threadStates: states, rssBytes: recording.process.rssBytes,
            loadAverage: recording.process.loadAverage, cpuCount: facts?.cpuCount ?? recording.process.cpuCount,
            watchdogOversleepMs: Self.milliseconds(Int64(recording.watchdogOversleepMicroseconds)),
            debuggerAttached: recording.process.debuggerAttached, processStopped: stopped)
        if let facts {
            context.hostCpuCount = facts.hostCPUs
            context.cpuLimit = facts.cpuLimit
        }
        if let start = recording.context.start {
            context.countersFromMs = Self.milliseconds(Int64(start.microseconds) - Int64(min(start.microseconds, recording.startMicroseconds)))
        }
        // (Written wherever the counter could be read, 0 included: the evidence that no limit held it.)
        if let throttling = findings.throttling {
            context.throttledMs = throttling.throttledMs
            context.cgroupThrottledMs = throttling.counterMs
            context.throttledPeriods = throttling.periods
        }
        if let stop = findings.stop {
            context.stoppedMs = stop.stoppedMs
            context.stoppedBy = stop.by
            context.stopEvidence = stop.evidence
            context.busyMs = Self.round(max(0, findings.durationMs - stop.stoppedMs))
        }
        // Only with faults of the thread's own: without them, a stall (the system's, its cgroup's
        // other tasks') says nothing of this hang.
        if let paging = findings.paging, paging.majorFaults > 0 {
            context.majorFaults = paging.majorFaults
            context.memoryStallMs = paging.stallMs
            context.memoryPressureSource = paging.stallMs == nil ? nil : facts?.memoryPressureSource
        }
        return context
    }

    /// The findings of a recording's context counters, from its start to its end (or, while it
    /// lasts, its latest sample).
    struct Findings {
        var durationMs: Double = 0
        var throttling: ContextFindings.Throttling?
        var stop: ContextFindings.Stop?
        var paging: ContextFindings.Paging?

        init(_ recording: HangRecording, running: Int, seen: Int) {
            let record = recording.context
            let endMicroseconds = recording.lastKnownMicroseconds
            durationMs = ReportBuilder.milliseconds(Int64(endMicroseconds) - Int64(recording.startMicroseconds))
            let start = record.start
            let last = record.end ?? record.latest
            // The span the counters cover: from the start's read to the hang's end (a read after
            // the end sees the thread idle; the counters' lag of a period is what it catches).
            let window = start.map { endMicroseconds &- min(endMicroseconds, $0.microseconds) }
            if let window, let start, let last, let before = start.throttling?.throttledNanoseconds,
                let after = last.throttling?.throttledNanoseconds, let from = start.schedule, let to = last.schedule
            {
                let periods = start.throttling?.throttledPeriods.flatMap { first in last.throttling?.throttledPeriods.map { $0 &- min($0, first) } }
                throttling = ContextFindings.throttling(
                    wallMicroseconds: window, onCPUNanoseconds: to.onCPUNanoseconds &- min(to.onCPUNanoseconds, from.onCPUNanoseconds),
                    throttledNanoseconds: after &- min(after, before), periods: periods)
            }
            let facts = record.facts
            var evidence = ContextFindings.StopEvidence(
                judged: recording.stopSuspected || recording.samples.contains { $0.state == "T" || $0.state == "t" },
                durationMicroseconds: endMicroseconds &- min(endMicroseconds, recording.startMicroseconds),
                freezerSeen: record.freezerSeen, tracer: record.tracerSeen, continueStampInstalled: facts?.continueStampInstalled ?? false,
                v1FreezerCgroup: facts?.v1FreezerCgroup, windowMicroseconds: window, running: running, seen: seen,
                gapMicroseconds: record.stopGapMicroseconds, gapBeforeWindowMicroseconds: record.stopGapBeforeStartMicroseconds)
            if let before = start?.frozenMicroseconds, let after = last?.frozenMicroseconds, after > before {
                evidence.frozenMicroseconds = after - before
                evidence.v2Cgroup = facts?.v2Cgroup
            }
            if let first = start?.continues, let now = last?.continues, now > first {
                evidence.continues = now - first
                evidence.lastContinueOffsetMicroseconds = last?.lastContinueMicroseconds.map { $0 &- min($0, recording.startMicroseconds) }
            }
            if let from = start?.schedule, let to = last?.schedule {
                evidence.runnableMicroseconds = (to.runnableNanoseconds &- min(to.runnableNanoseconds, from.runnableNanoseconds)) / 1000
            }
            stop = ContextFindings.stop(evidence)
            if let window, let start, let last, let before = start.majorFaults, let after = last.majorFaults {
                let stall = start.memoryStallMicroseconds.flatMap { first in last.memoryStallMicroseconds.map { $0 &- min($0, first) } }
                let onCPU = start.schedule.flatMap { from in last.schedule.map { $0.onCPUNanoseconds &- min($0.onCPUNanoseconds, from.onCPUNanoseconds) } }
                paging = ContextFindings.paging(
                    majorFaults: after &- min(after, before), stallMicroseconds: stall, wallMicroseconds: window, onCPUNanoseconds: onCPU ?? 0,
                    own: facts?.memoryPressureIsOwn ?? false, inCalls: recording.samples.filter { $0.syscall != nil }.count, seen: seen)
            }
        }
    }
}
