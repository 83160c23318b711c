@_spi(Internal) import HangWatchReport
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The watchdog's capture paths, callable on any attached thread, for this package's own tools
/// (the stack corpus, the benchmarks). Not public: services use `HangMonitor`.
package enum CaptureProbe {
    /// A thread prepared for captures (alternate signal stack, capture signal unblocked).
    package struct Target: Sendable {
        let thread: MonitoredThread
        package var tid: Int32 { thread.tid }
    }

    /// One look at a thread, as the watchdog takes it.
    package struct Sample: Sendable {
        /// `signal`, `syscall` or `unchanged`; nil when no stack was taken.
        package var method: String?
        package var frames: [UInt]
        package var truncated: Bool
        /// Why the walk stopped early, when it did (report wording).
        package var truncation: String?
        /// How the frame pointer of a blocked thread was found, when it had to be (report wording).
        package var framePointer: String?
        /// The system call the thread was blocked in, by number.
        package var syscall: Int?
        package var failure: String?
        /// The capture signal cut a system call short (the thread's call returned EINTR).
        package var cutCallShort = false
    }

    /// Looks at one thread again and again as a watchdog does: one sampler, its proc files kept open.
    package final class Looker: @unchecked Sendable {
        private let sampler: LinuxStackSampler
        private let target: Target
        private var previous: StackSample?

        package init(_ target: Target, signal: Int32, signalGuard: SignalGuard = .stayedOnCPU) {
            self.target = target
            sampler = ProcessRuntime.process.threads.sampler(
                signal: signal, maxFrames: UnsafeCaptureBridge.maxFrames, timeoutNanoseconds: 200_000_000, signalGuard: signalGuard)
        }

        package func look() -> Sample {
            let sample = sampler.sample(target.thread, previous: previous, signalAllowed: true)
            previous = sample
            return CaptureProbe.sample(sample)
        }
    }

    /// The capture signal monitors use unless configured otherwise.
    package static var defaultSignal: Int32 { CaptureSignal.defaultSignal }

    package static func install(signal: Int32) throws {
        try UnsafeCaptureBridge.install(signal: signal)
        _ = UnsafeImageTable.publish(UnsafeImageMapReader.read())
    }

    /// Prepares the calling thread.
    package static func attachCurrentThread(signal: Int32) -> Target {
        let attachment = UnsafeCaptureBridge.attachCurrentThread(alternateStackSize: 64 << 10, signal: signal)
        let task = ProcTask(tid: attachment.tid)
        return Target(
            thread: MonitoredThread(
                tid: attachment.tid, startTimeTicks: task.stat()?.startTimeTicks ?? 0, stackLow: attachment.stackLow,
                stackHigh: attachment.stackHigh, name: task.name(), isMain: attachment.tid == getpid()))
    }

    /// Samples `target` the way the watchdog does: a signal if it runs, no signal if it is blocked
    /// in a system call.
    package static func sample(_ target: Target, signal: Int32) -> Sample {
        let sampler = ProcessRuntime.process.threads.sampler(
            signal: signal, maxFrames: UnsafeCaptureBridge.maxFrames, timeoutNanoseconds: 200_000_000)
        return sample(sampler.sample(target.thread, previous: nil, signalAllowed: true))
    }

    private static func sample(_ sample: StackSample) -> Sample {
        Sample(
            method: sample.method?.rawValue, frames: sample.frames, truncated: sample.truncated,
            truncation: sample.truncation?.rawValue, framePointer: sample.framePointer?.rawValue, syscall: sample.syscall,
            failure: sample.failure?.rawValue, cutCallShort: sample.cutCallShort)
    }

    /// A signal capture whatever the thread is doing, even blocked in a system call (which the
    /// signal may cut short: only for a scratch process). The thread unwinds itself from its exact
    /// registers: the ground truth a blocked-thread walk is compared with.
    package static func signalCapture(_ target: Target, signal: Int32) -> Sample? {
        let result = UnsafeCaptureBridge.captureBySignal(
            tid: target.tid, guard: nil, stackLow: target.thread.stackLow, stackHigh: target.thread.stackHigh,
            signal: signal, maxFrames: UnsafeCaptureBridge.maxFrames, timeoutNanoseconds: 500_000_000)
        guard case .success(let capture) = result else { return nil }
        return Sample(
            method: "signal", frames: capture.frames, truncated: capture.flags.isTruncated,
            truncation: capture.flags.truncation?.rawValue, framePointer: nil, syscall: nil, failure: nil,
            cutCallShort: capture.cutCallShort)
    }

    /// Turns the prologue method of the blocked-thread walk off (to measure the frame-record method
    /// alone) or back on.
    package static func useProloguesForBlockedThreads(_ enabled: Bool) {
        UnsafeCaptureBridge.useProloguesForBlockedThreads(enabled)
    }

    /// The system call `target` is blocked in right now, if any.
    package static func blockedSyscall(_ target: Target) -> Int? {
        if case .inSyscall(let number, _, _, _)? = ProcTask(tid: target.tid).syscall() { return number }
        return nil
    }
}

extension CaptureProbe {
    /// Where `address` lies: the image's path and build-id, and the address in the ELF file.
    package static func locate(_ address: UInt) -> (path: String, buildID: String?, offset: UInt)? {
        let map = images.withLock { map in
            if map == nil || !map!.covers([address]) { map = UnsafeImageMapReader.read() }
            return map!
        }
        guard let index = map.imageIndex(containing: address) else { return nil }
        let image = map.images[index]
        return (image.path, image.buildID, address &- image.bias)
    }

    private static let images = Mutex<ImageMap?>(nil)
}

extension CaptureProbe {
    /// One blocked-thread walk of `target` (blocked in a system call), timed: its frame count, its
    /// duration in nanoseconds, and how the frame pointer was found. Nil when the thread is not
    /// blocked in a system call.
    package static func timeBlockedWalk(_ target: Target) -> (frames: Int, nanoseconds: Int64, framePointer: String?)? {
        guard case .inSyscall(_, _, let stackPointer, let programCounter)? = ProcTask(tid: target.tid).syscall() else { return nil }
        let clock = SystemMonotonicClock()
        let start = clock.nanoseconds()
        let walk = UnsafeCaptureBridge.captureBlocked(
            stackPointer: stackPointer, programCounter: programCounter, stackLow: target.thread.stackLow,
            stackHigh: target.thread.stackHigh, maxFrames: UnsafeCaptureBridge.maxFrames)
        let elapsed = Int64(clock.nanoseconds() - start)
        return (walk.frames.count, elapsed, walk.flags.framePointer?.rawValue)
    }

    /// Looks at what thread `tid` (blocked on a lock) waits for, the way the watchdog does at each
    /// sample of a hang: its sample (the `/proc` walk), then the wait (a lock's holder read from the
    /// lock, its own stack walked and its wait in turn; an I/O wait's descriptors named and the other
    /// end found). Nil when the thread waits on nothing nameable.
    package static func timeWaitLook(tid: Int32, inspector: LinuxWaitInspector) -> WaitLookTiming? {
        let task = ProcTask(tid: tid)
        guard let start = task.stat()?.startTimeTicks else { return nil }
        var thread = MonitoredThread(tid: tid, startTimeTicks: start, stackLow: 0, stackHigh: 0, name: nil, isMain: false)
        var mappings: [StackMapping]?
        StackMapping.boundBlockedThread(&thread, mappings: &mappings)
        let clock = SystemMonotonicClock()
        let sampler = ProcessRuntime.process.threads.sampler(signal: 0, maxFrames: UnsafeCaptureBridge.maxFrames, timeoutNanoseconds: 0, clock: clock)
        let began = clock.nanoseconds()
        let sample = sampler.sample(thread, previous: nil, signalAllowed: false)
        let sampled = clock.nanoseconds()
        guard let observation = inspector.inspect(tid: tid, sample: sample) else { return nil }
        let looked = clock.nanoseconds()
        var process: Int32?
        if case .process(let pid) = observation.owner { process = pid }
        return WaitLookTiming(
            sampleNanoseconds: Int64(sampled - began), waitNanoseconds: Int64(looked - sampled), holderThread: observation.owner.thread,
            holderProcess: process, holderFrames: observation.holder?.sample?.frames.count ?? 0, endpoints: observation.endpoints.count)
    }

    /// One timed look at a wait (`timeWaitLook`).
    package struct WaitLookTiming {
        /// The waiter's sample (the `/proc` walk), then the wait, nanoseconds.
        package var sampleNanoseconds: Int64
        package var waitNanoseconds: Int64
        /// Who holds it: a thread of this process, or another process.
        package var holderThread: Int32?
        package var holderProcess: Int32?
        package var holderFrames: Int
        /// An I/O wait's descriptors named.
        package var endpoints: Int
    }

    /// An inspector like the monitor's (the images read now).
    package static func waitInspector() -> LinuxWaitInspector {
        LinuxWaitInspector(
            inspection: ProcessRuntime.process.threads, images: ProcessRuntime.process.images(logger: Logger(label: "bench")),
            maxFrames: UnsafeCaptureBridge.maxFrames, timeoutNanoseconds: 0)
    }
}
