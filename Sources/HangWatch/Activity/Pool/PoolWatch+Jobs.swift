import Foundation
import HangWatchReport
import Logging

/// The pool watch's looks at every pool thread between probes: a job that holds a thread past the
/// threshold (`HeldJobTracker` decides) gets a `pool-job` report of that thread, sampled while it
/// lasts, with what it waits on.
extension PoolWatch {
    /// One round of looks; whether it found every pool thread idle and no job followed.
    @discardableResult
    func lookAtJobs(thresholdMicroseconds: UInt64) -> Bool {
        guard let looker else { return false }
        let looks = looker.look()
        let now = environment.now()
        if let attach {
            let unattached = looks.filter { !$0.isWorker }.map(\.thread)
            let due = attachRequests.due(unattached: unattached, at: now)
            // Each at its pool's priority: a job of one priority never runs on another's workers.
            enqueueOwn { for thread in due { attach(CooperativePool(threadName: thread.name) ?? .default) } }
        }
        let tracked = looks.map { thread, sample, isWorker in
            let activation = functionStart.flatMap { JobActivation(sample, functionStart: $0) }
            // A job's labels, read while it runs: a job found held only once it ended is reported
            // with the labels it had, not those of whatever its task runs next.
            return HeldJobTracker.Look(
                thread: thread, sample: sample, activation: activation, isWorker: isWorker,
                labels: activation == nil ? [] : LabelsInEffect.read(thread, taskID: activation?.taskID))
        }
        let events = tracker.observe(
            tracked, at: now, thresholdMicroseconds: thresholdMicroseconds, startedProbeEnqueuedMicroseconds: startedProbeEnqueued)
        for event in events {
            handle(event, outcome: .recovered, thresholdMicroseconds: thresholdMicroseconds)
        }
        let quiet = tracker.episodes.isEmpty && tracked.allSatisfy(Self.isIdle)
        quietSince = quiet ? (quietSince ?? now) : nil
        for missed in tracker.takePassedOver() {
            logger.debug(
                "pool job not reported",
                metadata: [
                    "hangwatch.tid": "\(missed.tid)", "hangwatch.reason": "\(missed.reason.rawValue)",
                    "hangwatch.startedAt": "\(environment.date(ofMicroseconds: missed.startMicroseconds).timeIntervalSince1970)",
                    "hangwatch.durationMs": "\(Double(missed.endMicroseconds - min(missed.endMicroseconds, missed.startMicroseconds)) / 1000)",
                    "hangwatch.sightings": "\(missed.sightings)", "hangwatch.endedBy": "\(missed.endedBy)",
                ])
        }
        return quiet
    }

    /// A held job is one job by what the tracker proved at every look: the same task (its id, never
    /// reused), the thread not parked in between; or, without the id, the same blocking call with
    /// no CPU time in between (`HeldJobTracker`).
    static func kind(of episode: HeldJobTracker.Episode) -> HangReport.Kind {
        let proof = episode.activation.taskID.map { "the same task (id \($0)) at every look, its thread not parked in between" }
            ?? "the same blocking call at every look, no CPU time in between"
        return HangReport.Kind(name: .oneJob, reason: proof)
    }

    func handle(_ event: HeldJobTracker.Event, outcome: HangReport.Outcome, thresholdMicroseconds: UInt64 = 0) {
        switch event {
        case .held(let episode):
            statistics?.hangsDetected.add(1, ordering: .relaxed)
            let first = episode.samples.first
            // A sample that saw the job saw it begun: its start is no later (a start estimated from
            // the thread's clocks, read after the sample's own time, may land microseconds after it).
            let start = min(episode.startMicroseconds, first?.microseconds ?? episode.startMicroseconds)
            var recording = HangRecording(
                id: naming.nextID(start: environment.date(ofMicroseconds: start), serviceName: settings.serviceName),
                startMicroseconds: start, detectedMicroseconds: episode.lastSeenMicroseconds, activity: 0, mode: nil,
                thresholdMicroseconds: thresholdMicroseconds, thread: episode.thread, process: environment.processSnapshot(),
                baseline: first.flatMap { sample in
                    sample.onCPUNanoseconds.map {
                        ProcTask.SchedStat(onCPUNanoseconds: $0, runQueueNanoseconds: sample.runQueueNanoseconds ?? 0)
                    }
                },
                watchdogOversleepMicroseconds: 0, stopSuspected: false, maxSamples: settings.maxSamples,
                sampleIntervalMicroseconds: lookInterval(thresholdMicroseconds))
            recording.source = .poolJob
            recording.kind = Self.kind(of: episode)
            for sample in episode.samples { recording.add(sample) }
            if let last = episode.samples.last { inspectWait(of: episode.thread.tid, last, into: &recording) }
            if !episode.labels.isEmpty { recording.labels = episode.labels }
            images?.refreshIfNeeded(for: recording.samples.flatMap(\.frames))
            heldJobs[episode.thread.tid] = recording
            logger.debug(
                "pool thread held by one job",
                metadata: [
                    "hangwatch.id": "\(recording.id)", "hangwatch.tid": "\(episode.thread.tid)",
                    "hangwatch.task": "\(episode.activation.taskID.map(String.init) ?? "unknown")",
                    "hangwatch.labelSets": "\(episode.labels.count)",
                ])
            sink.hangStarted(recording)
        case .sampled(let tid, let sample):
            guard var recording = heldJobs[tid] else { return }
            recording.add(sample)
            inspectWait(of: tid, sample, into: &recording)
            if recording.labels == nil, let thread = recording.thread {
                let sets = LabelsInEffect.read(thread, taskID: sample.taskID)
                if !sets.isEmpty { recording.labels = sets }
            }
            heldJobs[tid] = recording
            // The provisional report is rewritten now and then, not at every look.
            if recording.samples.count % 20 == 0 { sink.hangProgressed(recording) }
        case .ended(let tid, let end):
            guard var recording = heldJobs.removeValue(forKey: tid) else { return }
            recording.endMicroseconds = end
            images?.refreshIfNeeded(for: recording.samples.flatMap(\.frames))
            sink.hangEnded(recording, outcome: outcome)
        }
    }

    /// A held job's thread, blocked: what it waits on, with the sample.
    func inspectWait(of tid: Int32, _ sample: StackSample, into recording: inout HangRecording) {
        guard let waits, sample.failure == nil, sample.blockedKey != nil, let observation = waits.inspect(tid: tid, sample: sample) else { return }
        recording.add(wait: observation)
    }
}
