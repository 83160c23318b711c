import Foundation
@testable import HangWatch
import HangWatchTestSupport
import Synchronization

/// A thread that spins in a known function until told to stop, for capture tests. It records its
/// own return addresses first: the ground truth a captured stack must contain.
final class TargetThread: @unchecked Sendable {
    let attachment: UnsafeCaptureBridge.Attachment
    let groundTruth: [UInt]
    private let flags = TargetFlags()
    private let finished = DispatchSemaphore(value: 0)

    /// `blocking` blocks the capture signal on the thread until `unblock()`.
    init(signal: Int32, blocking: Bool = false) {
        let ready = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var attachment: UnsafeCaptureBridge.Attachment?
        nonisolated(unsafe) var truth: [UInt] = []
        let flags = flags
        let finished = finished
        Thread {
            attachment = UnsafeCaptureBridge.attachCurrentThread(alternateStackSize: 64 << 10, signal: signal)
            // Different entry functions make the two kinds of target tell apart in a stack.
            let entry = blocking ? blockingTargetEntry : plainTargetEntry
            entry(signal, flags) { addresses in
                truth = addresses
                ready.signal()
            }
            finished.signal()
        }.start()
        ready.wait()
        self.attachment = attachment!
        self.groundTruth = truth
    }

    /// Unblocks the capture signal on the thread, and returns once it has: a signal pending on the
    /// thread has then been delivered (before its `pthread_sigmask` returned).
    func unblock() {
        flags.unblock.store(true, ordering: .relaxed)
        Eventually.holds { flags.unblocked.load(ordering: .acquiring) }
    }

    func stop() {
        flags.stop.store(true, ordering: .relaxed)
        finished.wait()
    }
}

final class TargetFlags: Sendable {
    let stop = Atomic<Bool>(false)
    let unblock = Atomic<Bool>(false)
    let unblocked = Atomic<Bool>(false)
}

@inline(never)
func plainTargetEntry(signal: Int32, flags: TargetFlags, ready: ([UInt]) -> Void) {
    captureTargetEntry(signal: signal, blocking: false, flags: flags, ready: ready)
    _ = spinInTestHang(milliseconds: 0)
}

@inline(never)
func blockingTargetEntry(signal: Int32, flags: TargetFlags, ready: ([UInt]) -> Void) {
    captureTargetEntry(signal: signal, blocking: true, flags: flags, ready: ready)
    _ = spinInTestHang(milliseconds: 0)
}

@inline(never)
func captureTargetEntry(
    signal: Int32, blocking: Bool, flags: TargetFlags, ready: ([UInt]) -> Void
) {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, signal)
    if blocking { pthread_sigmask(SIG_BLOCK, &set, nil) }
    // The callers of this function, as the thread itself sees them.
    ready(Thread.callStackReturnAddresses.map { UInt(truncating: $0) })
    var blocked = blocking
    var value: UInt64 = 1
    while !flags.stop.load(ordering: .relaxed) {
        // Mostly calls to a tiny function: many interruptions land in its prologue and epilogue.
        for _ in 0..<10_000 { value = tinyCallee(value) }
        if blocked && flags.unblock.load(ordering: .relaxed) {
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            flags.unblocked.store(true, ordering: .releasing)
            blocked = false
        }
    }
    if blocked { pthread_sigmask(SIG_UNBLOCK, &set, nil) }
    blackHoleForTests(value)
}

@inline(never)
func tinyCallee(_ value: UInt64) -> UInt64 {
    value &* 6_364_136_223_846_793_005 &+ 1
}

@inline(never)
func blackHoleForTests(_ value: UInt64) {
    if value == 42 { print("") }
}

@inline(never)
func spinThroughLeaf(_ leaf: @convention(c) (UInt) -> UInt, flags: TargetFlags, ready: ([UInt]) -> Void) {
    ready(Thread.callStackReturnAddresses.map { UInt(truncating: $0) })
    var value: UInt = 1
    while !flags.stop.load(ordering: .relaxed) {
        for _ in 0..<1000 { value = leaf(value) }
    }
    blackHoleForTests(UInt64(value))
}
