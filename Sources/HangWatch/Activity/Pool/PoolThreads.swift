@_spi(Internal) import HangWatchReport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One pool thread as the pool watch captured it.
struct PoolThreadSample: Sendable, Equatable {
    var tid: Int32
    var name: String?
    var sample: StackSample
    /// It had been attached by a probe job (a signal capture was possible).
    var attached: Bool
    /// What it waited on and who held it, when it was blocked on an object.
    var wait: WaitObservation? = nil
}

/// Finds the threads of the cooperative pool and captures each one's stack.
protocol PoolThreadCapturing: Sendable {
    /// Every pool thread whose id is not in `skipping`, captured once.
    func capture(skipping: Set<Int32>, signalAllowed: Bool) -> [PoolThreadSample]
    /// Whether any worker of any of the pools (`CooperativePool`) exists: false in a process that
    /// never ran a task or a global-queue job.
    func anyWorkerExists() -> Bool
}

/// The probed pool on Linux: libdispatch names each worker of a root queue after the last 15 bytes
/// of the queue's label, so the default-QoS pool (where `.medium` tasks run) is every thread named
/// `oot.default-qos` (`com.apple.root.default-qos`; `CooperativePool`). Overcommit workers
/// (`-qos.overcommit`: the main queue, serial queues, the manager) are not the pool. A starved
/// pool's report holds these threads only: the other priorities' pools are not probed.
///
/// A thread that a probe job attached is sampled like a monitored loop (signal when on a CPU, the
/// `/proc` walk when blocked). Any other pool thread is walked from `/proc` when it is blocked in a
/// system call, with the bounds of the stack mapping that holds its stack pointer; on a CPU it is
/// recorded with its state and `thread not attached` (its signal mask, inherited from libdispatch,
/// blocks the capture signal).
struct LinuxPoolThreads: PoolThreadCapturing {
    static let poolThreadNames: Set<String> = [CooperativePool.default.rawValue]

    var inspection: ThreadInspection
    var signal: Int32
    var maxFrames: Int
    var timeoutNanoseconds: Int64
    var attachments: UnsafePoolThreadAttachments = .shared

    /// The pool's threads now: (tid, name).
    static func list() -> [(tid: Int32, name: String)] {
        ProcessThreadList.current().compactMap { tid in
            guard let name = ProcTask(tid: tid).name(), poolThreadNames.contains(name) else { return nil }
            return (tid, name)
        }
    }

    func anyWorkerExists() -> Bool {
        ProcessThreadList.current().contains { CooperativePool(threadName: ProcTask(tid: $0).name()) != nil }
    }

    func capture(skipping: Set<Int32>, signalAllowed: Bool) -> [PoolThreadSample] {
        let threads = Self.list().filter { !skipping.contains($0.tid) }
        guard !threads.isEmpty else { return [] }
        var stackMappings: [StackMapping]?
        return threads.map { tid, name in
            let task = ProcTask(tid: tid)
            let sampler = inspection.sampler(signal: signal, maxFrames: maxFrames, timeoutNanoseconds: timeoutNanoseconds)
            let startTime = task.stat()?.startTimeTicks ?? 0
            if let attached = attachments.thread(tid: tid, startTimeTicks: startTime) {
                return PoolThreadSample(
                    tid: tid, name: name, sample: sampler.sample(attached.thread, previous: nil, signalAllowed: signalAllowed), attached: true)
            }
            var thread = MonitoredThread(tid: tid, startTimeTicks: startTime, stackLow: 0, stackHigh: 0, name: name, isMain: false)
            StackMapping.boundBlockedThread(&thread, mappings: &stackMappings)
            // Its mask blocks the capture signal and it has no alternate stack: prepared for the
            // capture first when it is on a CPU (`ThreadPreparer`).
            var sample = sampler.sample(thread, previous: nil, signalAllowed: signalAllowed)
            if sample.failure == .debuggerAttached || (sample.failure == nil && sample.frames.isEmpty) {
                sample.failure = .threadNotAttached
            }
            return PoolThreadSample(tid: tid, name: name, sample: sample, attached: false)
        }
    }
}
