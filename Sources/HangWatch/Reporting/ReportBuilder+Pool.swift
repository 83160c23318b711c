import Foundation
import HangWatchReport

extension ReportBuilder {
    /// A `concurrency-pool` report: every pool thread's stack and verdict in `threads`, the heaviest
    /// stack among the threads that were held (not idle), each thread counting for the whole wait,
    /// and `durationMs` the probe's exact wait (enqueue to start).
    func build(pool recording: PoolRecording, images: ImageMap, outcome: HangReport.Outcome) -> HangReport {
        // One sample per thread, in capture order: the frames, stacks and images come out exactly
        // as in any other report.
        let ordered = recording.threads.filter { $0.attached || !Self.isStartedByPoolCode($0.sample, images: images) }
            .sorted { $0.sample.microseconds < $1.sample.microseconds }
        var hang = HangRecording(
            id: recording.id, startMicroseconds: recording.startMicroseconds, detectedMicroseconds: recording.detectedMicroseconds,
            activity: 0, mode: nil, thresholdMicroseconds: recording.thresholdMicroseconds,
            thread: nil, process: recording.process, baseline: nil, watchdogOversleepMicroseconds: 0, stopSuspected: false,
            maxSamples: max(1, recording.threads.count), sampleIntervalMicroseconds: recording.sampleIntervalMicroseconds)
        for thread in ordered {
            hang.add(thread.sample)
        }
        hang.endMicroseconds = recording.endMicroseconds
        var pooled = self
        pooled.source = .concurrencyPool
        var report = pooled.build(hang, images: images, outcome: outcome)

        var table = ReportStackTable(images: images, adopting: report)
        var snapshots: [HangReport.ThreadSnapshot] = []
        var held: [HeaviestPath.Sample] = []
        let end = recording.endMicroseconds ?? recording.lastKnownMicroseconds
        let wait = end - min(end, recording.startMicroseconds)
        for (offset, thread) in ordered.enumerated() {
            let sample = report.samples[offset]
            let verdict = Self.verdict(of: thread.sample, stack: sample.stack.flatMap(report.stack(at:)), in: report)
            var snapshot = HangReport.ThreadSnapshot(
                tid: thread.tid, name: thread.name, state: sample.state, syscall: sample.syscall, stack: sample.stack,
                verdict: verdict.rawValue, method: sample.method, error: sample.error, offsetMs: sample.offsetMs)
            snapshot.waitsFor = thread.wait.map { Self.waitsFor($0, table: &table) }
            snapshots.append(snapshot)
            if verdict != .idle, let index = sample.stack, let stack = report.stack(at: index) {
                held.append(HeaviestPath.Sample(frames: stack.frames, weight: max(wait, 1), stack: index, complete: !stack.truncated))
            }
        }
        report.threads = snapshots
        report.queuedTasks = recording.queuedTasks.map { queuedTasks($0, table: &table) }
        (report.frames, report.stacks) = (table.frames, table.stacks)
        if let first = ordered.first {
            report.thread = HangReport.ThreadInfo(tid: first.tid, name: first.name, isMain: false)
        }
        let frames = report.frames
        if let path = HeaviestPath.find(held, identity: { Self.pathIdentity(frames[$0]) }) {
            let stack = report.stacks[path.stack]
            report.heaviestStack = HangReport.HeaviestStack(
                stack: path.stack, sampleCount: path.sampleCount, weightMs: Self.milliseconds(Int64(wait)),
                frames: report.frames(of: stack))
            report.signature = StackSignature.compute(
                frames: report.frames(of: stack), images: report.images, complete: !stack.truncated, computing: report.heaviestWait == nil)
        }
        // Exact: from the probe's enqueue to its start (or to the last look while it lasts).
        report.durationMs = Self.milliseconds(Int64(wait))
        report.endedAt = recording.endMicroseconds.map(wallClock)
        return report
    }

    /// Linux names a new thread after the one that created it: a thread started from a job on the
    /// pool (a `Thread`, a client library's worker) is named like the pool's workers until it
    /// renames itself. Its complete stack gives it away: no frame in libdispatch, whose
    /// `_dispatch_worker_thread` is the start of every worker. (A truncated stack proves nothing;
    /// such a thread is kept.)
    static func isStartedByPoolCode(_ sample: StackSample, images: ImageMap) -> Bool {
        guard !sample.truncated, !sample.frames.isEmpty else { return false }
        return !sample.frames.contains { address in
            guard let index = images.imageIndex(containing: address) else { return false }
            return StackSignature.baseName(images.images[index].path).hasPrefix("libdispatch.so")
        }
    }

    /// A pool thread's verdict: on a CPU, blocked (in a call of a job), or idle (waiting for work:
    /// a complete stack whose every frame is the C library's, the thread library's or libdispatch's).
    static func verdict(of sample: StackSample, stack: HangReport.Stack?, in report: HangReport) -> HangReport.ThreadVerdict {
        switch sample.state {
        case "R": return .computing
        case "S", "D":
            if let stack,
                isIdleWorker(state: sample.state, truncated: stack.truncated, imagePaths: report.frames(of: stack).map { $0.image(in: report.images)?.path })
            {
                return .idle
            }
            return .blocked
        default: return sample.state == nil ? .unknown : .blocked
        }
    }

    /// A pool worker waiting for work: asleep, with a complete stack whose every frame (given by
    /// the path of its image, nil where no image holds it) is the C library's, the thread
    /// library's or libdispatch's.
    static func isIdleWorker(state: Character?, truncated: Bool, imagePaths: [String?]) -> Bool {
        guard state == "S" || state == "D", !truncated, !imagePaths.isEmpty else { return false }
        return imagePaths.allSatisfy { path in
            guard let path else { return false }
            let file = StackSignature.baseName(path)
            return idleImagePrefixes.contains { file.hasPrefix($0) }
        }
    }

    /// Images an idle pool worker's stack is made of (`_dispatch_worker_thread` waiting on its semaphore).
    static let idleImagePrefixes = ["libc.so", "libc-", "libpthread", "libdispatch.so"]
}
