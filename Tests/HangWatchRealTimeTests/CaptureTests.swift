@_spi(Internal) import HangWatchReport
import Foundation
@testable import HangWatch
import HangWatchTestSupport
import Testing

/// The capture mechanism itself: the C handler, the request slot and the blocked-thread unwinder.
@Suite(.serialized) struct CaptureTests {
    let signal = CaptureSignal.defaultSignal

    init() throws {
        try installCapture(signal: signal)
    }

    func capture(_ target: TargetThread, timeout: Int64 = 200_000_000)
        -> Result<UnsafeCaptureBridge.SignalCapture, UnsafeCaptureBridge.SignalCaptureError>
    {
        UnsafeCaptureBridge.captureBySignal(
            tid: target.attachment.tid, guard: nil, stackLow: target.attachment.stackLow, stackHigh: target.attachment.stackHigh, signal: signal, maxFrames: 128,
            timeoutNanoseconds: timeout)
    }

    /// How many of the thread's own return addresses (from the entry function outwards) the
    /// captured stack contains; with `excluding`, only those the other thread does not share.
    func overlap(_ frames: [UInt], _ target: TargetThread, excluding other: TargetThread? = nil) -> Int {
        Set(frames).intersection(Set(target.groundTruth).subtracting(other?.groundTruth ?? [])).count
    }

    @Test func aSignalCaptureContainsTheThreadsOwnCallers() throws {
        let target = TargetThread(signal: signal)
        defer { target.stop() }
        let result = try capture(target).get()
        #expect(result.frames.count >= 5)
        #expect(overlap(result.frames, target) >= 3, "captured \(result.frames), truth \(target.groundTruth)")
        #expect(result.flags.contains(.endOfStack))
        #expect(!result.flags.contains(.readsRejected))
    }

    @Test func everyCaptureReachesTheOutermostFrameWhereverTheThreadWasInterrupted() throws {
        // Hundreds of captures land in prologues and epilogues too (after `pop rbp`, the unwind
        // rule reads the slot just below the stack pointer, in the red zone).
        let target = TargetThread(signal: signal)
        defer { target.stop() }
        var incomplete: [UInt] = []
        for _ in 0..<300 {
            let result = try capture(target).get()
            if !result.flags.contains(.endOfStack) || overlap(result.frames, target) < 3 {
                incomplete.append(result.frames.first ?? 0)
            }
        }
        #expect(incomplete.isEmpty, "\(incomplete.count) of 300 stacks incomplete, interrupted at \(incomplete.prefix(5))")
    }

    @Test func aLeafWithoutUnwindInformationDoesNotHideItsCaller() throws {
        // A leaf built without call-frame information (as small functions in some system libraries
        // are): a thread caught in it must still show the function that called it.
        let library = try TestLibrary.build(
            name: "hangwatch_leaf",
            code: "__attribute__((noinline)) unsigned long hangwatch_test_leaf(unsigned long x) { return x * 2654435761UL + 1; }",
            flags: ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-fomit-frame-pointer"])
        let handle = try #require(dlopen(library, RTLD_NOW))
        let leaf = unsafeBitCast(try #require(dlsym(handle, "hangwatch_test_leaf")), to: TestLeaf.self)
        #expect(UnsafeImageTable.publish(UnsafeImageMapReader.read()) == .published)
        let map = UnsafeImageMapReader.read()
        let ready = DispatchSemaphore(value: 0)
        let flags = TargetFlags()
        nonisolated(unsafe) var attachment: UnsafeCaptureBridge.Attachment?
        nonisolated(unsafe) var caller: UInt?
        let finished = DispatchSemaphore(value: 0)
        Thread {
            attachment = UnsafeCaptureBridge.attachCurrentThread(alternateStackSize: 64 << 10, signal: signal)
            spinThroughLeaf(leaf, flags: flags) { addresses in
                // The first of our own return addresses after Foundation's lies in spinThroughLeaf.
                // (Not simply the first of our own: a sanitizer's runtime is linked into the test
                // executable, and its `backtrace` interceptor comes before Foundation.)
                let own = addresses.map { map.images[map.imageIndex(containing: $0) ?? 0].isMainExecutable }
                caller = addresses.indices.first { $0 > 0 && own[$0] && !own[$0 - 1] }.map { addresses[$0] }
                ready.signal()
            }
            finished.signal()
        }.start()
        ready.wait()
        defer {
            flags.stop.store(true, ordering: .relaxed)
            finished.wait()
        }
        let callerFunction = try #require(caller.flatMap { map.functionStart(of: $0 - 1) })
        var missing = 0
        var inLeaf = 0
        for _ in 0..<300 {
            let result = try UnsafeCaptureBridge.captureBySignal(
                tid: attachment!.tid, guard: nil, stackLow: attachment!.stackLow, stackHigh: attachment!.stackHigh, signal: signal,
                maxFrames: 128, timeoutNanoseconds: 200_000_000
            ).get()
            if let first = result.frames.first, map.functionStart(of: first) == nil { inLeaf += 1 }
            let functions = Set(result.frames.enumerated().compactMap { map.functionStart(of: $0.offset == 0 ? $0.element : $0.element - 1) })
            if !functions.contains(callerFunction) { missing += 1 }
        }
        #expect(inLeaf > 0, "no capture landed in code without unwind information: the test tests nothing")
        #expect(missing == 0, "\(missing) of 300 stacks lack the caller (\(inLeaf) caught in a leaf without unwind information)")
    }

    @Test func theHandlerPausesTheThreadForMicroseconds() throws {
        let target = TargetThread(signal: signal)
        defer { target.stop() }
        var pauses: [Int64] = []
        for _ in 0..<30 {
            pauses.append(try capture(target).get().pauseNanoseconds)
        }
        pauses.sort()
        // A generous bound for a shared machine; the benchmark measures the real figure.
        #expect(pauses[pauses.count / 2] > 0)
        #expect(pauses[pauses.count / 2] < 2_000_000)
    }

    @Test func aLateAnswerNeverCompletesALaterRequest() throws {
        let blocked = TargetThread(signal: signal, blocking: true)
        let other = TargetThread(signal: signal)
        defer {
            blocked.stop()
            other.stop()
        }
        // The blocked thread cannot answer: the request is abandoned; its signal stays pending.
        #expect(throws: UnsafeCaptureBridge.SignalCaptureError.timeout) { try capture(blocked, timeout: 30_000_000).get() }
        // The next request, for another thread, gets that thread's stack.
        let first = try capture(other).get()
        #expect(overlap(first.frames, other, excluding: blocked) >= 1)
        #expect(overlap(first.frames, blocked, excluding: other) == 0)
        // The blocked thread unblocks; its stale signal is delivered and must write nothing.
        blocked.unblock()
        let second = try capture(other).get()
        #expect(overlap(second.frames, other, excluding: blocked) >= 1)
        #expect(overlap(second.frames, blocked, excluding: other) == 0)
        // And it answers new requests with its own stack.
        let own = try capture(blocked).get()
        #expect(overlap(own.frames, blocked, excluding: other) >= 1)
        #expect(overlap(own.frames, other, excluding: blocked) == 0)
    }

    @Test func aThreadThatIsGoneIsReportedAsGone() throws {
        let target = TargetThread(signal: signal)
        let tid = target.attachment.tid
        target.stop()
        // Gone from the kernel's view too, not only finished in Swift.
        #expect(Eventually.holds { !FileManager.default.fileExists(atPath: "/proc/self/task/\(tid)") })
        let result = UnsafeCaptureBridge.captureBySignal(
            tid: tid, guard: nil, stackLow: target.attachment.stackLow, stackHigh: target.attachment.stackHigh, signal: signal, maxFrames: 64, timeoutNanoseconds: 50_000_000)
        // Either the kernel says the thread is gone, or (tid reused) nobody answers: never a stack.
        switch result {
        case .success: Issue.record("a capture of an exited thread returned a stack")
        case .failure(let error): #expect(error == .threadGone || error == .timeout)
        }
    }

    @Test func aBlockedThreadIsUnwoundWithoutASignal() throws {
        let started = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var attachment: UnsafeCaptureBridge.Attachment?
        nonisolated(unsafe) var slept = 0.0
        let finished = DispatchSemaphore(value: 0)
        Thread {
            attachment = UnsafeCaptureBridge.attachCurrentThread(alternateStackSize: 64 << 10, signal: signal)
            started.signal()
            slept = hangInSleep(milliseconds: 600)
            finished.signal()
        }.start()
        started.wait()
        let task = ProcTask(tid: attachment!.tid)
        let inSleep = Eventually.value(task.syscall) {
            if case .inSyscall(let number, _, _, _)? = $0 { SyscallNames.name(number).hasSuffix("nanosleep") } else { false }
        }
        guard case .inSyscall(_, _, let sp, let pc)? = inSleep else {
            Issue.record("the thread is not in a system call")
            return
        }
        let walk = UnsafeCaptureBridge.captureBlocked(
            stackPointer: sp, programCounter: pc, stackLow: attachment!.stackLow, stackHigh: attachment!.stackHigh, maxFrames: 128)
        finished.wait()
        #expect(slept >= 599)
        #expect(walk.frames.count >= 5)
        #expect(walk.flags.contains(.endOfStack))
        let map = UnsafeImageMapReader.read()
        #expect(map.covers(walk.frames))
    }

    /// A blocked thread's stack is reused only while the thread has not run: one that woke, ran and
    /// entered the very same call again (same arguments, stack and program counter) is read anew.
    @Test func aBlockedStackIsReusedOnlyUntilTheThreadRuns() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let reader = fds[0]
        let started = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var attachment: UnsafeCaptureBridge.Attachment?
        let reads = Atomic<Int>(0)
        Thread {
            attachment = UnsafeCaptureBridge.attachCurrentThread(alternateStackSize: 64 << 10, signal: signal)
            started.signal()
            var byte: UInt8 = 0
            while read(reader, &byte, 1) == 1, byte != 0 { reads.add(1, ordering: .relaxed) }
        }.start()
        started.wait()
        let attached = try #require(attachment)
        let thread = MonitoredThread(
            tid: attached.tid, startTimeTicks: ProcTask(tid: attached.tid).stat()?.startTimeTicks ?? 0, stackLow: attached.stackLow,
            stackHigh: attached.stackHigh, name: nil, isMain: false)
        let sampler = ProcessRuntime.process.threads.sampler(signal: signal, maxFrames: 128, timeoutNanoseconds: 200_000_000)
        func sampleInRead(previous: StackSample?) -> StackSample {
            Eventually.value({ sampler.sample(thread, previous: previous, signalAllowed: true) }) { $0.syscall.map(SyscallNames.name) == "read" }
        }
        let first = sampleInRead(previous: nil)
        #expect(first.syscall.map(SyscallNames.name) == "read")
        #expect(first.method == .syscall)
        #expect(!first.frames.isEmpty)
        let second = sampler.sample(thread, previous: first, signalAllowed: true)
        #expect(second.method == .unchanged)
        #expect(second.frames == first.frames)

        var one: UInt8 = 1
        #expect(write(fds[1], &one, 1) == 1)
        #expect(Eventually.value({ reads.load(ordering: .relaxed) }) { $0 == 1 } == 1)
        let third = sampleInRead(previous: second)
        #expect(third.blockedKey == first.blockedKey, "the same call, entered again")
        #expect(third.method == .syscall, "the thread ran since: its stack is read again")
        var zero: UInt8 = 0
        #expect(write(fds[1], &zero, 1) == 1)
    }

    @Test func aHandlerInstalledBeforeStillGetsItsSignals() throws {
        let other = CaptureSignal.realtimeRange.lowerBound + 9
        PreviousHandlerProbe.install(on: other)
        try UnsafeCaptureBridge.install(signal: other)
        #expect(UnsafeCaptureBridge.handlerIsCurrent(signal: other))
        let before = PreviousHandlerProbe.count.load(ordering: .relaxed)
        // Test runner threads come from libdispatch, which blocks signals on its workers.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, other)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        pthread_kill(pthread_self(), other)
        #expect(PreviousHandlerProbe.count.load(ordering: .relaxed) == before + 1)
        // ... and captures on that signal still work.
        let target = TargetThread(signal: other)
        defer { target.stop() }
        let result = UnsafeCaptureBridge.captureBySignal(
            tid: target.attachment.tid, guard: nil, stackLow: target.attachment.stackLow, stackHigh: target.attachment.stackHigh, signal: other, maxFrames: 128,
            timeoutNanoseconds: 200_000_000)
        #expect(try overlap(result.get().frames, target) >= 3)
        #expect(PreviousHandlerProbe.count.load(ordering: .relaxed) == before + 1)
    }
}

import Synchronization

typealias TestLeaf = @convention(c) (UInt) -> UInt

/// A handler some other library installed on a signal before HangWatch.
enum PreviousHandlerProbe {
    static let count = Atomic<Int>(0)

    static func install(on signal: Int32) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in PreviousHandlerProbe.count.add(1, ordering: .relaxed) }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(signal, &action, nil)
    }
}
