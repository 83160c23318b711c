import Foundation
import HangWatchReport

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
    static func take(maxFrames: Int, timeoutNanoseconds: Int64, images: ImageRegistry, clock: any MonotonicClock) -> ProcessDump {
        let inspector = LinuxWaitInspector(images: images, maxFrames: maxFrames, timeoutNanoseconds: timeoutNanoseconds)
        var mappings: [StackMapping]?
        let ownTID = UnsafeCaptureBridge.currentThreadID()
        let schedClock = SchedClock.measure()
        let looks = ProcessThreadList.current().compactMap { tid -> ThreadLook? in
            let task = ProcTask(tid: tid)
            guard let start = task.stat()?.startTimeTicks else { return nil }
            var thread = MonitoredThread(tid: tid, startTimeTicks: start, stackLow: 0, stackHigh: 0, name: task.name(), isMain: tid == getpid())
            StackMapping.boundBlockedThread(&thread, mappings: &mappings)
            let sampler = LinuxStackSampler(signal: 0, maxFrames: maxFrames, timeoutNanoseconds: timeoutNanoseconds, clock: clock)
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

/// The scheduler's clock (`se.exec_start` in `/proc/<tid>/sched`: when a thread last began to
/// run, or, asleep, when it stopped) against `CLOCK_MONOTONIC`: how long a sleeping thread has been
/// off its CPU. Each CPU's scheduler clock runs apart (it leaves out time spent in interrupts), so
/// the offset is measured on every CPU this thread may run on (it moves there, yields, reads its
/// own `exec_start`), and a thread's time is read against the CPU it last ran on. Nil where the
/// kernel shows no `sched` file.
struct SchedClock {
    /// `CLOCK_MONOTONIC` minus the scheduler's clock, nanoseconds, by CPU.
    private(set) var offsets: [Int32: Int64] = [:]

    /// Measures every CPU's offset (then puts this thread back where it may run).
    static func measure() -> SchedClock {
        var clock = SchedClock()
        let tid = UnsafeCaptureBridge.currentThreadID()
        guard let allowed = UnsafeCaptureBridge.Affinity.current() else { return clock }
        defer { _ = UnsafeCaptureBridge.Affinity.set(allowed) }
        for cpu in allowed.prefix(256) {
            guard UnsafeCaptureBridge.Affinity.set([cpu]) else { continue }
            sched_yield()
            let monotonic = Int64(UnsafeCaptureBridge.monotonicNanoseconds())
            guard let start = execStart(of: tid) else { return clock }
            clock.offsets[cpu] = monotonic - Int64(start)
        }
        return clock
    }

    /// How long thread `tid`, asleep, has been off its CPU, microseconds (nil: unknown).
    func offCPU(tid: Int32) -> UInt64? {
        guard let cpu = Self.lastCPU(of: tid), let offset = offsets[cpu], let start = execStart(of: tid) else { return nil }
        let since = Int64(UnsafeCaptureBridge.monotonicNanoseconds()) - (Int64(start) + offset)
        return since > 0 ? UInt64(since / 1000) : 0
    }

    private func execStart(of tid: Int32) -> UInt64? { Self.execStart(of: tid) }

    /// `se.exec_start` (milliseconds with a fraction) in nanoseconds.
    static func execStart(of tid: Int32) -> UInt64? {
        guard let text = SmallFile.text("/proc/self/task/\(tid)/sched") else { return nil }
        return parseExecStart(text)
    }

    static func parseExecStart(_ text: String) -> UInt64? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("se.exec_start") }),
            let value = line.split(separator: ":").last.map({ $0.trimmingCharacters(in: .whitespaces) }), let milliseconds = Double(value)
        else { return nil }
        return UInt64(milliseconds * 1_000_000)
    }

    /// The CPU the thread last ran on (`stat` field 39).
    static func lastCPU(of tid: Int32) -> Int32? {
        guard let text = SmallFile.text("/proc/self/task/\(tid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 36 ? Int32(fields[36]) : nil
    }
}
