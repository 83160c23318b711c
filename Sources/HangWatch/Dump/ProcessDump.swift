import Foundation
@_spi(Internal) import HangWatchReport

/// The threads of this process now, as `hangwatch dump PID` shows them (like jstack): each with its
/// scheduler state, system call, time in that state, stack, and what it waits for and who holds it;
/// and every wait cycle (a deadlock). Taken on the watchdog's thread when a dump request arrives;
/// no thread is signalled (a blocked one is walked from `/proc`, as a hung one is; one on a CPU is
/// shown with its state only).
///
/// Written as a report whose `source` is `dump` (docs/report-format.md, "Thread dumps"): `threads`
/// holds every thread, so every tool that reads reports reads it, and it is symbolicated alike.
struct ProcessDump {
    struct ThreadLook {
        var tid: Int32
        var name: String?
        var sample: StackSample
        var wait: WaitObservation?
        /// How long it has been off its CPU (asleep or waiting), from `/proc/<tid>/sched`.
        var offCPUMicroseconds: UInt64?
    }

    var threads: [ThreadLook]
    var microseconds: UInt64

    /// Looks at every thread of this process.
    static func take(
        inspection: ThreadInspection, maxFrames: Int, timeoutNanoseconds: Int64, images: ImageRegistry, clock: any MonotonicClock
    ) -> ProcessDump {
        let inspector = LinuxWaitInspector(
            inspection: inspection, images: images, maxFrames: maxFrames, timeoutNanoseconds: timeoutNanoseconds, scansWhole: true)
        var mappings: [StackMapping]?
        let ownTID = UnsafeCaptureBridge.currentThreadID()
        let schedClock = SchedClock()
        let looks = ProcessThreadList.current().compactMap { tid -> ThreadLook? in
            let task = ProcTask(tid: tid)
            guard let start = task.stat()?.startTimeTicks else { return nil }
            var thread = MonitoredThread(tid: tid, startTimeTicks: start, stackLow: 0, stackHigh: 0, name: task.name(), isMain: tid == getpid())
            StackMapping.boundBlockedThread(&thread, mappings: &mappings)
            let sampler = inspection.sampler(signal: 0, maxFrames: maxFrames, timeoutNanoseconds: timeoutNanoseconds, clock: clock)
            var sample = tid == ownTID
                ? StackSample(microseconds: clock.microseconds(), frames: [], method: nil, truncated: false, state: "R", failure: .takingTheDump)
                : sampler.sample(thread, previous: nil, signalAllowed: false)
            if sample.failure == .debuggerAttached { sample.failure = .threadNotAttached }
            let wait = sample.failure == nil && sample.blockedKey != nil ? inspector.inspect(tid: tid, sample: sample) : nil
            let offCPU = sample.state == "R" ? nil : schedClock.offCPU(tid: tid)
            return ThreadLook(tid: tid, name: thread.name, sample: sample, wait: wait, offCPUMicroseconds: offCPU)
        }
        return ProcessDump(threads: looks, microseconds: clock.microseconds())
    }
}
