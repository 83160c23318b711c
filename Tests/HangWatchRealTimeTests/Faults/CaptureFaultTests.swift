import Foundation
@testable import HangWatch
import HangWatchTestSupport
import Testing

/// Faults at capture time, against the capture mechanism directly: whatever the target thread is
/// doing when the signal lands, the capture answers or times out, the thread carries on, and
/// nothing faults. (docs/reliability.md, cases 6, 8 and 9; case 2 runs in a child process,
/// ProcessFaultTests, where a deadlock fails the test instead of hanging it.)
@Suite(.serialized) struct CaptureFaultTests {
    let signal = CaptureSignal.defaultSignal
    let library: FaultLibrary

    init() throws {
        library = try FaultLibrary.shared.get()
        // The fault libraries are loaded now: published with the rest, their frames can be unwound.
        try installCapture(signal: signal)
    }

    func capture(_ thread: ForeignCodeThread, maxFrames: Int = 128, timeout: Int64 = 200_000_000)
        -> Result<UnsafeCaptureBridge.SignalCapture, UnsafeCaptureBridge.SignalCaptureError>
    {
        UnsafeCaptureBridge.captureBySignal(
            tid: thread.attachment.tid, guard: nil, stackLow: thread.attachment.stackLow, stackHigh: thread.attachment.stackHigh,
            signal: signal, maxFrames: maxFrames, timeoutNanoseconds: timeout)
    }

    /// Case 8: a thread a few kilobytes from the end of its stack. The handler runs on the
    /// alternate stack, so the capture neither overflows the thread's stack nor fails.
    /// Case 9 (depth cap): thousands of frames deep, the stack is cut at the cap and says so.
    @Test func aThreadAtTheEndOfItsStackIsCapturedOnTheAlternateStack() throws {
        let nearOverflow = library.nearOverflow
        let thread = ForeignCodeThread(signal: signal, stackSize: 256 << 10) { attachment, stop, progress in
            _ = nearOverflow(attachment.stackLow + 3072, stop, progress)
        }
        defer { thread.stop() }
        #expect(thread.attachment.alternateStackError == nil)
        #expect(thread.attachment.stackHigh - thread.attachment.stackLow <= 1 << 20, "the small stack was not applied")
        // It spins only once it reached the end of its stack.
        try #require(thread.makesProgress(within: 10))
        for _ in 0..<50 {
            let result = try capture(thread, maxFrames: 128).get()
            #expect(result.frames.count == 128)
            #expect(result.flags.contains(.truncated))
            #expect(!result.flags.contains(.endOfStack))
        }
        #expect(thread.makesProgress())
    }

    enum BadFramePointer: Int, CaseIterable, Sendable {
        case unmapped = 0, nonCanonical = 1, cycle = 2
    }

    /// Case 9: code without unwind information and a frame pointer that points nowhere, or at
    /// itself. The walk stops with a short stack and says why; it never faults and never runs to
    /// the frame cap.
    @Test(arguments: BadFramePointer.allCases)
    func aCorruptFramePointerTruncatesTheStackWithoutAFault(_ kind: BadFramePointer) throws {
        let bad = library.badFramePointer
        let thread = ForeignCodeThread(signal: signal) { _, stop, progress in bad(kind.rawValue, stop, progress) }
        defer { thread.stop() }
        try #require(thread.makesProgress())
        let inFunction = unsafeBitCast(bad, to: UInt.self)
        var caughtInside = 0
        for _ in 0..<100 {
            let result = try capture(thread).get()
            #expect(result.frames.count >= 1)
            #expect(result.frames.count < 32, "\(kind): \(result.frames.count) frames from a corrupt chain")
            if let top = result.frames.first, top >= inFunction, top < inFunction + 256 {
                caughtInside += 1
                #expect(
                    !result.flags.contains(.endOfStack)
                        || !result.flags.isDisjoint(with: [.error, .noProgress, .readsRejected]),
                    "\(kind): a corrupt chain passed for a complete stack: \(result.flags)")
            }
        }
        #expect(caughtInside >= 50, "\(kind): only \(caughtInside) captures caught the thread in the function")
        #expect(thread.makesProgress())
    }

    /// Case 6: a library that installs its handler on the capture signal after HangWatch and
    /// passes on what is not its own. Captures keep working and its own signals reach it.
    @Test func aHandlerInstalledAfterHangWatchThatChainsKeepsBothWorking() throws {
        let other = CaptureSignal.realtimeRange.lowerBound + 10
        try UnsafeCaptureBridge.install(signal: other)
        #expect(library.installAfter(other, 1) == 0)
        defer { try? UnsafeCaptureBridge.install(signal: other) }
        let thread = ForeignCodeThread(signal: other) { _, stop, progress in library.dlIterateStorm(stop, progress) }
        defer { thread.stop() }
        for _ in 0..<20 {
            let result = UnsafeCaptureBridge.captureBySignal(
                tid: thread.attachment.tid, guard: nil, stackLow: thread.attachment.stackLow, stackHigh: thread.attachment.stackHigh,
                signal: other, maxFrames: 128, timeoutNanoseconds: 200_000_000)
            #expect(try result.get().frames.count >= 3)
        }
        #expect(library.lateHandlerGetsItsOwnSignal(other))
    }
}
