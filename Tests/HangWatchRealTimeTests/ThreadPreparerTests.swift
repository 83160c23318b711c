@_spi(Internal) import HangWatchReport
import Foundation
@testable import HangWatch
import HangWatchTestSupport
import Synchronization
import Testing

/// Threads that never ran the attach step, captured all the same (`ThreadPreparer`): asked, by a
/// signal their mask lets through, to take an alternate stack and let the capture signal through,
/// then captured; a mask of the service's own is kept, and a sleeping thread is never signalled.
/// The decisions are `ThreadPreparationTests`'; the queue's worker no ping ran on is in
/// `QueueSourceTests`, a computing lock holder in `WaitsForTests`.
@Suite(.serialized) struct ThreadPreparerTests {
    let signal = CaptureSignal.defaultSignal

    init() throws {
        try installCapture(signal: signal)
    }

    /// A plain thread (never attached) that spins in `spinInUnpreparedThread` with `mask` blocked,
    /// or sleeps in `sleepInUnpreparedThread`.
    final class Unprepared: @unchecked Sendable {
        let tid: Int32
        let startTimeTicks: UInt64
        private let stop = SpinStop()
        private let done = DispatchSemaphore(value: 0)
        let interruptions = Interruptions()
        /// Its own return addresses from inside the function it spins or sleeps in: what a stack
        /// taken of it must contain.
        let groundTruth: [UInt]

        init(blocking mask: sigset_t?, sleeps: Bool = false) {
            let ready = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var tid: Int32 = 0
            nonisolated(unsafe) var truth: [UInt] = []
            let stop = stop, done = done, interruptions = interruptions
            Thread {
                if var mask { pthread_sigmask(SIG_SETMASK, &mask, nil) }
                tid = UnsafeCaptureBridge.currentThreadID()
                let started = { (addresses: [UInt]) in
                    truth = addresses
                    ready.signal()
                }
                if sleeps {
                    sleepInUnpreparedThread(until: stop, interruptions: interruptions, started: started)
                } else {
                    _ = spinInUnpreparedThread(until: stop, started: started)
                }
                done.signal()
            }.start()
            ready.wait()
            self.tid = tid
            groundTruth = truth
            startTimeTicks = ProcTask(tid: tid).stat()?.startTimeTicks ?? 0
        }

        var thread: MonitoredThread {
            MonitoredThread(tid: tid, startTimeTicks: startTimeTicks, stackLow: 0, stackHigh: 0, name: nil, isMain: false)
        }

        var blocked: UInt64? { ProcTask(tid: tid).blockedSignals() }

        func finish() {
            stop.raise()
            done.wait()
        }
    }

    /// The mask libdispatch gives its workers (`_dispatch_sigmask`): all but the signals it leaves open.
    static var libdispatchWorkerMask: sigset_t {
        var set = sigset_t()
        sigfillset(&set)
        for signal in ThreadPreparation.openOnLibdispatchWorkers { sigdelset(&set, signal) }
        return set
    }

    func sampler() -> LinuxStackSampler {
        ProcessRuntime.process.threads.sampler(signal: signal, maxFrames: 128, timeoutNanoseconds: 200_000_000)
    }

    /// Samples `thread` until a sample has a stack or fails for a reason other than the thread
    /// going to sleep at the capture (its spin calls the clock: a look may meet it there).
    func capture(_ thread: MonitoredThread) -> StackSample {
        let sampler = sampler()
        var sample = sampler.sample(thread, previous: nil, signalAllowed: true)
        for _ in 0..<20 where sample.frames.isEmpty && (sample.failure == .sleptAtCapture || sample.failure == nil) {
            sample = sampler.sample(thread, previous: sample, signalAllowed: true)
        }
        return sample
    }

    /// How many of the thread's own return addresses a stack holds.
    func overlap(_ frames: [UInt], _ target: Unprepared) -> Int {
        Set(frames).intersection(target.groundTruth).count
    }

    @Test func aThreadWithLibdispatchsMaskIsPreparedBySIGPROFAndCaptured() throws {
        let target = Unprepared(blocking: Self.libdispatchWorkerMask)
        defer { target.finish() }
        let before = try #require(target.blocked)
        try #require(ThreadPreparation.isLibdispatchWorkerMask(before), "the control could not run: the mask is \(String(before, radix: 16))")
        let sample = capture(target.thread)
        #expect(sample.failure == nil && sample.method == .signal, "\(String(describing: sample.failure))")
        #expect(overlap(sample.frames, target) >= 3, "captured \(sample.frames), truth \(target.groundTruth)")
        // The capture signal now passes; nothing else of its mask changed.
        let after = try #require(target.blocked)
        #expect(after == before & ~(1 << UInt64(signal - 1)), "\(String(before, radix: 16)) -> \(String(after, radix: 16))")
        #expect(UnsafeCaptureBridge.handlerIsCurrent(signal: SIGPROF))
        // Prepared once: the next capture is a plain capture of a known thread.
        let prepared = try #require(ProcessRuntime.process.threads.preparer.prepared(target.thread))
        #expect(prepared.preparedForSignals && prepared.stackLow < prepared.stackHigh)
        #expect(capture(prepared).failure == nil)
    }

    @Test func aPlainThreadIsPreparedByTheCaptureSignalItself() throws {
        var nothing = sigset_t()
        sigemptyset(&nothing)
        // (A thread made on a test's thread, a libdispatch worker, inherits the worker's mask.)
        let target = Unprepared(blocking: nothing)
        defer { target.finish() }
        let sample = capture(target.thread)
        #expect(sample.failure == nil && sample.method == .signal, "\(String(describing: sample.failure))")
        #expect(overlap(sample.frames, target) >= 3, "captured \(sample.frames), truth \(target.groundTruth)")
        #expect(target.blocked == 0)
    }

    @Test func aMaskOfTheServicesOwnThatBlocksTheCaptureSignalIsKept() throws {
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, signal)
        let target = Unprepared(blocking: mask)
        defer { target.finish() }
        let before = target.blocked
        let sample = capture(target.thread)
        #expect(sample.failure == .signalBlocked && sample.frames.isEmpty, "\(String(describing: sample.failure))")
        #expect(target.blocked == before)
    }

    @Test func aSleepingThreadIsReadWithoutASignal() throws {
        let target = Unprepared(blocking: Self.libdispatchWorkerMask, sleeps: true)
        defer { target.finish() }
        #expect(Eventually.holds { if case .inSyscall? = ProcTask(tid: target.tid).syscall() { true } else { false } })
        let sampler = sampler()
        var sample = sampler.sample(target.thread, previous: nil, signalAllowed: true)
        for _ in 0..<20 { sample = sampler.sample(target.thread, previous: sample, signalAllowed: true) }
        #expect(sample.method == .syscall || sample.method == .unchanged, "\(String(describing: sample.failure))")
        #expect(overlap(sample.frames, target) >= 3, "captured \(sample.frames), truth \(target.groundTruth)")
        #expect(target.interruptions.count.load(ordering: .relaxed) == 0, "a sleep was cut short")
        #expect(ProcessRuntime.process.threads.preparer.prepared(target.thread) == nil, "prepared while it slept")
    }
}

@inline(never)
func spinInUnpreparedThread(until stop: SpinStop, started: ([UInt]) -> Void) -> UInt64 {
    started(Thread.callStackReturnAddresses.map { UInt(truncating: $0) })
    var state: UInt64 = 1
    while !stop.isRaised {
        for _ in 0..<100_000 { state = state &* 6_364_136_223_846_793_005 &+ 1 }
    }
    return state
}

@inline(never)
func sleepInUnpreparedThread(until stop: SpinStop, interruptions: Interruptions, started: ([UInt]) -> Void) {
    started(Thread.callStackReturnAddresses.map { UInt(truncating: $0) })
    while !stop.isRaised {
        var pause = timespec(tv_sec: 0, tv_nsec: 200_000_000)
        var left = timespec()
        while nanosleep(&pause, &left) != 0 {
            interruptions.count.add(1, ordering: .relaxed)
            pause = left
        }
    }
}

/// Sleeps a thread's `nanosleep` returned early from (EINTR).
final class Interruptions: Sendable {
    let count = Atomic<Int>(0)
}
