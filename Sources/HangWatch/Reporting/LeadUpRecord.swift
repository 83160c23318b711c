import HangWatchReport

/// A run loop's flight recorder as the watchdog read it when a hang began (its buckets and its
/// current busy stretch, in the latch's units of 1024 ns), and what the report makes of it:
/// `before` and `kind`. Pure: tests build one from numbers.
struct LeadUpRecord: Sendable, Equatable {
    /// The window's buckets, oldest first; the last holds the onset.
    var buckets: [UnsafeLeadUpRecorder.Bucket]
    /// When the piece that hung began (units).
    var onsetUnits: UInt64
    /// The busy stretch the piece belongs to: its start, the iterations begun in it so far (the
    /// piece's own, if it began one, included), its longest piece that ended.
    var stretchStartUnits: UInt64
    var stretchIterations: UInt64
    var stretchLongestUnits: UInt64
    /// The piece that hung began an iteration (its activity is `beforeSources`).
    var onsetBeganIteration: Bool
    /// The near misses the watchdog sampled in the window before the onset, oldest first.
    var nearMisses: [NearMissLog.Entry] = []
    /// The loop thread's CPU figures of each bucket (the watchdog's readings: `LeadUpCPULog`), the
    /// last counted up to the onset; empty where none were read.
    var cpu: [LeadUpCPULog.Figures?] = []

    /// Reads `recorder` for a hang whose piece began at `onset` (its latch word) with `activity`.
    static func read(_ recorder: UnsafeLeadUpRecorder, onset: ActivitySnapshot) -> LeadUpRecord {
        let onsetUnits = onset.word >> 8
        let stretch = recorder.stretch()
        return LeadUpRecord(
            buckets: recorder.read(endingAt: onsetUnits), onsetUnits: onsetUnits, stretchStartUnits: stretch.start,
            stretchIterations: stretch.iterations, stretchLongestUnits: stretch.longestUnits,
            onsetBeganIteration: onset.activity == HangMonitor.Activity.beforeSources.rawValue)
    }

    static func milliseconds(units: UInt64) -> Double {
        ReportBuilder.round(Double(units) * 1.024 / 1000)
    }

    /// The spans of `buckets` on `CLOCK_MONOTONIC` (µs), the last ending at `endUnits`: what
    /// `LeadUpCPULog.figures(of:)` covers.
    static func spans(of buckets: [UnsafeLeadUpRecorder.Bucket], endingAt endUnits: UInt64) -> [(start: UInt64, end: UInt64)] {
        func microseconds(_ units: UInt64) -> UInt64 { units << 10 / 1000 }
        return buckets.enumerated().map { offset, bucket in
            let start = bucket.epoch * UnsafeLeadUpRecorder.bucketUnits
            let end = offset == buckets.count - 1 ? max(start, endUnits) : start + UnsafeLeadUpRecorder.bucketUnits
            return (microseconds(start), microseconds(end))
        }
    }

    /// The report's `before`.
    var leadUp: HangReport.LeadUp {
        // The window up to the onset, as the heartbeat reads one up to now (the piece that hung
        // is the onset's, not before it).
        // Rounded as written, so that the reading says what `busyRatio` (and `show`'s line) says.
        let ratio = ReportBuilder.ratio(RecorderBusyWindow(buckets: buckets, nowUnits: onsetUnits, openPieceStartUnits: nil).ratio)
        return Self.window(buckets, drawn: buckets, ratio: ratio, reading: reading(ratio: ratio), cpu: cpu)
    }

    /// A window in `before`'s shape: `buckets` as read (their torn count), drawn as `drawn` (the
    /// same, or with a piece in progress added: `RecentWindow`), with its ratio and reading, and
    /// each bucket's CPU figures where `cpu` has them (a busy window's reading then ends with
    /// what they say: `cpuPhrase`).
    static func window(
        _ buckets: [UnsafeLeadUpRecorder.Bucket], drawn: [UnsafeLeadUpRecorder.Bucket], ratio: Double, reading: String,
        cpu: [LeadUpCPULog.Figures?] = []
    ) -> HangReport.LeadUp {
        let figures = cpu.count == drawn.count ? cpu : []
        var leadUp = HangReport.LeadUp(
            // Nominally: a bucket is 97,656 units of 1024 ns, 2.6 ppm short of 100 ms.
            windowMs: Double(buckets.count * 100), bucketMs: 100,
            buckets: drawn.enumerated().map { offset, bucket in
                HangReport.LeadUp.Bucket(
                    busyMs: milliseconds(units: bucket.busyUnits), stretches: Int(bucket.stretches), iterations: Int(bucket.iterations),
                    longestMs: milliseconds(units: bucket.longestUnits), cpu: figures.isEmpty ? nil : figures[offset].map(Self.cpu))
            },
            busyRatio: ratio, reading: reading,
            tornBuckets: buckets.contains(where: \.torn) ? buckets.filter(\.torn).count : nil)
        let read = figures.compactMap { $0 }
        if let first = read.first {
            let summary = Self.cpu(read.dropFirst().reduce(first, +))
            leadUp.cpu = summary
            if ratio >= 0.1 { leadUp.reading += cpuPhrase(summary, busy: leadUp.buckets) }
        }
        return leadUp
    }

    static func cpu(_ figures: LeadUpCPULog.Figures) -> HangReport.LeadUp.CPU {
        func ms(_ nanoseconds: UInt64) -> Double { ReportBuilder.round(Double(nanoseconds) / 1e6) }
        return HangReport.LeadUp.CPU(
            coveredMs: ms(figures.coveredNanoseconds), onCpuMs: ms(figures.onCPUNanoseconds), runQueueMs: ms(figures.runQueueNanoseconds),
            throttledMs: figures.throttledNanoseconds.map(ms))
    }

    /// How the reading of a busy window ends when its thread waited for a CPU or its cgroup was
    /// throttled: `, 39 % of it waiting for a CPU (its cgroup throttled 1210 ms)`. "It" is the busy
    /// time of the buckets the readings cover; a wait under 10 % of it and throttling under 10 ms
    /// go unsaid, as does a window with under 100 ms covered.
    static func cpuPhrase(_ cpu: HangReport.LeadUp.CPU, busy buckets: [HangReport.LeadUp.Bucket]) -> String {
        guard cpu.coveredMs >= 100 else { return "" }
        let busy = buckets.filter { $0.cpu != nil }.reduce(0) { $0 + $1.busyMs }
        let waiting = busy > 0 ? min(1, cpu.runQueueMs / busy) : 0
        let throttled = cpu.throttledMs.map { Int($0.rounded()) } ?? 0
        let wait = waiting >= 0.1 ? "\(Int((waiting * 100).rounded())) % of it waiting for a CPU" : nil
        let limit = throttled >= 10 ? "its cgroup throttled \(throttled) ms" : nil
        switch (wait, limit) {
        case let (wait?, limit?): return ", \(wait) (\(limit))"
        case let (wait?, nil): return ", " + wait
        case let (nil, limit?): return ", " + limit
        case (nil, nil): return ""
        }
    }

    /// `busy 92 % for 4.8 s before onset`: the run of buckets at least half busy that ends at the
    /// onset (the onset's own bucket judged only when it had 50 ms before the onset), with its busy
    /// ratio; `idle before onset (busy 1 %)` when the window was under 10 % busy; else
    /// `busy 37 % in the 5 s before onset`.
    func reading(ratio: Double) -> String {
        let percent = Int((ratio * 100).rounded())
        if ratio < 0.1 { return "idle before onset (busy \(percent) %)" }
        let bucketUnits = UnsafeLeadUpRecorder.bucketUnits
        var run: (busy: UInt64, covered: UInt64) = (0, 0)
        for (offset, bucket) in buckets.enumerated().reversed() {
            let start = bucket.epoch * bucketUnits
            var covered = bucketUnits
            if offset == buckets.count - 1 {
                covered = onsetUnits > start ? onsetUnits - start : 0
                if covered < bucketUnits / 2 {
                    run.busy += bucket.busyUnits
                    run.covered += covered
                    continue
                }
            }
            guard bucket.busyUnits * 2 >= covered else { break }
            run.busy += bucket.busyUnits
            run.covered += covered
        }
        let seconds = Self.seconds(units: run.covered)
        if run.covered >= bucketUnits {
            let runPercent = Int((min(1, Double(run.busy) / Double(run.covered)) * 100).rounded())
            return "busy \(runPercent) % for \(seconds) s before onset"
        }
        let window = Self.seconds(units: UInt64(buckets.count) * bucketUnits)
        return "busy \(percent) % in the \(window) s before onset"
    }

    /// Seconds to one decimal, without a trailing `.0`.
    static func seconds(units: UInt64) -> String {
        let tenths = (Double(units) * 1.024 / 100_000).rounded()
        let whole = Int(tenths) / 10
        let tenth = Int(tenths) % 10
        return tenth == 0 ? "\(whole)" : "\(whole).\(tenth)"
    }

    /// The report's `kind` for a run-loop hang of `thresholdMicroseconds` (`RunLoopHangKind`).
    func kind(thresholdMicroseconds: UInt64) -> HangReport.Kind {
        // The stretch the recorder holds is the hang's unless it began after the onset (the hang
        // ended and another stretch began before the read).
        guard stretchStartUnits <= onsetUnits else {
            return HangReport.Kind(name: .unknown, reason: "the loop moved on before its stretch was read")
        }
        let before = stretchIterations - (onsetBeganIteration && stretchIterations > 0 ? 1 : 0)
        let busyBefore = (onsetUnits - stretchStartUnits) << 10 / 1000
        return RunLoopHangKind.decide(
            iterationsBefore: before, busyBeforeMicroseconds: busyBefore,
            longestBeforeMicroseconds: stretchLongestUnits << 10 / 1000, thresholdMicroseconds: thresholdMicroseconds)
    }
}

/// The kind of a run-loop hang, from what the loop's observers prove. A run-loop hang is one busy
/// piece (from one observed activity to the next) past the threshold. Inside one piece CFRunLoop
/// runs every block queued with `CFRunLoopPerformBlock`, every due timer, the whole drain of the
/// main dispatch queue or a port's message, and its version-0 sources: one piece, one iteration,
/// proves nothing about how many jobs ran, so `oneJob` is never proven here. What the observers do
/// prove is the stretch before the piece: iterations the loop began without going to sleep in
/// between. Several of them, each much shorter than the threshold (the longest at most a quarter
/// of it), that kept the loop busy for at least the threshold before the piece began, are a backlog
/// that ran into the piece past the threshold: `mixed`. Anything else: `unknown`.
enum RunLoopHangKind {
    static func decide(
        iterationsBefore: UInt64, busyBeforeMicroseconds: UInt64, longestBeforeMicroseconds: UInt64, thresholdMicroseconds: UInt64
    ) -> HangReport.Kind {
        let busyMs = ReportBuilder.milliseconds(Int64(busyBeforeMicroseconds))
        let longestMs = ReportBuilder.milliseconds(Int64(longestBeforeMicroseconds))
        func kind(_ name: HangReport.Kind.Name, _ reason: String) -> HangReport.Kind {
            HangReport.Kind(name: name, reason: reason, iterationsBefore: Int(iterationsBefore), busyBeforeMs: busyMs)
        }
        if iterationsBefore >= 2, busyBeforeMicroseconds >= thresholdMicroseconds,
            longestBeforeMicroseconds * 4 <= thresholdMicroseconds
        {
            return kind(
                .mixed,
                "\(iterationsBefore) iterations without sleeping for \(Self.format(busyMs)) ms (the longest piece \(Self.format(longestMs)) ms) before the piece past the threshold"
            )
        }
        if iterationsBefore == 0 || busyBeforeMicroseconds == 0 {
            return kind(
                .unknown,
                "one piece past the threshold from the loop's wake; one piece can run one job or many (blocks, due timers, the main queue's drain)"
            )
        }
        return kind(
            .unknown,
            "\(iterationsBefore) iterations in \(Self.format(busyMs)) ms before the piece past the threshold: not a backlog of short iterations past the threshold; one piece can run one job or many"
        )
    }

    /// The kind `piece` (from the stretch before the piece, `decide`) with what the hang's samples
    /// found on the loop's thread (`SampledTasks`: its current-task word read around each sample).
    /// A main loop runs main-actor jobs when it drains the main queue, and a drain runs only the
    /// jobs queued when it began (libdispatch takes a snapshot of the queue): a job the drain's
    /// own jobs enqueue, the same task's next job among them, waits for the next turn, which
    /// passes an observed busy activity and so ends the piece. One hang is one piece, so reads
    /// that found the same task found the same job:
    /// - every read (four or more; the watchdog's wakes while the piece was busy, before its
    ///   threshold, read it too) found one task, the first and the last a threshold apart: one job
    ///   held the loop past the threshold, `oneJob`, unless the stretch before was a backlog
    ///   (`mixed` stays);
    /// - two or more tasks: `unknown` as `piece` says, with how many ran (a lower bound on the
    ///   jobs; whether each was short the reads cannot prove);
    /// - otherwise `piece` as it was (a block, a timer, a source: no task to read).
    static func fromTasks(_ tasks: SampledTasks?, samples: Int, thresholdMicroseconds: UInt64, piece: HangReport.Kind) -> HangReport.Kind {
        guard piece.name != HangReport.Kind.Name.mixed.rawValue, let tasks, let finding = tasks.finding(thresholdMicroseconds: thresholdMicroseconds)
        else { return piece }
        var kind = piece
        switch finding {
        case .several(let count):
            kind.reason += "; \(count) tasks ran at \(samples) samples (\(tasks.reads) reads): at least \(count) jobs in the piece"
        case .same(let task, let span, true):
            kind.name = HangReport.Kind.Name.oneJob.rawValue
            kind.reason = "\(SampledTasks.sameTask(task, span: span)), in one turn of the loop: one job past the threshold"
        case .same(let task, let span, false):
            kind.reason += "; \(SampledTasks.sameTask(task, span: span)): not proven past the threshold by itself"
        case .partly:
            break
        }
        return kind
    }

    static func format(_ milliseconds: Double) -> String {
        milliseconds == milliseconds.rounded() ? String(Int(milliseconds)) : String(milliseconds)
    }
}
