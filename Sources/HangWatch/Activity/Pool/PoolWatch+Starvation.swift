import Foundation
import HangWatchReport
import Logging

/// A probe that did not start by its deadline: the pool starved (a `concurrency-pool` report of
/// every pool thread, followed until the probe starts), or, every pool thread idle, only late.
extension PoolWatch {
    /// A probe not started by its deadline: every pool thread is captured. If one holds a job, the
    /// pool is starved (`starved`); if none does, the delay is the machine's (`awaitingProbe`).
    func record(_ probe: Probe) -> WatchdogWait {
        let detected = environment.now()
        let process = environment.processSnapshot()
        let captured = Array(threads.capture(skipping: [], signalAllowed: !process.debuggerAttached).prefix(settings.maxThreads))
        if let images, Self.everyThreadIdle(captured, images: images.current) {
            // The probe is late, but no pool thread holds a job: nothing starves the pool. The
            // delay is the machine's (the worker waited for a CPU to wake on): it goes into the
            // start-delay histogram, and no report blames the pool.
            logger.debug("pool probe late with every pool thread idle: not a starvation", metadata: ["hangwatch.threads": "\(captured.count)"])
            return awaitingProbe(probe, wakeAt: nil, now: detected)
        }
        histogram.addStarvation()
        statistics?.hangsDetected.add(1, ordering: .relaxed)
        let id = naming.nextID(start: environment.date(ofMicroseconds: probe.enqueued), serviceName: settings.serviceName)
        var recording = PoolRecording(
            id: id, startMicroseconds: probe.enqueued, detectedMicroseconds: detected, thresholdMicroseconds: probe.threshold,
            sampleIntervalMicroseconds: settings.sampleIntervalMicroseconds, process: process)
        recording.threads = captured.map(withWait)
        // Every task read once, here at detection, after the threads: the tasks that could not
        // start are still waiting now, while at the end the pool has run them. On the watchdog's
        // thread, bounded as a task dump is (`UnsafeTaskCensusTaker`); the cost is the report's
        // `queuedTasks.tookMs`.
        if let tasks {
            let started = environment.now()
            let census = tasks()
            recording.queuedTasks = QueuedTaskCensus(queue: .pool, census: census, tookMicroseconds: environment.now() &- started)
        }
        logger.debug("cooperative pool starved", metadata: ["hangwatch.id": "\(id)", "hangwatch.threads": "\(recording.threads.count)"])
        sink.poolStarved(recording)
        tracker.coverUnheld()
        return starved(Starvation(recording: recording, probe: probe), wakeAt: nil, now: detected)
    }

    /// A starvation in progress: the pool's threads looked at each sample interval (threads that
    /// appear are captured too) until the probe starts, which ends it exactly. `wakeAt` nil: the
    /// first step, before any wait.
    func starved(_ starvation: Starvation, wakeAt: UInt64?, now: UInt64) -> WatchdogWait {
        if let wakeAt, now < wakeAt { return .at(wakeAt) }
        var recording = starvation.recording
        let probe = starvation.probe
        if wakeAt != nil {
            // Jobs seen while the pool is starved are in this report, not in reports of their own.
            lookAtJobs(thresholdMicroseconds: probe.threshold)
            tracker.coverUnheld()
            if probe.slot.startedMicroseconds == nil, recording.threads.count < settings.maxThreads {
                let more = threads.capture(
                    skipping: Set(recording.threads.map(\.tid)), signalAllowed: !recording.process.debuggerAttached)
                if !more.isEmpty {
                    recording.threads += more.prefix(settings.maxThreads - recording.threads.count).map(withWait)
                    sink.poolProgressed(recording)
                }
            }
        }
        guard let started = probe.slot.startedMicroseconds else {
            let next = environment.now() + settings.sampleIntervalMicroseconds
            phase = .starved(Starvation(recording: recording, probe: probe), wakeAt: next)
            return .at(next)
        }
        recording.endMicroseconds = max(started, probe.enqueued)
        startedProbeEnqueued = probe.enqueued
        histogram.add(delayNanoseconds: (max(started, probe.enqueued) - probe.enqueued) * 1000)
        finish(recording, outcome: .recovered)
        return sendProbe()
    }

    func finish(_ recording: PoolRecording, outcome: HangReport.Outcome) {
        images?.refreshIfNeeded(for: recording.threads.flatMap(\.sample.frames))
        sink.poolRecovered(recording, outcome: outcome)
        logger.debug("cooperative pool recovered", metadata: ["hangwatch.id": "\(recording.id)", "hangwatch.outcome": "\(outcome.rawValue)"])
    }

    /// Whether every pool thread captured is a worker waiting for work (none holds a job).
    static func everyThreadIdle(_ captured: [PoolThreadSample], images: ImageMap) -> Bool {
        !captured.isEmpty && captured.allSatisfy { thread in
            ReportBuilder.isIdleWorker(
                state: thread.sample.state, truncated: thread.sample.truncated,
                imagePaths: thread.sample.frames.map { address in images.imageIndex(containing: address).map { images.images[$0].path } })
        }
    }

    /// A late probe that starved nothing: looks at jobs each sample interval (as between probes)
    /// until it starts, and counts its delay. `wakeAt` nil: the first step, before any wait.
    func awaitingProbe(_ probe: Probe, wakeAt: UInt64?, now: UInt64) -> WatchdogWait {
        if let wakeAt {
            guard now >= wakeAt else { return .at(wakeAt) }
            lookAtJobs(thresholdMicroseconds: probe.threshold)
        }
        guard let started = probe.slot.startedMicroseconds else {
            let next = environment.now() + settings.sampleIntervalMicroseconds
            phase = .awaitingProbe(probe, wakeAt: next)
            return .at(next)
        }
        startedProbeEnqueued = probe.enqueued
        histogram.add(delayNanoseconds: (max(started, probe.enqueued) - probe.enqueued) * 1000)
        return sendProbe()
    }

    /// A starved pool's thread with what it waits on, when it is blocked on an object.
    func withWait(_ thread: PoolThreadSample) -> PoolThreadSample {
        var thread = thread
        if let waits, thread.sample.failure == nil, thread.sample.blockedKey != nil {
            thread.wait = waits.inspect(tid: thread.tid, sample: thread.sample)
        }
        return thread
    }
}
