import Foundation
import HangWatchReport

/// Turns a `HangRecording` into a `HangReport`. Pure: the images, the wall clock and the identity
/// of the process come in as values.
struct ReportBuilder: Sendable {
    var service: String
    var host: String
    var pid: Int32
    var process: HangReport.Process
    var signal: Int32
    var maxFrames: Int
    /// Wall-clock time of a monotonic instant (microseconds).
    var wallClock: @Sendable (UInt64) -> Date
    /// What kind of loop the monitor watches (the report's `source`): `runloop` or `scope`.
    var source = ActivitySourceKind.runLoop
    /// What the monitor cannot read in this process (`capture.unavailable` of every report).
    var unavailable: [String]?
    /// The service's release (every report's `serviceVersion`).
    var serviceVersion: ServiceVersion?
    /// Where the process runs (every report's `resource`).
    var resource: WorkloadIdentity?

    func build(_ recording: HangRecording, images: ImageMap, outcome: HangReport.Outcome) -> HangReport {
        let source = recording.source ?? source
        var table = ReportStackTable(images: images)
        let sampleStacks = recording.samples.map { table.add($0) }

        // The loop's own timestamps come from the coarse clock (a tick behind at most); a sample
        // taken in the hang proves it lasted at least until then.
        let end = max(recording.lastKnownMicroseconds, recording.samples.last?.microseconds ?? 0)
        let start = recording.startMicroseconds
        var reportSamples: [HangReport.Sample] = []
        for (offset, sample) in recording.samples.enumerated() {
            reportSamples.append(
                HangReport.Sample(
                    offsetMs: Self.milliseconds(Int64(sample.microseconds) - Int64(start)),
                    stack: sampleStacks[offset], method: sample.method?.rawValue, state: sample.state.map(String.init),
                    syscall: sample.syscall.map(SyscallNames.name),
                    cpuMs: Self.delta(sample.onCPUNanoseconds, recording.baseline?.onCPUNanoseconds),
                    runQueueMs: Self.delta(sample.runQueueNanoseconds, recording.baseline?.runQueueNanoseconds),
                    pauseUs: sample.pauseNanoseconds.map { Self.round(Double($0) / 1000) },
                    error: sample.failure?.rawValue, cutCallShort: sample.cutCallShort ? true : nil))
        }

        let weighed = recording.samples.enumerated().compactMap { offset, sample -> HeaviestPath.Sample? in
            guard let stack = sampleStacks[offset] else { return nil }
            let next = offset + 1 < recording.samples.count ? recording.samples[offset + 1].microseconds : end
            return HeaviestPath.Sample(
                frames: table.stacks[stack].frames, weight: next > sample.microseconds ? next - sample.microseconds : 0,
                stack: stack, complete: !sample.truncated)
        }
        var heaviest: HangReport.HeaviestStack?
        if let path = HeaviestPath.find(weighed, identity: { Self.pathIdentity(table.frames[$0]) }) {
            heaviest = HangReport.HeaviestStack(
                stack: path.stack, sampleCount: path.sampleCount, weightMs: Self.milliseconds(Int64(path.weight)),
                frames: table.stacks[path.stack].frames.map { table.frames[$0] })
        }
        let reportImages = images.reportImages
        // Computing at the heaviest stack: no sample of it blocked (as `HangReport.heaviestWait`).
        let computing = heaviest.map { stack in
            !reportSamples.contains { $0.stack == stack.stack && ($0.state == "S" || $0.state == "D") }
        } ?? false
        let signature = StackSignature.compute(
            frames: heaviest?.frames ?? [], images: reportImages, complete: heaviest.map { !table.stacks[$0.stack].truncated } ?? true,
            computing: computing)
        let waitsFor = self.waitsFor(recording, table: &table, start: recording.startMicroseconds)
        let queued = recording.queuedTasks.map { queuedTasks($0, table: &table) }
        let nearMisses = recording.leadUp.map { Self.nearMisses($0.nearMisses, onset: start, table: &table) }

        var report = HangReport(
            id: recording.id, service: service, host: host, pid: pid, process: process,
            thread: HangReport.ThreadInfo(
                tid: recording.thread?.tid ?? 0, name: recording.thread?.name, isMain: recording.thread?.isMain ?? false),
            source: source.rawValue, startedAt: wallClock(start), detectedAt: wallClock(recording.detectedMicroseconds),
            endedAt: recording.endMicroseconds.map { _ in wallClock(end) },
            durationMs: Self.milliseconds(Int64(end) - Int64(start)),
            thresholdMs: Self.milliseconds(Int64(recording.thresholdMicroseconds)), outcome: outcome,
            activity: source.activityName ?? HangMonitor.Activity.named(recording.activity),
            mode: source == .runLoop ? recording.mode : nil, samples: reportSamples,
            stacks: table.stacks, heaviestStack: heaviest, frames: table.frames, images: reportImages, signature: signature,
            context: context(recording, deadlocked: waitsFor?.deadlock != nil), capture: capture(recording))
        report.edges = (recording.edges ?? (source == .poolJob || source == .concurrencyPool ? .sampled : nil))?.rawValue
        report.waitsFor = waitsFor
        report.queuedTasks = queued
        if let leadUp = recording.leadUp {
            report.before = leadUp.leadUp
            report.before?.nearMisses = nearMisses.flatMap { $0.isEmpty ? nil : $0 }
            report.nameNearMisses()
        }
        report.kind = kind(of: recording)
        let labels = HangLabels.bounded(recording.labels ?? [])
        report.labels = labels.labels
        report.labelsOmitted = labels.omitted > 0 ? labels.omitted : nil
        report.monitor = .current
        report.serviceVersion = serviceVersion
        report.resource = resource
        return report
    }

    /// What held the loop, as far as the source proves it: a run loop's from its lead-up and the
    /// tasks its reads found (an event loop's recorder counts no iterations: its lead-up proves
    /// no kind), a pool job's as its watch found it, the main queue's from its reads.
    func kind(of recording: HangRecording) -> HangReport.Kind? {
        let threshold = recording.thresholdMicroseconds
        if source == .runLoop, let leadUp = recording.leadUp {
            return RunLoopHangKind.fromTasks(
                recording.tasks, samples: recording.samples.count, thresholdMicroseconds: threshold, piece: leadUp.kind(thresholdMicroseconds: threshold))
        }
        if let kind = recording.kind { return kind }
        guard source == .dispatchMain else { return nil }
        return QueueHangKind.decide(recording.tasks, samples: recording.samples.count, thresholdMicroseconds: threshold)
    }

    /// The lead-up's near misses, their stacks added to `table`: each from the onset (the hang's
    /// start), how long it had run when sampled.
    static func nearMisses(_ entries: [NearMissLog.Entry], onset: UInt64, table: inout ReportStackTable) -> [HangReport.LeadUp.NearMiss] {
        entries.map { entry in
            HangReport.LeadUp.NearMiss(
                offsetMs: milliseconds(Int64(entry.startMicroseconds) - Int64(onset)),
                atLeastMs: milliseconds(Int64(entry.sample.microseconds) - Int64(entry.startMicroseconds)),
                stack: table.add(entry.sample), error: entry.sample.failure?.rawValue)
        }
    }

    /// What makes two frames one node of the heaviest path: the same function of the same image
    /// (samples at different instructions of one function agree), else the same address.
    static func pathIdentity(_ frame: HangReport.Frame) -> String {
        frame.image.map { "\($0):\(frame.functionOffset ?? frame.offset ?? frame.address)" } ?? frame.address
    }

    /// One frame as the report records it: its image, offsets and (for the vDSO, which is no file a
    /// symbolicator could open later) its name, looked up at `lookup`.
    static func frame(_ address: UInt, lookup: UInt, images: ImageMap) -> HangReport.Frame {
        let image = images.imageIndex(containing: address)
        let offset = image.map { Hex.format(address &- images.images[$0].bias) }
        let functionOffset = image.flatMap { index in
            images.functionStart(of: lookup).map { Hex.format($0 &- images.images[index].bias) }
        }
        return HangReport.Frame(
            address: Hex.format(address), image: image, offset: offset, functionOffset: functionOffset,
            symbol: images.memorySymbolName(of: lookup))
    }

    private func capture(_ recording: HangRecording) -> HangReport.CaptureSummary {
        let pauses = recording.samples.compactMap(\.pauseNanoseconds).sorted()
        let cutShort = recording.callsCutShort
        let failures = Dictionary(grouping: recording.samples.compactMap(\.failure), by: { $0 })
        let errors = failures.map { failure, occurrences in
            HangReport.CaptureError(kind: failure.rawValue, count: occurrences.count, message: failure.message)
        }.sorted { $0.kind < $1.kind }
        var summary = HangReport.CaptureSummary(
            signal: signal, sampleIntervalMs: Self.milliseconds(Int64(recording.baseSampleIntervalMicroseconds)),
            samplesTaken: recording.samples.count + recording.samplesDropped, samplesDropped: recording.samplesDropped,
            maxFrames: maxFrames, pauseMedianUs: pauses.isEmpty ? nil : Self.round(Double(pauses[pauses.count / 2]) / 1000),
            pauseMaxUs: pauses.last.map { Self.round(Double($0) / 1000) }, errors: errors, reportsSuppressed: 0,
            callsCutShort: cutShort > 0 ? cutShort : nil)
        summary.unavailable = unavailable
        return summary
    }

    static func milliseconds(_ microseconds: Int64) -> Double {
        round(Double(microseconds) / 1000)
    }

    static func round(_ value: Double) -> Double {
        (value * 1000).rounded() / 1000
    }

    static func ratio(_ value: Double) -> Double {
        round(min(1, max(0, value)))
    }

    static func delta(_ value: UInt64?, _ baseline: UInt64?) -> Double? {
        guard let value, let baseline, value >= baseline else { return nil }
        return round(Double(value - baseline) / 1e6)
    }
}
